package handler

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// evaluationRequest is a decoded, validated POST /v1/evaluations body.
type evaluationRequest struct {
	ScriptRef               contentref.Ref
	Input                   jsontext.Text // a value of the body; "null" when absent
	Limits                  effect.Limits // defaults filled in
	ExpectedOutputShapeHash string        // "" when absent
	CaptureLogs             bool
}

// sandboxRequest is a decoded, validated POST /v1/sandbox/evaluate body:
// exactly one of Script (HasScript) and ScriptRef is set. Script and
// InputJSON are the strings as sent, in WTF-8: a lone surrogate escape is
// kept as that code unit.
type sandboxRequest struct {
	Script    string
	HasScript bool
	ScriptRef contentref.Ref // zero when the script is inline
	InputJSON string
	Limits    effect.Limits // defaults filled in
}

// bodyMembers is a body read in its one pass: the text of each member of the
// top-level object and of its "limits" object. A member that is null is
// absent.
type bodyMembers struct {
	top, limits map[string][]byte
}

// readRequest reads body once: its syntax, UTF-8, duplicate keys, unknown
// fields, that it is an object, and the JSON type of each member, reported
// in that order.
func readRequest(body []byte, top []api.Member) (bodyMembers, *problem) {
	b := bodyMembers{top: map[string][]byte{}, limits: map[string][]byte{}}
	var typeProblem *problem // the first member of the wrong type
	fieldsAt := func(path jsontext.Path) (parent string, fields []api.Member) {
		switch {
		case len(path) == 1 && path[0].Index < 0:
			return "", top
		case len(path) == 2 && path[0].Index < 0 && path[0].Key == "limits" && path[1].Index < 0:
			return "limits", api.LimitsMembers()
		}
		return "", nil
	}
	err := jsontext.Check(body, jsontext.Options{
		Key: func(path jsontext.Path, keyAt int) error {
			parent, fields := fieldsAt(path)
			if fields == nil {
				return nil
			}
			if _, ok := lookupField(fields, path[len(path)-1].Key); ok {
				return nil
			}
			p := newProblem(pUnknownField, 400, "").at(body, keyAt)
			where := "the request"
			if parent != "" {
				where = quoteField(parent)
			}
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.Name
			}
			member := memberName(path)
			p.detail = fmt.Sprintf("unknown field %s%s; %s accepts %s", quoteField(member), p.where(), where, strings.Join(names, ", "))
			p.field = member
			return problemError{p}
		},
		Value: func(path jsontext.Path, at int, raw []byte) error {
			parent, fields := fieldsAt(path)
			if fields == nil || string(raw) == "null" {
				return nil
			}
			key := path[len(path)-1].Key
			f, _ := lookupField(fields, key)
			if parent == "limits" {
				b.limits[key] = raw
				return nil
			}
			b.top[key] = raw
			if typeProblem == nil {
				typeProblem = wrongType(body, f, at, raw)
			}
			return nil
		},
	})
	if p := jsonProblem(body, err, "the body", ""); p != nil {
		return bodyMembers{}, p
	}
	if i := firstNonSpace(body); body[i] != '{' {
		return bodyMembers{}, newProblem(pInvalidRequest, 400, "the body must be a JSON object").at(body, i)
	}
	if typeProblem != nil {
		return bodyMembers{}, typeProblem
	}
	return b, nil
}

func lookupField(fields []api.Member, name string) (api.Member, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return api.Member{}, false
}

// wrongType refuses a member whose value at offset at is not of f's type, or
// returns nil. The problem's offset follows encoding/json's convention for a
// type error, which the problem documents keep: just past a scalar, just
// inside a container.
func wrongType(body []byte, f api.Member, at int, raw []byte) *problem {
	var want string
	switch {
	case f.Type == api.StringType && raw[0] != '"':
		want = "a string"
	case f.Type == api.BooleanType && raw[0] != 't' && raw[0] != 'f':
		want = "a boolean"
	case f.Type == api.ObjectType && raw[0] != '{':
		want = "an object"
	default:
		return nil
	}
	var got string
	offset := at + len(raw)
	switch raw[0] {
	case '"':
		got = "string"
	case 't', 'f':
		got = "bool"
	case '[':
		got, offset = "array", at+1
	case '{':
		got, offset = "object", at+1
	default:
		got = "number"
	}
	p := newProblem(pInvalidRequest, 400, "").at(body, offset)
	p.field = f.Name
	p.detail = fmt.Sprintf("%s must be %s, got a JSON %s%s", quoteField(f.Name), want, got, p.where())
	return p
}

