package spi

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// The JSON of the SPI's values is written and read here, once: the service
// answers with it (package api puts an outcome's members and the usage
// member in its answers), the clients read it, and json.Marshal of an
// Outcome or a Usage writes the same bytes, so that a Go value of the wire
// vocabulary logged, stored or sent by a caller is the wire's own document.
// Strings are written as JSON.stringify writes them (a lone surrogate the
// engine wrote stays the same JavaScript string), and read with
// internal/jsontext's policy.

// outcomeMembers are the members of every kind of outcome together, the
// closed vocabulary of docs/spi.md, "Outcomes". Any other member of an
// answer is a report member (docs/spi.md, "How the wire evolves").
var outcomeMembers = []string{"ok", "value", "kind", "limit", "name", "message"}

// ErrValueNotJSON is AppendOutcome's error for an ok outcome whose value is
// not JSON text.
var ErrValueNotJSON = errors.New("an ok outcome whose value is not JSON text")

// AppendOutcome appends o as the outcome object of docs/spi.md, "Outcomes",
// and nothing else, the document DecodeOutcome reads: an ok outcome's value
// as its JSON text. A threw message may be empty (throw new Error(), throw
// "": the script's own outcome).
func AppendOutcome(dst []byte, o Outcome) ([]byte, error) {
	switch o.Kind {
	case KindLimit:
		dst = jsontext.AppendQuote(append(dst, `{"ok":false,"kind":"limit","limit":`...), string(o.Limit))
		return append(dst, '}'), nil
	case KindThrew:
		dst = append(dst, `{"ok":false,"kind":"threw"`...)
		if o.Name != nil {
			dst = jsontext.AppendQuote(append(dst, `,"name":`...), *o.Name)
		}
		dst = jsontext.AppendQuote(append(dst, `,"message":`...), o.Message)
		return append(dst, '}'), nil
	case KindInputTooLarge:
		return append(dst, `{"ok":false,"kind":"inputTooLarge"}`...), nil
	case KindInfrastructure:
		dst = jsontext.AppendQuote(append(dst, `{"ok":false,"kind":"infrastructure","message":`...), o.Message)
		return append(dst, '}'), nil
	}
	if jsontext.Validate(o.Value) != nil {
		return dst, ErrValueNotJSON
	}
	dst = append(append(dst, `{"ok":true,"value":`...), o.Value...)
	return append(dst, '}'), nil
}

// DecodeOutcome reads one outcome in the closed vocabulary of docs/spi.md,
// "Outcomes", with no other members. A threw message may be empty (the
// script threw ""); an infrastructure message may not (Outcome cannot tell
// an empty message from a missing one). The value is returned as the JSON
// text received.
func DecodeOutcome(body []byte) (Outcome, error) {
	obj, err := jsontext.ParseObject("", body)
	if err != nil {
		return Outcome{}, err
	}
	out := readOutcome(obj)
	if err := obj.Done(); err != nil {
		return Outcome{}, err
	}
	return out, nil
}

// MarshalJSON writes o as AppendOutcome does. json.Marshal then escapes
// <, >, & and U+2028/U+2029 in strings, as it does in every document (the
// same strings); an Encoder with SetEscapeHTML(false) writes the service's
// bytes exactly.
func (o Outcome) MarshalJSON() ([]byte, error) { return AppendOutcome(nil, o) }

// UnmarshalJSON reads o as DecodeOutcome does.
func (o *Outcome) UnmarshalJSON(data []byte) error {
	got, err := DecodeOutcome(data)
	if err != nil {
		return err
	}
	*o = got
	return nil
}

// ReadOutcome reads the outcome's members of obj, an answer that carries
// them beside report members (logs, usage, members of a later version),
// and refuses a member of another kind of outcome; obj's other members are
// left to the caller.
func ReadOutcome(obj *jsontext.Object) Outcome {
	out := readOutcome(obj)
	for _, k := range outcomeMembers {
		if obj.Unread(k) {
			obj.Fail(k, "not a member of this kind of outcome")
		}
	}
	return out
}

