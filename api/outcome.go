package api

import (
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
	a.Outcome = spi.ReadOutcome(obj)
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
// outcome's members (spi.AppendOutcome), then logs and usage when set.
func AppendSandboxAnswer(dst []byte, a SandboxAnswer) ([]byte, error) {
	dst, err := spi.AppendOutcome(dst, a.Outcome)
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
		dst = spi.AppendUsage(append(dst, `,"usage":`...), *u)
	}
	return append(dst, '}')
}

// MarshalJSON writes a as AppendSandboxAnswer does: the service's own body.
func (a SandboxAnswer) MarshalJSON() ([]byte, error) { return AppendSandboxAnswer(nil, a) }

// UnmarshalJSON reads a as DecodeSandboxAnswer does.
func (a *SandboxAnswer) UnmarshalJSON(data []byte) error {
	got, err := DecodeSandboxAnswer(data)
	if err != nil {
		return err
	}
	*a = got
	return nil
}
