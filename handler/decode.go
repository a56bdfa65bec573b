package handler

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// evaluationRequest is a decoded, validated POST /v1/evaluations body.
type evaluationRequest struct {
	ScriptRef               contentref.Ref
	Input                   json.RawMessage // JSON text; "null" when absent
	Limits                  effect.Limits   // defaults filled in
	ExpectedOutputShapeHash string          // "" when absent
	CaptureLogs             bool
}

// sandboxRequest is a decoded, validated POST /v1/sandbox/evaluate body:
// exactly one of Script (HasScript) and ScriptRef is set.
type sandboxRequest struct {
	Script    string
	HasScript bool
	ScriptRef contentref.Ref // zero when the script is inline
	InputJSON string
	Limits    effect.Limits // defaults filled in
}

var (
	evaluationFields = []string{"scriptRef", "input", "limits", "expectedOutputShapeHash", "captureLogs"}
	sandboxFields    = []string{"script", "scriptRef", "inputJson", "limits"}
	limitsFields     = []string{"wallClockMs", "memoryBytes"}
)

// rawLimit keeps a limit's JSON text, so that any number can be refused with
// a precise reason; null is the same as absent.
type rawLimit struct {
	raw []byte
}

func (n *rawLimit) UnmarshalJSON(b []byte) error {
	if string(b) != "null" {
		n.raw = append([]byte(nil), b...)
	}
	return nil
}

type limitsBody struct {
	WallClockMs rawLimit `json:"wallClockMs"`
	MemoryBytes rawLimit `json:"memoryBytes"`
}

type evaluationBody struct {
	ScriptRef               *string         `json:"scriptRef"`
	Input                   json.RawMessage `json:"input"`
	Limits                  *limitsBody     `json:"limits"`
	ExpectedOutputShapeHash *string         `json:"expectedOutputShapeHash"`
	CaptureLogs             *bool           `json:"captureLogs"`
}

type sandboxBody struct {
	Script    *string     `json:"script"`
	ScriptRef *string     `json:"scriptRef"`
	InputJSON *string     `json:"inputJson"`
	Limits    *limitsBody `json:"limits"`
}

func requestFields(top []string) func(string) []string {
	return func(path string) []string {
		switch path {
		case "":
			return top
		case "limits":
			return limitsFields
		}
		return nil
	}
}

// decodeStrict checks body (syntax, UTF-8, duplicate keys, unknown fields)
// and decodes it into v, whose members must be pointers or raw types so that
// only a member's JSON type can fail.
func decodeStrict(body []byte, top []string, v any) *problem {
	fields := requestFields(top)
	err := jsontext.Check(body, jsontext.Options{Key: func(path jsontext.Path, keyAt int) error {
		return unknownField(body, path, keyAt, fields)
	}})
	if p := jsonProblem(body, err, "the body", ""); p != nil {
		return p
	}
	if i := firstNonSpace(body); body[i] != '{' {
		return newProblem(pInvalidRequest, 400, "the body must be a JSON object").at(body, i)
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			p := newProblem(pInvalidRequest, 400, "").at(body, int(te.Offset))
			p.field = te.Field
			p.detail = fmt.Sprintf("%s must be %s, got a JSON %s%s", quoteField(te.Field), jsonTypeName(te.Type.String()), te.Value, p.where())
			return p
		}
		// The checker accepted the body, so this is a bug; say so plainly.
		return newProblem(pMalformedJSON, 400, "the body could not be decoded: "+err.Error())
	}
	return nil
}

// problemError carries a problem through the JSON reader's hooks.
type problemError struct{ p *problem }

func (e problemError) Error() string { return e.p.detail }

// unknownField refuses a key that the object at its path does not accept.
func unknownField(body []byte, path jsontext.Path, keyAt int, fields func(string) []string) error {
	parent := memberName(path[:len(path)-1])
	if len(path) > 2 || len(path) == 2 && path[0].Index >= 0 {
		return nil // no object below the top level's members has a field list
	}
	allowed := fields(parent)
	if allowed == nil || slices.Contains(allowed, path[len(path)-1].Key) {
		return nil
	}
	member := memberName(path)
	p := newProblem(pUnknownField, 400, "").at(body, keyAt)
	where := "the request"
	if parent != "" {
		where = quoteField(parent)
	}
	p.detail = fmt.Sprintf("unknown field %s%s; %s accepts %s", quoteField(member), p.where(), where, strings.Join(allowed, ", "))
	p.field = member
	return problemError{p}
}

// memberName writes a path as details and the field member name a member:
// keys joined by dots, an array element as "[]" after its array.
func memberName(path jsontext.Path) string {
	var b strings.Builder
	for i, s := range path {
		switch {
		case s.Index >= 0:
			b.WriteString("[]")
		case i > 0:
			b.WriteByte('.')
			fallthrough
		default:
			b.WriteString(s.Key)
		}
	}
	return b.String()
}

