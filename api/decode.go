package api

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// refuse is a decoder's refusal of a request body: a problem of type t
// whose detail says what is wrong and where.
func refuse(t ProblemType, detail string) *Problem { return NewProblem(t, detail) }

// at records a byte offset in data, with its line and column.
func (p *Problem) at(data []byte, offset int) *Problem {
	offset = min(max(offset, 0), len(data))
	off := int64(offset)
	p.Offset = &off
	p.Line, p.Column = 1, 1
	for _, c := range data[:offset] {
		if c == '\n' {
			p.Line++
			p.Column = 1
		} else {
			p.Column++
		}
	}
	return p
}

// where says where the offset is, for a detail.
func (p *Problem) where() string {
	if p.Offset == nil {
		return ""
	}
	return " at byte offset " + strconv.FormatInt(*p.Offset, 10) +
		" (line " + strconv.Itoa(p.Line) + ", column " + strconv.Itoa(p.Column) + ")"
}

// DecodeEvaluationRequest reads and validates a POST /v1/evaluations body
// as the service does, with the server's limits l (their defaults filled
// in), into the evaluation it asks for: the effect's decision on a script by
// reference. It refuses a body with a *Problem, the document the service
// answers with; limits or an input outside the server's bounds are the
// effect's to answer.
func DecodeEvaluationRequest(body []byte, l Limits) (spi.Evaluation, error) {
	b, refused := readRequest(body, EvaluationMembers(), 0)
	if refused != nil {
		return spi.Evaluation{}, refused
	}
	ev, refused := b.byReference(l)
	if refused != nil {
		return spi.Evaluation{}, refused
	}
	ev.Input = jsontext.Text("null")
	if raw, ok := b.top["input"]; ok {
		ev.Input = jsontext.Text(raw) // a value of the body readRequest accepted
	}
	return ev, nil
}

// byReference reads the members of a request for the effect's decision
// on a script by reference, all but its input (or inputs): the reference,
// the limits, the shape check, captureLogs and determinism.
func (b bodyMembers) byReference(l Limits) (spi.Evaluation, *Problem) {
	ev := spi.Evaluation{Answer: spi.AnswerChannel}
	var err error
	scriptRef, ok := b.str("scriptRef")
	if !ok {
		return ev, refuse(ProblemInvalidRequest, `"scriptRef" is required: the script's content reference, sha256:<64 hex digits>`).WithField("scriptRef")
	}
	if ev.ScriptRef, err = contentref.ParseRef(scriptRef); err != nil {
		return spi.Evaluation{}, refuse(ProblemBadReference, "scriptRef: "+err.Error()).WithField("scriptRef")
	}
	var refused *Problem
	if ev.Limits, refused = decodeLimits(b.limits, l); refused != nil {
		return spi.Evaluation{}, refused
	}
	if h, ok := b.str("expectedOutputShapeHash"); ok {
		if err := spi.CheckShapeHash(h); err != nil {
			return spi.Evaluation{}, refuse(ProblemBadShapeHash, err.Error()).WithField("expectedOutputShapeHash")
		}
		ev.ExpectedOutputShapeHash = h
	}
	ev.CaptureLogs = string(b.top["captureLogs"]) == "true"
	if ev.Replay, refused = b.replay(); refused != nil {
		return spi.Evaluation{}, refused
	}
	return ev, nil
}

