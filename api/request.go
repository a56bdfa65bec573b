package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// JSONType is the JSON type a request member must have.
type JSONType uint8

const (
	AnyType JSONType = iota
	StringType
	BooleanType
	ObjectType
	ArrayType
)

// Member is a member a request object accepts.
type Member struct {
	Name string
	Type JSONType
}

// EvaluationMembers are the members of a POST /v1/evaluations body, in the
// order AppendEvaluationRequest writes them.
func EvaluationMembers() []Member {
	return []Member{{"scriptRef", StringType}, {"input", AnyType}, {"limits", ObjectType}, {"expectedOutputShapeHash", StringType}, {"captureLogs", BooleanType}, {"determinism", ObjectType}}
}

// SandboxMembers are the members of a POST /v1/sandbox/evaluate body, in
// the order AppendSandboxRequest writes them.
func SandboxMembers() []Member {
	return []Member{{"script", StringType}, {"scriptRef", StringType}, {"inputJson", StringType}, {"limits", ObjectType}, {"captureLogs", BooleanType}, {"determinism", ObjectType}}
}

// DeterminismMembers are the members of the determinism object of both
// bodies, which asks for a replayable run (docs/spi.md, "Replayable
// runs"): both optional, the object itself turning the mode on.
func DeterminismMembers() []Member {
	return []Member{{"seed", StringType}, {"now", StringType}}
}

// LimitsMembers are the members of the limits object of both bodies; each
// is a positive integer written in digits.
func LimitsMembers() []Member {
	return []Member{{"wallClockMs", AnyType}, {"memoryBytes", AnyType}}
}

// escapedBytes is the most bytes a JSON string spends on one byte of its
// text: a control character must be written as a \uXXXX escape, and any
// other may be.
const escapedBytes = 6

// requestRoom is room for every member of a request but the script and the
// input, each at its own bound and however it is escaped: the member names,
// a content reference, a determinism seed of 128 bytes and its instant, the
// limits, and the punctuation between them take less than 5 KiB.
const requestRoom = 64 << 10

// MinRequestBytes is the least maxRequestBytes that carries every request
// whose script and input are within maxScriptBytes and maxInputBytes,
// however a client escapes them: a body cap below it would refuse, as too
// large, a request that the service answers, only because of how it was
// written. The service refuses to start with a smaller one.
func MinRequestBytes(maxScriptBytes, maxInputBytes int64) int64 {
	return escapedBytes*(maxScriptBytes+maxInputBytes) + requestRoom
}

// Request is a body of either POST route as a client writes it: the wire
// form of one evaluation, whose server side is the spi.Evaluation the
// decoders read. AppendEvaluationRequest writes it for /v1/evaluations
// (the script by reference, the input as a JSON value, the shape check);
// AppendSandboxRequest for /v1/sandbox/evaluate (the script by value or by
// reference, the input as JSON text in a string). Limits are written in
// whole milliseconds, rounded up so that a run never gets less time than
// asked; a zero member is left out, so that the service's default applies
// to it, and with both zero the limits object is.
type Request struct {
	// Script is the source of a script sent by value (the SPI route);
	// WTF-8, a lone surrogate is written as its escape. Nil sends ScriptRef.
	Script    *string
	ScriptRef string
	// Input is JSON text, written without its insignificant white space;
	// nil writes null.
	Input  json.RawMessage
	Limits spi.Limits
	// ExpectedOutputShapeHash, when not "", asks for the shape check
	// (/v1/evaluations).
	ExpectedOutputShapeHash string
	// CaptureLogs, when true, asks for the run's console output.
	CaptureLogs bool
	// Replay, when set, asks for a replayable run: its seed and instant
	// when set, the service's defaults otherwise.
	Replay *spi.Replay
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

func (w *requestWriter) limits(l spi.Limits) {
	if l.WallClock == 0 && l.MemoryBytes == 0 {
		return
	}
	w.name("limits")
	w.b = append(w.b, '{')
	if l.WallClock != 0 {
		ms := int64(l.WallClock / time.Millisecond)
		if l.WallClock%time.Millisecond != 0 {
			ms++ // never ask for less time than the caller gave
		}
		w.name("wallClockMs")
		w.b = strconv.AppendInt(w.b, ms, 10)
	}
	if l.MemoryBytes != 0 {
		w.name("memoryBytes")
		w.b = strconv.AppendInt(w.b, l.MemoryBytes, 10)
	}
	w.b = append(w.b, '}')
}

// replay writes the determinism member of a replayable run.
func (w *requestWriter) replay(r *spi.Replay) {
	if r == nil {
		return
	}
	w.name("determinism")
	w.b = append(w.b, '{')
	if r.Seed != "" {
		w.str("seed", r.Seed)
	}
	if !r.Now.IsZero() {
		w.str("now", r.Now.UTC().Format(time.RFC3339Nano))
	}
	w.b = append(w.b, '}')
}

// AppendEvaluationRequest writes r after dst; it fails only when r.Input is
// not JSON text.
func AppendEvaluationRequest(dst []byte, r Request) ([]byte, error) {
	w := requestWriter{append(dst, '{')}
	w.str("scriptRef", r.ScriptRef)
	w.name("input")
	var err error
	if w.b, err = appendCompact(w.b, r.Input); err != nil {
		return nil, fmt.Errorf("api: input: %w", err)
	}
	w.options(r)
	return append(w.b, '}'), nil
}

// AppendOptions writes, as one JSON object, the members of r that every
// input of a batch shares but the script: its limits, the shape check,
// captureLogs and determinism, each as a request writes it ({} for none).
// A bulk shard's manifest records with it what each input was run under.
func AppendOptions(dst []byte, r Request) []byte {
	w := requestWriter{append(dst, '{')}
	w.options(r)
	return append(w.b, '}')
}

// options writes the members of r that /v1/evaluations and its batch
// share after the input: the limits, the shape check, captureLogs and
// determinism.
func (w *requestWriter) options(r Request) {
	w.limits(r.Limits)
	if r.ExpectedOutputShapeHash != "" {
		w.str("expectedOutputShapeHash", r.ExpectedOutputShapeHash)
	}
	if r.CaptureLogs {
		w.name("captureLogs")
		w.b = append(w.b, "true"...)
	}
	w.replay(r.Replay)
}

// appendCompact writes the JSON text in without its insignificant white
// space after dst; nil writes null.
func appendCompact(dst []byte, in json.RawMessage) ([]byte, error) {
	if in == nil {
		return append(dst, "null"...), nil
	}
	b := bytes.NewBuffer(dst)
	if err := json.Compact(b, in); err != nil {
		return dst, err
	}
	return b.Bytes(), nil
}

// AppendSandboxRequest writes r after dst, its Input as it is (the
// service reads and checks it).
func AppendSandboxRequest(dst []byte, r Request) []byte {
	w := requestWriter{append(dst, '{')}
	if r.Script != nil {
		w.str("script", *r.Script)
	} else {
		w.str("scriptRef", r.ScriptRef)
	}
	input := "null"
	if r.Input != nil {
		input = string(r.Input)
	}
	w.str("inputJson", input)
	w.limits(r.Limits)
	if r.CaptureLogs {
		w.name("captureLogs")
		w.b = append(w.b, "true"...)
	}
	w.replay(r.Replay)
	return append(w.b, '}')
}
