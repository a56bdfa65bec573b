package api

import (
	"encoding/json"
	"errors"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// EvaluationResponse is a 200 answer of POST /v1/evaluations, the effect's
// decision: either OK with the value, or the typed Failure (a channel and its
// fields, as the in-process effect returns them). Logs is set when the
// request asked for them; Usage is what the run used.
type EvaluationResponse struct {
	OK      bool
	Value   json.RawMessage // JSON text, written as it is
	Failure *spi.Failure
	Logs    *string
	Usage   *spi.Usage
}

// AppendEvaluation writes r after dst: {"ok":true,"value":…} or
// {"ok":false,"failure":{…}}, then "logs" and "usage" when set.
func AppendEvaluation(dst []byte, r EvaluationResponse) ([]byte, error) {
	switch {
	case r.OK && r.Failure == nil && len(r.Value) > 0:
		dst = append(append(dst, `{"ok":true,"value":`...), r.Value...)
	case !r.OK && r.Failure != nil && r.Value == nil:
		f, err := r.Failure.MarshalJSON()
		if err != nil {
			return nil, err
		}
		dst = append(append(dst, `{"ok":false,"failure":`...), f...)
	default:
		return nil, errors.New("api: an evaluation response is a value or a failure")
	}
	return appendLogsAndUsage(dst, r.Logs, r.Usage), nil
}

// evaluationMembers are the members of the effect's decision, a value or a
// typed failure: the closed part of POST /v1/evaluations' answer. Any other
// member is a report member (docs/spi.md, "How the wire evolves").
var evaluationMembers = []string{"ok", "value", "failure"}

// DecodeEvaluation reads a 200 body of POST /v1/evaluations as
// docs/spi.md, "How the wire evolves", says a reader does: ok, then value
// or a failure whose members are exactly its channel's; the report members
// this reader knows, logs and usage, checked; and every other member
// ignored.
func DecodeEvaluation(body []byte) (EvaluationResponse, error) {
	obj, err := jsontext.ParseObject("", body)
	if err != nil {
		return EvaluationResponse{}, err
	}
	var r EvaluationResponse
	r.OK, _ = obj.Bool("ok", true)
	if logs, present := obj.Str("logs", false); present {
		r.Logs = &logs
	}
	r.Usage = readUsage(obj)
	switch {
	case obj.Err() != nil:
	case r.OK:
		r.Value, _ = obj.Take("value", true)
	default:
		if raw, ok := obj.Take("failure", true); ok {
			f, err := spi.DecodeFailure(`"failure"`, raw)
			obj.Adopt(err)
			r.Failure = f
		}
	}
	closeOutcome(obj, evaluationMembers)
	obj.Skip()
	if err := obj.Done(); err != nil {
		return EvaluationResponse{}, err
	}
	return r, nil
}

// AppendEvaluationResult writes what the effect's Run answered for an
// evaluation that asked for its decision (spi.AnswerChannel) as POST
// /v1/evaluations' 200 answer: the value (the Result's Value) when err is
// nil, or the typed *spi.Failure err is; the console output when logs is
// not nil; and what the run used. The eval verb writes its answer with it
// too, so that the two are the same bytes. Any other error of the run is
// returned as it is: it is not an answer of the route.
func AppendEvaluationResult(dst []byte, value json.RawMessage, logs *string, usage spi.Usage, err error) ([]byte, error) {
	resp, err := EvaluationResult(value, logs, usage, err)
	if err != nil {
		return dst, err
	}
	return AppendEvaluation(dst, resp)
}

// EvaluationResult is the answer AppendEvaluationResult writes, or the
// error that is no answer of the route.
func EvaluationResult(value json.RawMessage, logs *string, usage spi.Usage, err error) (EvaluationResponse, error) {
	resp := EvaluationResponse{Logs: logs, Usage: &usage}
	var f *spi.Failure
	switch {
	case err == nil:
		resp.OK, resp.Value = true, value
	case errors.As(err, &f):
		resp.Failure = f
	default:
		return EvaluationResponse{}, err
	}
	return resp, nil
}

// InputTooLargeAnswer is POST /v1/evaluations' answer for an input over
// maxInputBytes, limitBytes, as the effect gives it before anything runs,
// which a client gives for a request whose body the service cannot read
// (docs/spi.md, "Answers no retry can change").
func InputTooLargeAnswer(limitBytes int) EvaluationResponse {
	return EvaluationResponse{Failure: &spi.Failure{Channel: spi.ChannelInputTooLarge, LimitBytes: limitBytes}, Usage: &spi.Usage{}}
}

// LimitExceededAnswer is POST /v1/evaluations' answer for a run that hit
// the limit kind, which a client gives for a request whose body the service
// cannot read and whose memory limit is below the service's minMemoryBytes,
// in which nothing runs (docs/spi.md, "Answers no retry can change").
func LimitExceededAnswer(kind spi.LimitKind) EvaluationResponse {
	return EvaluationResponse{Failure: &spi.Failure{Channel: spi.ChannelLimitExceeded, Kind: kind}, Usage: &spi.Usage{}}
}

// MarshalJSON writes r as AppendEvaluation does: the service's own body.
func (r EvaluationResponse) MarshalJSON() ([]byte, error) { return AppendEvaluation(nil, r) }

// UnmarshalJSON reads r as DecodeEvaluation does.
func (r *EvaluationResponse) UnmarshalJSON(data []byte) error {
	got, err := DecodeEvaluation(data)
	if err != nil {
		return err
	}
	*r = got
	return nil
}
