package spi

import (
	"fmt"
	"strconv"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// Channel names a typed failure (docs/spi.md, "Channels"): something the
// script or the caller's input did, which a planner may catch and re-plan
// around and which replay substitutes instead of re-running.
type Channel string

// The typed channels, the closed vocabulary of docs/spi.md, "Channels". The
// effect (package effect) alone decides which one a run's outcome is;
// everything else it returns is untyped.
const (
	ChannelLimitExceeded        Channel = "limitExceeded"
	ChannelScriptError          Channel = "scriptError"
	ChannelShapeMismatch        Channel = "shapeMismatch"
	ChannelScriptMissing        Channel = "scriptMissing"
	ChannelInputTooLarge        Channel = "inputTooLarge"
	ChannelInputNotSerializable Channel = "inputNotSerializable"
)

// Failure is a typed failure: the one error type whose Channel a caller may
// act on, which the effect returns and POST /v1/evaluations answers with.
// Test for it with errors.As. Only the fields of its channel are set:
//
//	limitExceeded         Kind (cpu, memory, wallClock or output)
//	scriptError           Name (nil when the thrown value had no string name), Message
//	shapeMismatch         Expected, Observed
//	scriptMissing         ScriptRef
//	inputTooLarge         LimitBytes
//	inputNotSerializable  Message
//
// Text fields are already bounded and storable (BoundText) when the effect
// returns a Failure. When the backend reports inputTooLarge (the input
// overflowed its memory while being parsed), LimitBytes is still the effect's
// MaxInputBytes: the only byte bound the caller controls.
type Failure struct {
	Channel    Channel
	Kind       LimitKind
	Name       *string
	Message    string
	Expected   string
	Observed   string
	ScriptRef  string
	LimitBytes int
}

func (f *Failure) Error() string {
	var s string
	switch f.Channel {
	case ChannelLimitExceeded:
		s = fmt.Sprintf("sandbox: limitExceeded: %s", f.Kind)
	case ChannelScriptError:
		s = "sandbox: scriptError"
		if f.Name != nil {
			s += ": " + *f.Name
		}
		if f.Message != "" {
			s += ": " + f.Message
		}
	case ChannelShapeMismatch:
		s = fmt.Sprintf("sandbox: shapeMismatch: expected %s, observed %s", f.Expected, f.Observed)
	case ChannelScriptMissing:
		s = "sandbox: scriptMissing: " + f.ScriptRef
	case ChannelInputTooLarge:
		s = fmt.Sprintf("sandbox: inputTooLarge: input JSON is over %d bytes", f.LimitBytes)
	case ChannelInputNotSerializable:
		s = "sandbox: inputNotSerializable: " + f.Message
	default:
		s = "sandbox: " + strconv.Quote(string(f.Channel))
	}
	return BoundText(s, MaxMessageUnits)
}

// MarshalJSON writes the failure as the service's API does (api/openapi.yaml):
// {"channel": …} with the channel's own fields beside it, so that a Failure
// can be sent, logged or stored as it is. Strings are written as
// JSON.stringify writes them, a lone surrogate as its escape.
func (f *Failure) MarshalJSON() ([]byte, error) {
	out := append([]byte(`{"channel":`), jsontext.AppendQuote(nil, string(f.Channel))...)
	str := func(name, v string) {
		out = append(out, ',', '"')
		out = append(out, name...)
		out = append(out, '"', ':')
		out = jsontext.AppendQuote(out, v)
	}
	switch f.Channel {
	case ChannelLimitExceeded:
		str("kind", string(f.Kind))
	case ChannelScriptError:
		if f.Name != nil {
			str("name", *f.Name)
		}
		str("message", f.Message)
	case ChannelShapeMismatch:
		str("expected", f.Expected)
		str("observed", f.Observed)
	case ChannelScriptMissing:
		str("scriptRef", f.ScriptRef)
	case ChannelInputTooLarge:
		out = append(out, `,"limitBytes":`...)
		out = strconv.AppendInt(out, int64(f.LimitBytes), 10)
	case ChannelInputNotSerializable:
		str("message", f.Message)
	default:
		return nil, fmt.Errorf("sandbox: cannot marshal a failure with unknown channel %q", BoundText(string(f.Channel), MaxNameUnits))
	}
	return append(out, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes, strictly: a known channel with
// exactly its own members, each of its type.
func (f *Failure) UnmarshalJSON(data []byte) error {
	got, err := DecodeFailure("", data)
	if err != nil {
		return err
	}
	*f = *got
	return nil
}

// DecodeFailure reads a failure as UnmarshalJSON does; path names the
// failure in messages (`"failure"` for the member of an answer that holds
// one, "" for a failure alone).
func DecodeFailure(path string, data []byte) (*Failure, error) {
	o, err := jsontext.ParseObject(path, data)
	if err != nil {
		return nil, err
	}
	return readFailure(o)
}

// readFailure reads a failure object from o and reports its first problem.
func readFailure(o *jsontext.Object) (*Failure, error) {
	ch, _ := o.Str("channel", true)
	out := &Failure{Channel: Channel(ch)}
	switch out.Channel {
	case ChannelLimitExceeded:
		if k, ok := o.Str("kind", true); ok && o.OneOf("kind", k, string(LimitCPU), string(LimitMemory),
			string(LimitWallClock), string(LimitOutput)) {
			out.Kind = LimitKind(k)
		}
	case ChannelScriptError:
		if n, ok := o.Str("name", false); ok {
			out.Name = &n
		}
		out.Message, _ = o.Str("message", true)
	case ChannelShapeMismatch:
		out.Expected, _ = o.Str("expected", true)
		out.Observed, _ = o.Str("observed", true)
	case ChannelScriptMissing:
		out.ScriptRef, _ = o.Str("scriptRef", true)
	case ChannelInputTooLarge:
		n, _ := o.Count("limitBytes", true)
		if n > int64(^uint(0)>>1) {
			o.Fail("limitBytes", "is too large")
		}
		out.LimitBytes = int(n)
	case ChannelInputNotSerializable:
		out.Message, _ = o.Str("message", true)
	default:
		if o.Err() == nil {
			o.OneOf("channel", ch, string(ChannelLimitExceeded), string(ChannelScriptError),
				string(ChannelShapeMismatch), string(ChannelScriptMissing), string(ChannelInputTooLarge),
				string(ChannelInputNotSerializable))
		}
	}
	if err := o.Done(); err != nil {
		return nil, err
	}
	return out, nil
}