// jsonProblem turns the JSON reader's verdict on data into a problem (nil
// for none). what names the text in details ("the body", "inputJson");
// field, when not "", is the field member of every problem.
func jsonProblem(data []byte, err error, what, field string) *problem {
	var pe problemError
	var je *jsontext.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return pe.p
	case !errors.As(err, &je):
		return newProblem(pMalformedJSON, 400, what+" could not be read: "+err.Error()).withCause(err)
	case je.Kind == jsontext.KindDuplicateKey:
		member := memberName(je.Path)
		p := newProblem(pDuplicateKey, 400, "").at(data, je.Offset)
		p.detail = fmt.Sprintf("%s has the key %s twice in one object%s; JSON parsers disagree on which one counts, so the request is refused",
			what, quoteField(member), p.where())
		p.field = cmp.Or(field, member)
		return p
	}
	p := newProblem(pMalformedJSON, 400, "").at(data, je.Offset)
	p.detail = what + " " + je.Msg + p.where()
	p.field = field
	return p
}

func firstNonSpace(b []byte) int {
	return len(b) - len(bytes.TrimLeft(b, " \t\r\n"))
}

// jsonTypeName names the JSON type a Go member type expects.
func jsonTypeName(goType string) string {
	switch goType {
	case "string", "*string":
		return "a string"
	case "bool", "*bool":
		return "a boolean"
	case "handler.limitsBody", "*handler.limitsBody":
		return "an object"
	}
	return "of another type"
}

// decodeEvaluation decodes and validates a POST /v1/evaluations body.
func decodeEvaluation(body []byte, lim Limits) (evaluationRequest, *problem) {
	var b evaluationBody
	if p := decodeStrict(body, evaluationFields, &b); p != nil {
		return evaluationRequest{}, p
	}
	var req evaluationRequest
	if b.ScriptRef == nil {
		return req, newProblem(pInvalidRequest, 400, `"scriptRef" is required: the script's content reference, sha256:<64 hex digits>`).withField("scriptRef")
	}
	ref, err := contentref.ParseRef(*b.ScriptRef)
	if err != nil {
		return req, newProblem(pBadReference, 400, "scriptRef: "+err.Error()).withField("scriptRef")
	}
	req.ScriptRef = ref
	req.Input = b.Input
	if req.Input == nil {
		req.Input = json.RawMessage("null")
	}
	var p *problem
	if req.Limits, p = decodeLimits(b.Limits, lim); p != nil {
		return evaluationRequest{}, p
	}
	if b.ExpectedOutputShapeHash != nil {
		h := *b.ExpectedOutputShapeHash
		if !validShapeHash(h) {
			return evaluationRequest{}, newProblem(pBadShapeHash, 400,
				fmt.Sprintf(`expectedOutputShapeHash must be "sha256:" and 64 lowercase hex digits (see docs/shape-hash.md), got %s`, quoteField(h))).
				withField("expectedOutputShapeHash")
		}
		req.ExpectedOutputShapeHash = h
	}
	if b.CaptureLogs != nil {
		req.CaptureLogs = *b.CaptureLogs
	}
	return req, nil
}

// decodeSandboxEvaluate decodes and validates a POST /v1/sandbox/evaluate
// body. A problem about the size of the script or the input is a 413.
func decodeSandboxEvaluate(body []byte, lim Limits) (sandboxRequest, *problem) {
	var b sandboxBody
	if p := decodeStrict(body, sandboxFields, &b); p != nil {
		return sandboxRequest{}, p
	}
	var req sandboxRequest
	switch {
	case b.Script != nil && b.ScriptRef != nil:
		return req, newProblem(pInvalidRequest, 400, `give exactly one of "script" (the source) and "scriptRef" (a content reference), not both`)
	case b.Script == nil && b.ScriptRef == nil:
		return req, newProblem(pInvalidRequest, 400, `give exactly one of "script" (the source) and "scriptRef" (a content reference)`)
	case b.ScriptRef != nil:
		ref, err := contentref.ParseRef(*b.ScriptRef)
		if err != nil {
			return req, newProblem(pBadReference, 400, "scriptRef: "+err.Error()).withField("scriptRef")
		}
		req.ScriptRef = ref
	default:
		if n := int64(len(*b.Script)); n > lim.MaxScriptBytes {
			return req, newProblem(pScriptTooLarge, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("script is %d bytes, over the server's maxScriptBytes of %d", n, lim.MaxScriptBytes)).
				withLimit("maxScriptBytes", lim.MaxScriptBytes).withField("script")
		}
		req.Script, req.HasScript = *b.Script, true
	}
	if b.InputJSON == nil {
		return sandboxRequest{}, newProblem(pInvalidRequest, 400,
			`"inputJson" is required: the input as JSON text in a string, for example "null" or "{\"a\":1}"`).withField("inputJson")
	}
	in := *b.InputJSON
	if n := int64(len(in)); n > lim.MaxInputBytes {
		return sandboxRequest{}, newProblem(pInputTooLarge, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("inputJson is %d bytes, over the server's maxInputBytes of %d", n, lim.MaxInputBytes)).
			withLimit("maxInputBytes", lim.MaxInputBytes).withField("inputJson")
	}
	if p := jsonProblem([]byte(in), jsontext.Validate([]byte(in)), "inputJson", "inputJson"); p != nil {
		p.detail += " (offsets count bytes of the inputJson text)"
		return sandboxRequest{}, p
	}
	req.InputJSON = in
	var p *problem
	if req.Limits, p = decodeLimits(b.Limits, lim); p != nil {
		return sandboxRequest{}, p
	}
	return req, nil
}

