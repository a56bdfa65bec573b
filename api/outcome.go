package api

import (
	"errors"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// SandboxAnswer is a 200 answer of POST /v1/sandbox/evaluate: the outcome
// of docs/spi.md, "Outcomes", exactly, with beside its members the run's
// report members: its console output (Logs, when the request asked for it)
// and what it used (Usage). Logs and Usage are nil when absent.
type SandboxAnswer struct {
	Outcome spi.Outcome
	Logs    *string
	Usage   *spi.Usage
}

// outcomeMembers are the members of every kind of outcome together, the
// closed vocabulary of docs/spi.md, "Outcomes". Any other member of an
// answer is a report member (docs/spi.md, "How the wire evolves").
var outcomeMembers = []string{"ok", "value", "kind", "limit", "name", "message"}

// DecodeSandboxAnswer reads a 200 body of POST /v1/sandbox/evaluate as
// docs/spi.md, "How the wire evolves", says a reader does: one outcome in
// the closed vocabulary, with no member of another kind; the report members
// this reader knows, logs and usage, checked; and every other member, a
// report member of a later version, ignored.
func DecodeSandboxAnswer(body []byte) (SandboxAnswer, error) {
	obj, err := jsontext.ParseObject("", body)
	if err != nil {
		return SandboxAnswer{}, err
	}
	var a SandboxAnswer
	a.Outcome = readOutcome(obj)
	closeOutcome(obj, outcomeMembers)
	if logs, present := obj.Str("logs", false); present {
		a.Logs = &logs
	}
	a.Usage = readUsage(obj)
	obj.Skip()
	if err := obj.Done(); err != nil {
		return SandboxAnswer{}, err
	}
	return a, nil
}

// closeOutcome refuses a member of the outcome's vocabulary that the
// outcome read did not take: one of another kind's.
func closeOutcome(obj *jsontext.Object, vocabulary []string) {
	for _, k := range vocabulary {
		if obj.Unread(k) {
			obj.Fail(k, "not a member of this kind of outcome")
		}
	}
}

// AppendSandboxAnswer appends a as POST /v1/sandbox/evaluate's answer: the
// outcome's members (AppendOutcome), then logs and usage when set.
func AppendSandboxAnswer(dst []byte, a SandboxAnswer) ([]byte, error) {
	dst, err := AppendOutcome(dst, a.Outcome)
	if err != nil {
		return dst, err
	}
	return appendLogsAndUsage(dst[:len(dst)-1], a.Logs, a.Usage), nil
}

// appendLogsAndUsage writes the members both answers carry beside their
// own, and closes the object.
func appendLogsAndUsage(dst []byte, logs *string, u *spi.Usage) []byte {
	if logs != nil {
		dst = jsontext.AppendQuote(append(dst, `,"logs":`...), *logs)
	}
	if u != nil {
		dst = AppendUsage(append(dst, `,"usage":`...), *u)
	}
	return append(dst, '}')
}

// DecodeOutcome reads one outcome in the closed vocabulary of docs/spi.md,
// "Outcomes", with no other members. A threw message may be empty (the
// script threw ""); an infrastructure message may not (spi.Outcome cannot
// tell an empty message from a missing one). The value is returned as the
// JSON text received.
func DecodeOutcome(body []byte) (spi.Outcome, error) {
	obj, err := jsontext.ParseObject("", body)
	if err != nil {
		return spi.Outcome{}, err
	}
	out := readOutcome(obj)
	if err := obj.Done(); err != nil {
		return spi.Outcome{}, err
	}
	return out, nil
}

// readOutcome reads the outcome's members of obj.
func readOutcome(obj *jsontext.Object) spi.Outcome {
	ok, _ := obj.Bool("ok", true)
	var out spi.Outcome
	switch {
	case obj.Err() != nil:
	case ok:
		value, _ := obj.Take("value", true)
		out = spi.OK(value)
	default:
		kind, _ := obj.Str("kind", true)
		switch spi.OutcomeKind(kind) {
		case spi.KindLimit:
			limit, present := obj.Str("limit", true)
			if present && obj.OneOf("limit", limit, string(spi.LimitCPU), string(spi.LimitMemory), string(spi.LimitWallClock)) {
				out = spi.LimitHit(spi.LimitKind(limit))
			}
		case spi.KindThrew:
			var name *string
			if n, present := obj.Str("name", false); present {
				name = &n
			}
			message, _ := obj.Str("message", true) // may be empty: `throw ""`
			out = spi.Threw(name, message)
		case spi.KindInputTooLarge:
			out = spi.InputTooLarge()
		case spi.KindInfrastructure:
			out = spi.Infrastructure(obj.NonEmpty("message"))
		default:
			if obj.Err() == nil {
				obj.OneOf("kind", kind, string(spi.KindLimit), string(spi.KindThrew), string(spi.KindInputTooLarge), string(spi.KindInfrastructure))
			}
		}
	}
	return out
}

// ErrValueNotJSON is AppendOutcome's error for an ok outcome whose value is
// not JSON text.
var ErrValueNotJSON = errors.New("an ok outcome whose value is not JSON text")

// AppendOutcome appends o as the outcome object of docs/spi.md, "Outcomes", and nothing else,
// the document DecodeOutcome reads: an ok outcome's value as its JSON text,
// strings as JSON.stringify writes them (a lone surrogate the engine wrote
// stays the same JavaScript string). A threw message may be empty (throw
// new Error(), throw "": the script's own outcome).
func AppendOutcome(dst []byte, o spi.Outcome) ([]byte, error) {
	switch o.Kind {
	case spi.KindLimit:
		dst = jsontext.AppendQuote(append(dst, `{"ok":false,"kind":"limit","limit":`...), string(o.Limit))
		return append(dst, '}'), nil
	case spi.KindThrew:
		dst = append(dst, `{"ok":false,"kind":"threw"`...)
		if o.Name != nil {
			dst = jsontext.AppendQuote(append(dst, `,"name":`...), *o.Name)
		}
		dst = jsontext.AppendQuote(append(dst, `,"message":`...), o.Message)
		return append(dst, '}'), nil
	case spi.KindInputTooLarge:
		return append(dst, `{"ok":false,"kind":"inputTooLarge"}`...), nil
	case spi.KindInfrastructure:
		dst = jsontext.AppendQuote(append(dst, `{"ok":false,"kind":"infrastructure","message":`...), o.Message)
		return append(dst, '}'), nil
	}
	if jsontext.Validate(o.Value) != nil {
		return dst, ErrValueNotJSON
	}
	dst = append(append(dst, `{"ok":true,"value":`...), o.Value...)
	return append(dst, '}'), nil
}