// DecodeSandboxRequest reads and validates a POST /v1/sandbox/evaluate body
// as the service does, with the server's limits l, into the evaluation it
// asks for: the backend's outcome of a script by value or by reference,
// with the console output when captureLogs is true. It refuses a body with a
// *Problem, the 400 the service answers with. A script, an input or limits
// outside the server's bounds are no refusal: the effect answers them, as
// outcomes no retry can change (docs/spi.md, "Answers no retry can
// change").
func DecodeSandboxRequest(body []byte, l Limits) (spi.Evaluation, error) {
	b, refused := readRequest(body, SandboxMembers(), 0)
	if refused != nil {
		return spi.Evaluation{}, refused
	}
	ev := spi.Evaluation{Answer: spi.AnswerOutcome}
	var err error
	script, hasScript := b.str("script")
	scriptRef, hasRef := b.str("scriptRef")
	switch {
	case hasScript && hasRef:
		return ev, refuse(ProblemInvalidRequest, `give exactly one of "script" (the source) and "scriptRef" (a content reference), not both`)
	case !hasScript && !hasRef:
		return ev, refuse(ProblemInvalidRequest, `give exactly one of "script" (the source) and "scriptRef" (a content reference)`)
	case hasRef:
		if ev.ScriptRef, err = contentref.ParseRef(scriptRef); err != nil {
			return spi.Evaluation{}, refuse(ProblemBadReference, "scriptRef: "+err.Error()).WithField("scriptRef")
		}
	default:
		ev.Script = script
	}
	in, ok := b.str("inputJson")
	if !ok {
		return spi.Evaluation{}, refuse(ProblemInvalidRequest,
			`"inputJson" is required: the input as JSON text in a string, for example "null" or "{\"a\":1}"`).WithField("inputJson")
	}
	if refused := jsonError([]byte(in), jsontext.Validate([]byte(in)), "inputJson", "inputJson"); refused != nil {
		refused.Detail += " (offsets count bytes of the inputJson text)"
		return spi.Evaluation{}, refused
	}
	ev.Input = jsontext.Text(in)
	if ev.Limits, refused = decodeLimits(b.limits, l); refused != nil {
		return spi.Evaluation{}, refused
	}
	ev.CaptureLogs = string(b.top["captureLogs"]) == "true"
	if ev.Replay, refused = b.replay(); refused != nil {
		return spi.Evaluation{}, refused
	}
	return ev, nil
}

// replay reads the determinism member: nil when the body has none, else
// the replayable run it asks for, or why not.
func (b bodyMembers) replay() (*spi.Replay, *Problem) {
	if _, on := b.top["determinism"]; !on {
		return nil, nil
	}
	r := &spi.Replay{}
	if raw, ok := b.determinism["seed"]; ok {
		r.Seed = jsontext.Unquote(raw)
		if r.Seed == "" {
			return nil, refuse(ProblemInvalidRequest, `determinism.seed must not be empty: leave it out for the seed derived from the script and the input`).WithField("determinism.seed")
		}
	}
	if raw, ok := b.determinism["now"]; ok {
		s := jsontext.Unquote(raw)
		t, err := spi.ParseReplayNow(s)
		if err != nil {
			return nil, refuse(ProblemInvalidRequest, "determinism.now "+err.Error()).WithField("determinism.now")
		}
		r.Now = t
	}
	var re *spi.ReplayError
	if err := r.Check(); errors.As(err, &re) {
		return nil, refuse(ProblemInvalidRequest, "determinism."+re.Error()).WithField("determinism." + re.Field)
	}
	return r, nil
}

// bodyMembers is a body read in its one pass: the text of each member of the
// top-level object and of its "limits" and "determinism" objects, and each
// element of its "inputs" array. A member that is null is absent.
type bodyMembers struct {
	top, limits, determinism map[string][]byte
	inputs                   []jsontext.Text
}