// str returns a string member decoded to WTF-8, and whether it is present.
func (b bodyMembers) str(key string) (string, bool) {
	raw, ok := b.top[key]
	if !ok {
		return "", false
	}
	return jsontext.Unquote(raw), true
}

// problemError carries a problem through the JSON reader's hooks.
type problemError struct{ p *problem }

func (e problemError) Error() string { return e.p.detail }

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

// decodeEvaluation decodes and validates a POST /v1/evaluations body.
func decodeEvaluation(body []byte, lim Limits) (evaluationRequest, *problem) {
	b, p := readRequest(body, api.EvaluationMembers())
	if p != nil {
		return evaluationRequest{}, p
	}
	var req evaluationRequest
	scriptRef, ok := b.str("scriptRef")
	if !ok {
		return req, newProblem(pInvalidRequest, 400, `"scriptRef" is required: the script's content reference, sha256:<64 hex digits>`).withField("scriptRef")
	}
	ref, err := contentref.ParseRef(scriptRef)
	if err != nil {
		return req, newProblem(pBadReference, 400, "scriptRef: "+err.Error()).withField("scriptRef")
	}
	req.ScriptRef = ref
	req.Input = jsontext.Text("null")
	if raw, ok := b.top["input"]; ok {
		req.Input = jsontext.Text(raw) // a value of the body readRequest accepted
	}
	if req.Limits, p = decodeLimits(b.limits, lim); p != nil {
		return evaluationRequest{}, p
	}
	if h, ok := b.str("expectedOutputShapeHash"); ok {
		if !effect.ValidShapeHash(h) {
			return evaluationRequest{}, newProblem(pBadShapeHash, 400,
				fmt.Sprintf(`expectedOutputShapeHash must be "sha256:" and 64 lowercase hex digits (see docs/shape-hash.md), got %s`, quoteField(h))).
				withField("expectedOutputShapeHash")
		}
		req.ExpectedOutputShapeHash = h
	}
	req.CaptureLogs = string(b.top["captureLogs"]) == "true"
	return req, nil
}

// decodeSandboxEvaluate decodes and validates a POST /v1/sandbox/evaluate
// body. A problem about the size of the script or the input is a 413.
func decodeSandboxEvaluate(body []byte, lim Limits) (sandboxRequest, *problem) {
	b, p := readRequest(body, api.SandboxMembers())
	if p != nil {
		return sandboxRequest{}, p
	}
	var req sandboxRequest
	script, hasScript := b.str("script")
	scriptRef, hasRef := b.str("scriptRef")
	switch {
	case hasScript && hasRef:
		return req, newProblem(pInvalidRequest, 400, `give exactly one of "script" (the source) and "scriptRef" (a content reference), not both`)
	case !hasScript && !hasRef:
		return req, newProblem(pInvalidRequest, 400, `give exactly one of "script" (the source) and "scriptRef" (a content reference)`)
	case hasRef:
		ref, err := contentref.ParseRef(scriptRef)
		if err != nil {
			return req, newProblem(pBadReference, 400, "scriptRef: "+err.Error()).withField("scriptRef")
		}
		req.ScriptRef = ref
	default:
		if n := int64(len(script)); n > lim.MaxScriptBytes {
			return req, newProblem(pScriptTooLarge, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("script is %d bytes, over the server's maxScriptBytes of %d", n, lim.MaxScriptBytes)).
				withLimit("maxScriptBytes", lim.MaxScriptBytes).withField("script")
		}
		req.Script, req.HasScript = script, true
	}
	in, ok := b.str("inputJson")
	if !ok {
		return sandboxRequest{}, newProblem(pInvalidRequest, 400,
			`"inputJson" is required: the input as JSON text in a string, for example "null" or "{\"a\":1}"`).withField("inputJson")
	}
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
	if req.Limits, p = decodeLimits(b.limits, lim); p != nil {
		return sandboxRequest{}, p
	}
	return req, nil
}

// decodeLimits validates the requested limits (the members of "limits")
// against the maxima and fills in the defaults.
func decodeLimits(b map[string][]byte, lim Limits) (effect.Limits, *problem) {
	out := effect.Limits{WallClock: lim.DefaultWallClock, MemoryBytes: lim.DefaultMemoryBytes}
	if raw, ok := b["wallClockMs"]; ok {
		maxMs := lim.MaxWallClock.Milliseconds()
		ms, p := positiveInt("limits.wallClockMs", raw, "maxWallClockMs", maxMs, "ms")
		if p != nil {
			return out, p
		}
		out.WallClock = time.Duration(ms) * time.Millisecond
	}
	if raw, ok := b["memoryBytes"]; ok {
		n, p := positiveInt("limits.memoryBytes", raw, "maxMemoryBytes", lim.MaxMemoryBytes, "bytes")
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
