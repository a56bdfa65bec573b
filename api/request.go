package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// JSONType is the JSON type a request member must have.
type JSONType uint8

const (
	AnyType JSONType = iota
	StringType
	BooleanType
	ObjectType
)

// Member is a member a request object accepts.
type Member struct {
	Name string
	Type JSONType
}

// EvaluationMembers are the members of a POST /v1/evaluations body, in the
// order AppendEvaluationRequest writes them.
func EvaluationMembers() []Member {
	return []Member{{"scriptRef", StringType}, {"input", AnyType}, {"limits", ObjectType}, {"expectedOutputShapeHash", StringType}, {"captureLogs", BooleanType}}
}

// SandboxMembers are the members of a POST /v1/sandbox/evaluate body, in
// the order AppendSandboxRequest writes them.
func SandboxMembers() []Member {
	return []Member{{"script", StringType}, {"scriptRef", StringType}, {"inputJson", StringType}, {"limits", ObjectType}}
}

// LimitsMembers are the members of the limits object of both bodies; each
// is a positive integer written in digits.
func LimitsMembers() []Member {
	return []Member{{"wallClockMs", AnyType}, {"memoryBytes", AnyType}}
}

// RequestLimits is the limits object of both bodies. A zero member is left
// out, so that the service's default applies to it; with both zero the
// object is.
type RequestLimits struct {
	WallClockMs int64
	MemoryBytes int64
}

// EvaluationRequest is a POST /v1/evaluations body.
type EvaluationRequest struct {
	ScriptRef string
	// Input is JSON text, written without its insignificant white space;
	// nil writes null.
	Input  json.RawMessage
	Limits RequestLimits
	// ExpectedOutputShapeHash, when not "", asks for the shape check.
	ExpectedOutputShapeHash string
	// CaptureLogs, when true, asks for the run's console output.
	CaptureLogs bool
}

// SandboxRequest is a POST /v1/sandbox/evaluate body: the script by value
// (Script not nil) or by reference (ScriptRef).
type SandboxRequest struct {
	Script    *string // WTF-8: a lone surrogate is written as its escape
	ScriptRef string
	InputJSON string
	Limits    RequestLimits
}

// requestWriter writes the members of one object.
type requestWriter struct{ b []byte }

func (w *requestWriter) name(n string) {
	if w.b[len(w.b)-1] != '{' {
		w.b = append(w.b, ',')
	}
	w.b = append(append(append(w.b, '"'), n...), `":`...)
}

func (w *requestWriter) str(n, v string) {
	w.name(n)
	w.b = jsontext.AppendQuote(w.b, v)
}

func (w *requestWriter) limits(l RequestLimits) {
	if l.WallClockMs == 0 && l.MemoryBytes == 0 {
		return
	}
	w.name("limits")
	w.b = append(w.b, '{')
	if l.WallClockMs != 0 {
		w.name("wallClockMs")
		w.b = strconv.AppendInt(w.b, l.WallClockMs, 10)
	}
	if l.MemoryBytes != 0 {
		w.name("memoryBytes")
		w.b = strconv.AppendInt(w.b, l.MemoryBytes, 10)
	}
	w.b = append(w.b, '}')
}

// AppendEvaluationRequest writes r after dst; it fails only when r.Input is
// not JSON text.
func AppendEvaluationRequest(dst []byte, r EvaluationRequest) ([]byte, error) {
	w := requestWriter{append(dst, '{')}
	w.str("scriptRef", r.ScriptRef)
	w.name("input")
	if r.Input == nil {
		w.b = append(w.b, "null"...)
	} else {
		var in bytes.Buffer
		if err := json.Compact(&in, r.Input); err != nil {
			return nil, fmt.Errorf("api: input: %w", err)
		}
		w.b = append(w.b, in.Bytes()...)
	}
	w.limits(r.Limits)
	if r.ExpectedOutputShapeHash != "" {
		w.str("expectedOutputShapeHash", r.ExpectedOutputShapeHash)
	}
	if r.CaptureLogs {
		w.name("captureLogs")
		w.b = append(w.b, "true"...)
	}
	return append(w.b, '}'), nil
}

// AppendSandboxRequest writes r after dst.
func AppendSandboxRequest(dst []byte, r SandboxRequest) []byte {
	w := requestWriter{append(dst, '{')}
	if r.Script != nil {
		w.str("script", *r.Script)
	} else {
		w.str("scriptRef", r.ScriptRef)
	}
	w.str("inputJson", r.InputJSON)
	w.limits(r.Limits)
	return append(w.b, '}')
}