// readRequest reads body once: its syntax, UTF-8, duplicate keys, unknown
// fields, that it is an object, and the JSON type of each member, reported
// in that order. A body with more than maxInputs elements in its "inputs"
// array (a member of a batch's body only) is refused with the 413 that
// names maxBatchItems, as soon as the one too many is read.
func readRequest(body []byte, top []Member, maxInputs int64) (bodyMembers, *Problem) {
	b := bodyMembers{top: map[string][]byte{}, limits: map[string][]byte{}, determinism: map[string][]byte{}}
	var typeErr *Problem // the first member of the wrong type
	fieldsAt := func(path jsontext.Path) (parent string, fields []Member) {
		switch {
		case len(path) == 1 && path[0].Index < 0:
			return "", top
		case len(path) == 2 && path[0].Index < 0 && path[0].Key == "limits" && path[1].Index < 0:
			return "limits", LimitsMembers()
		case len(path) == 2 && path[0].Index < 0 && path[0].Key == "determinism" && path[1].Index < 0:
			return "determinism", DeterminismMembers()
		}
		return "", nil
	}
	err := jsontext.Check(body, jsontext.Options{
		Element: func(path jsontext.Path, at int, raw []byte) error {
			if len(path) != 2 || path[0].Index >= 0 || path[0].Key != "inputs" {
				return nil
			}
			if int64(len(b.inputs)) >= maxInputs {
				return tooManyInputs(maxInputs).at(body, at)
			}
			b.inputs = append(b.inputs, jsontext.Text(raw))
			return nil
		},
		Key: func(path jsontext.Path, keyAt int) error {
			parent, fields := fieldsAt(path)
			if fields == nil {
				return nil
			}
			if _, ok := lookupMember(fields, path[len(path)-1].Key); ok {
				return nil
			}
			e := refuse(ProblemUnknownField, "").at(body, keyAt)
			where := "the request"
			if parent != "" {
				where = jsontext.QuoteShort(parent)
			}
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.Name
			}
			member := memberName(path)
			e.Detail = fmt.Sprintf("unknown field %s%s; %s accepts %s", jsontext.QuoteShort(member), e.where(), where, strings.Join(names, ", "))
			e.Field = member
			return e
		},
		Value: func(path jsontext.Path, at int, raw []byte) error {
			parent, fields := fieldsAt(path)
			if fields == nil || string(raw) == "null" {
				return nil
			}
			key := path[len(path)-1].Key
			f, _ := lookupMember(fields, key)
			if parent == "limits" {
				b.limits[key] = raw
				return nil
			}
			if parent == "determinism" {
				b.determinism[key] = raw
				if typeErr == nil {
					// named by its path, as every refusal inside determinism is
					typeErr = wrongType(body, Member{parent + "." + f.Name, f.Type}, at, raw)
				}
				return nil
			}
			b.top[key] = raw
			if typeErr == nil {
				typeErr = wrongType(body, f, at, raw)
			}
			return nil
		},
	})
	if e := jsonError(body, err, "the body", ""); e != nil {
		return bodyMembers{}, e
	}
	if i := len(body) - len(bytes.TrimLeft(body, " \t\r\n")); body[i] != '{' {
		return bodyMembers{}, refuse(ProblemInvalidRequest, "the body must be a JSON object").at(body, i)
	}
	if typeErr != nil {
		return bodyMembers{}, typeErr
	}
	return b, nil
}

func lookupMember(members []Member, name string) (Member, bool) {
	for _, m := range members {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

// wrongType refuses a member whose value at offset at is not of f's type, or
// returns nil. The offset follows encoding/json's convention for a type
// error, which the problem documents keep: just past a scalar, just inside a
// container.
func wrongType(body []byte, f Member, at int, raw []byte) *Problem {
	var want string
	switch {
	case f.Type == StringType && raw[0] != '"':
		want = "a string"
	case f.Type == BooleanType && raw[0] != 't' && raw[0] != 'f':
		want = "a boolean"
	case f.Type == ObjectType && raw[0] != '{':
		want = "an object"
	case f.Type == ArrayType && raw[0] != '[':
		want = "an array"
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
	e := refuse(ProblemInvalidRequest, "").at(body, offset)
	e.Field = f.Name
	e.Detail = fmt.Sprintf("%s must be %s, got a JSON %s%s", jsontext.QuoteShort(f.Name), want, got, e.where())
	return e
}

// str returns a string member decoded to WTF-8, and whether it is present.
func (b bodyMembers) str(key string) (string, bool) {
	raw, ok := b.top[key]
	if !ok {
		return "", false
	}
	return jsontext.Unquote(raw), true
}

// memberName writes a path as details and the field member name a member:
// keys joined by dots, an array element's index in brackets after its
// array ("inputs[2].a"). A name over maxMemberName bytes is cut, ending in
// "…", so that hostile text cannot make a problem large.
func memberName(path jsontext.Path) string {
	var b strings.Builder
	for i, s := range path {
		switch {
		case s.Index >= 0:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.Index))
			b.WriteByte(']')
		case i > 0:
			b.WriteByte('.')
			fallthrough
		default:
			b.WriteString(s.Key)
		}
		if b.Len() > maxMemberName {
			break
		}
	}
	name := b.String()
	if len(name) <= maxMemberName {
		return name
	}
	cut := maxMemberName
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

// maxMemberName bounds a member's name in a problem (memberName).
const maxMemberName = 256

// jsonError turns the JSON reader's verdict on data into a refusal (nil
// for none). what names the text in details ("the body", "inputJson");
// field, when not "", is the Field of every error.
func jsonError(data []byte, err error, what, field string) *Problem {
	var refused *Problem
	var je *jsontext.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused):
		return refused
	case !errors.As(err, &je):
		return refuse(ProblemMalformedJSON, what+" could not be read: "+err.Error()).WithCause(err)
	case je.Kind == jsontext.KindDuplicateKey:
		member := memberName(je.Path)
		e := refuse(ProblemDuplicateKey, "").at(data, je.Offset)
		key := member
		if _, ok := batchInput(je.Path, field); ok { // the object in the input, and its key
			what, key = memberName(je.Path[:len(je.Path)-1]), je.Path[len(je.Path)-1].Key
		}
		e.Detail = fmt.Sprintf("%s has the key %s twice in one object%s; JSON parsers disagree on which one counts, so the request is refused",
			what, jsontext.QuoteShort(key), e.where())
		e.Field = cmp.Or(field, member)
		return e
	}
	e := refuse(ProblemMalformedJSON, "").at(data, je.Offset)
	e.Field = field
	if in, ok := batchInput(je.Path, field); ok {
		what, e.Field = in, in
	}
	e.Detail = what + " " + je.Msg + e.where()
	return e
}