// readOutcome reads the outcome's members of obj.
func readOutcome(obj *jsontext.Object) Outcome {
	ok, _ := obj.Bool("ok", true)
	var out Outcome
	switch {
	case obj.Err() != nil:
	case ok:
		value, _ := obj.Take("value", true)
		out = OK(value)
	default:
		kind, _ := obj.Str("kind", true)
		switch OutcomeKind(kind) {
		case KindLimit:
			limit, present := obj.Str("limit", true)
			if present && obj.OneOf("limit", limit, string(LimitCPU), string(LimitMemory), string(LimitWallClock)) {
				out = LimitHit(LimitKind(limit))
			}
		case KindThrew:
			var name *string
			if n, present := obj.Str("name", false); present {
				name = &n
			}
			message, _ := obj.Str("message", true) // may be empty: `throw ""`
			out = Threw(name, message)
		case KindInputTooLarge:
			out = InputTooLarge()
		case KindInfrastructure:
			out = Infrastructure(obj.NonEmpty("message"))
		default:
			if obj.Err() == nil {
				obj.OneOf("kind", kind, string(KindLimit), string(KindThrew), string(KindInputTooLarge), string(KindInfrastructure))
			}
		}
	}
	return out
}

// The usage member of both of the service's evaluation answers
// (docs/spi.md, "Usage"):
//
//	"usage": {"phasesMs": {"fetch": …, "verify": …, "setup": …, "compile": …, "run": …, "serialise": …},
//	          "cpuMs": …, "cpuBudgetUsed": …, "cpuBudget": …,
//	          "peakMemoryBytes": …, "memoryLimitBytes": …}
//
// Times are milliseconds with microseconds as their fraction; counts and
// bytes are integers. Every member is always written, zero for a step the
// run did not reach or a figure its engine does not measure.

// AppendUsage writes u as the usage member's object.
func AppendUsage(dst []byte, u Usage) []byte {
	dst = append(dst, `{"phasesMs":{`...)
	for i, p := range u.Phases() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(jsontext.AppendQuote(dst, p.Name), ':')
		dst = appendMillis(dst, *p.D)
	}
	dst = appendMillis(append(dst, `},"cpuMs":`...), u.CPU)
	dst = strconv.AppendUint(append(dst, `,"cpuBudgetUsed":`...), u.CPUBudgetUsed, 10)
	dst = strconv.AppendUint(append(dst, `,"cpuBudget":`...), u.CPUBudget, 10)
	dst = strconv.AppendInt(append(dst, `,"peakMemoryBytes":`...), u.PeakMemoryBytes, 10)
	dst = strconv.AppendInt(append(dst, `,"memoryLimitBytes":`...), u.MemoryLimitBytes, 10)
	return append(dst, '}')
}

// appendMillis writes d in milliseconds, to the microsecond.
func appendMillis(dst []byte, d time.Duration) []byte {
	return strconv.AppendFloat(dst, float64(max(d, 0).Microseconds())/1000, 'f', -1, 64)
}

// ReadUsage reads the members of o, a usage object: the members AppendUsage
// writes, each checked and required but a phase Added since the first
// version, which an earlier service's answer lacks (zero), and any other member, in usage or in
// its phases, a figure of a later version, ignored (docs/spi.md, "How the
// wire evolves"). The caller reports o.Done().
func ReadUsage(o *jsontext.Object) Usage {
	var u Usage
	if p, ok := o.Child("phasesMs", true); ok {
		for _, phase := range u.Phases() {
			*phase.D = readMillis(p, phase.Name, !phase.Added)
		}
		p.Skip()
		o.Adopt(p.Done())
	}
	u.CPU = readMillis(o, "cpuMs", true)
	n, _ := o.Count("cpuBudgetUsed", true)
	u.CPUBudgetUsed = uint64(n)
	n, _ = o.Count("cpuBudget", true)
	u.CPUBudget = uint64(n)
	u.PeakMemoryBytes, _ = o.Count("peakMemoryBytes", true)
	u.MemoryLimitBytes, _ = o.Count("memoryLimitBytes", true)
	o.Skip()
	return u
}

// readMillis reads a non-negative number of milliseconds; zero when it is
// absent and not required.
func readMillis(o *jsontext.Object, key string, required bool) time.Duration {
	raw, ok := o.Take(key, required)
	if !ok {
		return 0
	}
	ms, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || raw[0] == '-' || math.IsInf(ms, 0) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		o.Fail(key, "must be a non-negative number of milliseconds, got %s", jsontext.ShowValue(raw))
		return 0
	}
	return time.Duration(math.Round(ms*1000)) * time.Microsecond
}

// MarshalJSON writes u as AppendUsage does.
func (u Usage) MarshalJSON() ([]byte, error) { return AppendUsage(nil, u), nil }

// UnmarshalJSON reads u as ReadUsage does.
func (u *Usage) UnmarshalJSON(data []byte) error {
	o, err := jsontext.ParseObject("", data)
	if err != nil {
		return err
	}
	got := ReadUsage(o)
	if err := o.Done(); err != nil {
		return err
	}
	*u = got
	return nil
}