// decodeLimits validates the requested limits against the maxima and fills
// in the defaults.
func decodeLimits(b *limitsBody, lim Limits) (effect.Limits, *problem) {
	out := effect.Limits{WallClock: lim.DefaultWallClock, MemoryBytes: lim.DefaultMemoryBytes}
	if b == nil {
		return out, nil
	}
	if b.WallClockMs.raw != nil {
		maxMs := lim.MaxWallClock.Milliseconds()
		ms, p := positiveInt("limits.wallClockMs", b.WallClockMs.raw, "maxWallClockMs", maxMs, "ms")
		if p != nil {
			return out, p
		}
		out.WallClock = time.Duration(ms) * time.Millisecond
	}
	if b.MemoryBytes.raw != nil {
		n, p := positiveInt("limits.memoryBytes", b.MemoryBytes.raw, "maxMemoryBytes", lim.MaxMemoryBytes, "bytes")
		if p != nil {
			return out, p
		}
		out.MemoryBytes = n
	}
	return out, nil
}

// positiveInt parses a limit: a JSON number written as a positive integer
// (digits only), at most max.
func positiveInt(field string, raw []byte, maxName string, max int64, unit string) (int64, *problem) {
	bad := func(why string) (int64, *problem) {
		return 0, newProblem(pInvalidLimits, 400, fmt.Sprintf("%s must be a positive integer (%s) at most the server's %s of %d; got %s: %s",
			field, unit, maxName, max, quoteField(string(raw)), why)).withField(field).withLimit(maxName, max)
	}
	s := string(raw)
	if s == "" || s[0] == '"' || s[0] == '{' || s[0] == '[' || s[0] == 't' || s[0] == 'f' {
		return bad("not a number")
	}
	if s[0] == '-' {
		return bad("negative")
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return bad("not an integer written in digits")
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > max {
		return 0, newProblem(pInvalidLimits, 400, fmt.Sprintf("%s of %s is above the server's %s of %d %s", field, s, maxName, max, unit)).
			withField(field).withLimit(maxName, max)
	}
	if n == 0 {
		return bad("zero")
	}
	return n, nil
}

// validShapeHash reports whether s has the form effect.ShapeHash returns.
func validShapeHash(s string) bool {
	const prefix = "sha256:"
	if len(s) != len(prefix)+64 || s[:len(prefix)] != prefix {
		return false
	}
	for _, c := range []byte(s[len(prefix):]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// readBody reads the request body, already capped by capBody. How long the
// client may take to send it is the http.Server's ReadTimeout (main sets
// it), which also bounds how long a slow client holds the concurrency gate.
// It returns nil and no problem when the client left while sending the body.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *problem) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		return body, nil
	}
	// The rest of the body is not worth waiting for: close the connection
	// after the answer instead of draining it.
	w.Header().Set("Connection", "close")
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLargeBody(s.lim.MaxRequestBytes)
	case errors.Is(err, os.ErrDeadlineExceeded):
		// net/http cancels the request's context too, on the read error:
		// the error, not the context, says what happened.
		return nil, newProblem(pBodyTimeout, http.StatusRequestTimeout,
			"the request body did not arrive within the server's read timeout; a retry may succeed").retry()
	case r.Context().Err() != nil:
		return nil, nil
	}
	return nil, newProblem(pInvalidRequest, http.StatusBadRequest, "the body could not be read: "+err.Error()).withCause(err)
}

// requestBody reads the body of an evaluation request, or answers the
// request itself (its problem, or nothing for a client that left) and
// reports false.
func (s *server) requestBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, p := s.readBody(w, r)
	switch {
	case p != nil:
		writeProblem(w, r, p)
		return nil, false
	case body == nil:
		s.stopped(w, r, r.Context()) // the client left
		return nil, false
	}
	return body, true
}

func tooLargeBody(max int64) *problem {
	return newProblem(pRequestTooLarge, http.StatusRequestEntityTooLarge,
		fmt.Sprintf("the request body is over the server's maxRequestBytes of %d bytes", max)).
		withLimit("maxRequestBytes", max)
}