// batchInput names the element of a batch's "inputs" that path is inside
// ("inputs[2]"), so that a refusal of a batch's body names the input at
// fault by its index; ok is false for a path elsewhere, or inside a text
// that is not the body (field set).
func batchInput(path jsontext.Path, field string) (name string, ok bool) {
	if field != "" || len(path) < 2 || path[0].Index >= 0 || path[0].Key != "inputs" || path[1].Index < 0 {
		return "", false
	}
	return "inputs[" + strconv.Itoa(path[1].Index) + "]", true
}

// decodeLimits reads the requested limits (the members of "limits"), each a
// positive whole number, and fills in the defaults. It leaves them to the
// effect's bounds (docs/spi.md, "Answers no retry can change"): a limit
// above its maximum runs at the maximum, a memory limit below
// minMemoryBytes is the memory limit, so a number of digits too large for
// an int64 is read as the largest one.
func decodeLimits(b map[string][]byte, l Limits) (spi.Limits, *Problem) {
	out := spi.Limits{WallClock: l.DefaultWallClock, MemoryBytes: l.DefaultMemoryBytes}
	if raw, ok := b["wallClockMs"]; ok {
		ms, err := positiveInt("limits.wallClockMs", raw, "ms", "maxWallClockMs", l.MaxWallClock.Milliseconds())
		if err != nil {
			return out, err
		}
		out.WallClock = time.Duration(math.MaxInt64)
		if ms <= math.MaxInt64/int64(time.Millisecond) {
			out.WallClock = time.Duration(ms) * time.Millisecond
		}
	}
	if raw, ok := b["memoryBytes"]; ok {
		n, err := positiveInt("limits.memoryBytes", raw, "bytes", "maxMemoryBytes", l.MaxMemoryBytes)
		if err != nil {
			return out, err
		}
		out.MemoryBytes = n
	}
	return out, nil
}

// positiveInt parses a limit: a JSON number written as a positive integer
// (digits only); one too large for an int64 is math.MaxInt64. A refusal
// says what the server does with a limit above its maximum, named maxName.
func positiveInt(field string, raw []byte, unit, maxName string, max int64) (int64, *Problem) {
	bad := func(why string) (int64, *Problem) {
		return 0, refuse(ProblemInvalidLimits, fmt.Sprintf("%s must be a positive whole number of %s (one above the server's %s of %d runs at it); got %s: %s",
			field, unit, maxName, max, jsontext.ShowValue(raw), why)).WithField(field)
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
	switch {
	case errors.Is(err, strconv.ErrRange):
		return math.MaxInt64, nil
	case err != nil:
		return bad("not an integer written in digits")
	case n == 0:
		return bad("zero")
	}
	return n, nil
}
