package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

var fuzzLimits = Limits{
	DefaultWallClock: time.Second, MaxWallClock: 10 * time.Second,
	DefaultMemoryBytes: 16 << 20, MinMemoryBytes: 256 << 10, MaxMemoryBytes: 64 << 20,
	MaxInputBytes: 4 << 10, MaxOutputBytes: 4 << 10, MaxScriptBytes: 4 << 10, MaxRequestBytes: 64 << 10,
}

const seedRef = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"

// checkRefusal is the fuzz property for a refusal: a problem of a
// documented type, with a detail, a 400 (a size the decoders leave to the
// effect, docs/spi.md, "Answers no retry can change"), and a document that
// encodes.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var p *Problem
	if !errors.As(err, &p) {
		t.Fatalf("a refusal that is not a Problem: %v", err)
	}
	if p.ProblemType().Title() == "" || p.Detail == "" || p.Status != 400 {
		t.Fatalf("refusal without a documented type, a detail or a 400: %+v", p)
	}
	if (p.Offset == nil) != (p.Line == 0) {
		t.Fatalf("an offset without its line, or a line without an offset: %+v", p)
	}
	if b := AppendProblem(nil, *p); !json.Valid(b) || !utf8.Valid(b) {
		t.Fatalf("the refusal does not encode: %q", b)
	}
}

// checkLimits is the fuzz property for accepted limits: positive, as the
// effect takes them (it answers those outside the server's bounds).
func checkLimits(t *testing.T, l spi.Limits) {
	t.Helper()
	if l.WallClock <= 0 || l.MemoryBytes <= 0 {
		t.Fatalf("accepted limits no run can have: %+v", l)
	}
}

// checkReplay is the fuzz property for an accepted determinism member: a
// replay every engine can honour.
func checkReplay(t *testing.T, r *spi.Replay) {
	t.Helper()
	if r != nil && r.Check() != nil {
		t.Fatalf("accepted a replay no engine can honour: %+v: %v", *r, r.Check())
	}
}

func FuzzDecodeEvaluation(f *testing.F) {
	for _, s := range []string{
		`{"scriptRef":"` + seedRef + `"}`,
		`{"scriptRef":"` + seedRef + `","input":{"a":[1,2,{"b":null}]},"limits":{"wallClockMs":100,"memoryBytes":1048576},"expectedOutputShapeHash":"` + seedRef + `","captureLogs":true}`,
		`{"scriptRef":"` + seedRef + `","input":{"a":1,"a":2}}`,
		`{"scriptRef":"SHA256:abc"}`,
		`{"scriptRef":"` + seedRef + `","limits":{"wallClockMs":1e3}}`,
		`{"scriptRef":"` + seedRef + `","limits":{"wallClockMs":-0}}`,
		`{"scriptRef":"` + seedRef + `","limits":null,"input":null,"captureLogs":null}`,
		`{"\u0073criptRef":"` + seedRef + `"}`,
		`{"scriptRef":"` + seedRef + `","determinism":{"seed":"s","now":"2026-12-02T07:16:17.5+01:00"}}`,
		`{"scriptRef":"` + seedRef + `","determinism":{"now":"1969-12-31T23:59:59Z"}}`,
		"{\"scriptRef\":\"\xed\xa0\x80\"}",
		`[` + strings.Repeat("[", 50) + `]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := DecodeEvaluationRequest(body, fuzzLimits)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if ev.ScriptRef.IsZero() || !json.Valid(ev.Input) || (ev.ExpectedOutputShapeHash != "" && spi.CheckShapeHash(ev.ExpectedOutputShapeHash) != nil) ||
			ev.Answer != spi.AnswerChannel {
			t.Fatalf("accepted an invalid request: %+v", ev)
		}
		checkLimits(t, ev.Limits)
		checkReplay(t, ev.Replay)
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
	})
}

func FuzzDecodeSandboxEvaluate(f *testing.F) {
	for _, s := range []string{
		`{"script":"input","inputJson":"null"}`,
		`{"scriptRef":"` + seedRef + `","inputJson":"{\"a\":[1,2]}","limits":{"wallClockMs":5000,"memoryBytes":16777216}}`,
		`{"script":"1","scriptRef":"` + seedRef + `","inputJson":"1"}`,
		`{"script":"1","inputJson":"{\"a\":1,\"a\":2}"}`,
		`{"script":"1","inputJson":"\"\\ud800\""}`,
		`{"script":"1","inputJson":" [1] x"}`,
		`{"script":"1","inputJson":1}`,
		`{"script":"1"}`,
		`{"script":"1","inputJson":"1","limits":{"memoryBytes":99999999999999999999}}`,
		`{"script":"1","inputJson":"1"} trailing`,
		`{"script":"1","inputJson":"1","determinism":{}}`,
		`{"script":"1","inputJson":"1","determinism":{"seed":"a\u0000"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := DecodeSandboxRequest(body, fuzzLimits)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if ev.ScriptRef.IsZero() && ev.Script == "" && !strings.Contains(string(body), `"script"`) || ev.Answer != spi.AnswerOutcome {
			t.Fatalf("accepted a request without a script: %+v", ev)
		}
		if !json.Valid(ev.Input) || !utf8.Valid(ev.Input) {
			t.Fatalf("accepted inputJson that is not JSON text: %q", ev.Input)
		}
		checkLimits(t, ev.Limits)
		checkReplay(t, ev.Replay)
	})
}

// The checker agrees with encoding/json on what is JSON (it is stricter only
// about UTF-8, duplicate keys and depth).
func FuzzJSONChecker(f *testing.F) {
	for _, s := range []string{`{}`, `[1,2.5e-3,"x\u00e9",true,false,null]`, `{"a":{"a":1}}`, `{"a":1,"a":2}`, `01`, `1.`, `"\x"`, "\"\t\"", ` {"a" : [ ] } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		re := jsonError(data, jsontext.Validate(data), "the text", "")
		if re == nil && !json.Valid(data) {
			t.Fatalf("checker accepted what encoding/json refuses: %q", data)
		}
		if re != nil && re.ProblemType() == ProblemMalformedJSON && json.Valid(data) && utf8.Valid(data) && !strings.Contains(re.Detail, "levels deep") {
			t.Fatalf("checker refused valid JSON: %q: %s", data, re.Detail)
		}
	})
}

// A refusal says where: the member at fault, the byte offset with its line
// and column (for a fault with a place), and the limit that applied.
func TestRefusalsSayWhere(t *testing.T) {
	// where is what a refusal says besides its detail; Offset -1 for none.
	type where struct {
		Type         ProblemType
		Field        string
		Offset       int64
		Line, Column int
		Limit        string
		LimitValue   int64
	}
	for _, tc := range []struct {
		name   string
		decode func([]byte, Limits) (spi.Evaluation, error)
		body   string
		want   where
	}{
		{"unknown field", DecodeEvaluationRequest, `{"scriptRef":"x",` + "\n" + ` "bogus":1}`,
			where{Type: ProblemUnknownField, Field: "bogus", Offset: 19, Line: 2, Column: 2}},
		{"unknown limit", DecodeEvaluationRequest, `{"limits":{"cpu":1}}`,
			where{Type: ProblemUnknownField, Field: "limits.cpu", Offset: 11, Line: 1, Column: 12}},
		{"wrong type", DecodeEvaluationRequest, `{"scriptRef":12}`,
			where{Type: ProblemInvalidRequest, Field: "scriptRef", Offset: 15, Line: 1, Column: 16}},
		{"not an object", DecodeSandboxRequest, "\n [1]",
			where{Type: ProblemInvalidRequest, Offset: 2, Line: 2, Column: 2}},
		{"malformed", DecodeEvaluationRequest, `{"scriptRef":}`,
			where{Type: ProblemMalformedJSON, Offset: 13, Line: 1, Column: 14}},
		{"key twice", DecodeEvaluationRequest, `{"captureLogs":true,"captureLogs":false}`,
			where{Type: ProblemDuplicateKey, Field: "captureLogs", Offset: 20, Line: 1, Column: 21}},
		{"key twice in inputJson", DecodeSandboxRequest, `{"script":"1","inputJson":"{\"a\":1,\"a\":2}"}`,
			where{Type: ProblemDuplicateKey, Field: "inputJson", Offset: 7, Line: 1, Column: 8}},
		{"no reference", DecodeEvaluationRequest, `{}`,
			where{Type: ProblemInvalidRequest, Field: "scriptRef", Offset: -1}},
		{"bad reference", DecodeEvaluationRequest, `{"scriptRef":"sha1:x"}`,
			where{Type: ProblemBadReference, Field: "scriptRef", Offset: -1}},
		{"bad shape hash", DecodeEvaluationRequest, `{"scriptRef":"` + seedRef + `","expectedOutputShapeHash":"x"}`,
			where{Type: ProblemBadShapeHash, Field: "expectedOutputShapeHash", Offset: -1}},
		{"memory not a number", DecodeSandboxRequest, `{"script":"1","inputJson":"1","limits":{"memoryBytes":"1"}}`,
			where{Type: ProblemInvalidLimits, Field: "limits.memoryBytes", Offset: -1}},
		{"zero wall clock", DecodeSandboxRequest, `{"script":"1","inputJson":"1","limits":{"wallClockMs":0}}`,
			where{Type: ProblemInvalidLimits, Field: "limits.wallClockMs", Offset: -1}},
		{"zero memory", DecodeSandboxRequest, `{"script":"1","inputJson":"1","limits":{"memoryBytes":0}}`,
			where{Type: ProblemInvalidLimits, Field: "limits.memoryBytes", Offset: -1}},
		{"both scripts", DecodeSandboxRequest, `{"script":"1","scriptRef":"` + seedRef + `","inputJson":"1"}`,
			where{Type: ProblemInvalidRequest, Offset: -1}},
		// a batch's input at fault is named by its index
		{"a malformed input", decodeBatch, `{"scriptRef":"` + seedRef + `","inputs":[1,2,{"a":}]}`,
			where{Type: ProblemMalformedJSON, Field: "inputs[2]", Offset: 106, Line: 1, Column: 107}},
		{"an input not UTF-8", decodeBatch, `{"scriptRef":"` + seedRef + "\",\"inputs\":[1,\"\xff\"]}",
			where{Type: ProblemMalformedJSON, Field: "inputs[1]", Offset: 100, Line: 1, Column: 101}},
		{"a key twice in an input", decodeBatch, `{"scriptRef":"` + seedRef + `","inputs":[1,2,{"a":1,"a":2}]}`,
			where{Type: ProblemDuplicateKey, Field: "inputs[2].a", Offset: 108, Line: 1, Column: 109}},
		{"a key twice deep in an input", decodeBatch, `{"scriptRef":"` + seedRef + `","inputs":[1,2,[{"a":1,"a":2}]]}`,
			where{Type: ProblemDuplicateKey, Field: "inputs[2][0].a", Offset: 109, Line: 1, Column: 110}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.decode([]byte(tc.body), fuzzLimits)
			var re *Problem
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a Problem", err)
			}
			got := where{Type: re.ProblemType(), Field: re.Field, Offset: -1, Line: re.Line, Column: re.Column, Limit: re.Limit, LimitValue: re.LimitValue}
			if re.Offset != nil {
				got.Offset = *re.Offset
			}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v (%s)", got, tc.want, re.Detail)
			}
			// the offset is in the members, and in the detail but for a
			// body that is not an object, where it is the body's start
			if tc.want.Offset >= 0 && tc.want.Type != ProblemInvalidRequest && !strings.Contains(re.Detail, "at byte offset") {
				t.Errorf("the detail does not say where: %s", re.Detail)
			}
			// and a batch's input leads it, by its index
			if in, _, _ := strings.Cut(tc.want.Field, "]"); strings.HasPrefix(in, "inputs[") && !strings.HasPrefix(re.Detail, in+"]") {
				t.Errorf("the detail does not begin with %s]: %s", in, re.Detail)
			}
		})
	}
}

// A member named in a problem is bounded, however long its keys or deep
// its path: hostile text cannot make the problem large.
func TestMemberNamesAreBounded(t *testing.T) {
	long := strings.Repeat("k", 10000)
	for name, body := range map[string]string{
		"a long key":  `{"scriptRef":"` + seedRef + `","inputs":[{"` + long + `":1,"` + long + `":2}]}`,
		"a deep path": `{"scriptRef":"` + seedRef + `","inputs":[` + strings.Repeat(`[`, 5000) + `{"a":1,"a":2}` + strings.Repeat(`]`, 5000) + `]}`,
	} {
		_, err := decodeBatch([]byte(body), fuzzLimits)
		var re *Problem
		if !errors.As(err, &re) || re.ProblemType() != ProblemDuplicateKey {
			t.Fatalf("%s: %v, want a duplicate-key problem", name, err)
		}
		if len(re.Field) > 300 || len(re.Detail) > 600 || !strings.HasPrefix(re.Field, "inputs[0]") || !strings.HasSuffix(re.Field, "…") {
			t.Errorf("%s: field %d bytes, detail %d bytes: %.80s…, %.200s", name, len(re.Field), len(re.Detail), re.Field, re.Detail)
		}
	}
}

// decodeBatch is DecodeBatchRequest as the other decoders are called, with
// room for a few inputs.
func decodeBatch(body []byte, l Limits) (spi.Evaluation, error) {
	l.MaxBatchItems = 10
	ev, _, err := DecodeBatchRequest(body, l)
	return ev, err
}

// Limits, a script and an input outside the server's bounds are no
// refusal: both decoders read them as asked, for the effect to answer
// (docs/spi.md, "Answers no retry can change"), a number too large for an
// int64 as the largest one. Absent limits take the defaults.
func TestOutOfBoundsRequestsAreRead(t *testing.T) {
	big := strings.Repeat("1", int(fuzzLimits.MaxScriptBytes)+1)
	bigInput := `\"` + strings.Repeat("i", int(fuzzLimits.MaxInputBytes)) + `\"`
	for _, tc := range []struct {
		name   string
		decode func([]byte, Limits) (spi.Evaluation, error)
		body   string
		want   spi.Limits
		script string
	}{
		{"above the maxima", DecodeEvaluationRequest, `{"scriptRef":"` + seedRef + `","limits":{"wallClockMs":10001,"memoryBytes":67108865}}`,
			spi.Limits{WallClock: 10001 * time.Millisecond, MemoryBytes: 64<<20 + 1}, ""},
		{"below the memory minimum", DecodeSandboxRequest, `{"script":"1","inputJson":"1","limits":{"memoryBytes":1}}`,
			spi.Limits{WallClock: time.Second, MemoryBytes: 1}, "1"},
		{"beyond an int64", DecodeSandboxRequest, `{"script":"1","inputJson":"1","limits":{"wallClockMs":99999999999999999999,"memoryBytes":99999999999999999999}}`,
			spi.Limits{WallClock: math.MaxInt64, MemoryBytes: math.MaxInt64}, "1"},
		{"a wall clock beyond a Duration", DecodeSandboxRequest, `{"script":"1","inputJson":"1","limits":{"wallClockMs":9223372036855}}`,
			spi.Limits{WallClock: math.MaxInt64, MemoryBytes: 16 << 20}, "1"},
		{"a script and an input over their maxima", DecodeSandboxRequest, `{"script":"` + big + `","inputJson":"` + bigInput + `"}`,
			spi.Limits{WallClock: time.Second, MemoryBytes: 16 << 20}, big},
		{"the memory minimum", DecodeSandboxRequest, `{"script":"1","inputJson":"1","limits":{"memoryBytes":262144}}`,
			spi.Limits{WallClock: time.Second, MemoryBytes: 256 << 10}, "1"},
		{"absent", DecodeEvaluationRequest, `{"scriptRef":"` + seedRef + `"}`,
			spi.Limits{WallClock: time.Second, MemoryBytes: 16 << 20}, ""},
	} {
		ev, err := tc.decode([]byte(tc.body), fuzzLimits)
		if err != nil || ev.Limits != tc.want || ev.Script != tc.script {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, ev.Limits, err, tc.want)
		}
	}
}

// Both decoders read the golden request bodies the Go and TypeScript
// clients write, and refuse the malformed ones with a refusal of a
// documented type.
func TestGoldenRequestsDecode(t *testing.T) {
	read := func(pattern string) map[string][]byte {
		names, err := filepath.Glob(pattern)
		if err != nil || len(names) == 0 {
			t.Fatalf("no golden files %s: %v", pattern, err)
		}
		m := map[string][]byte{}
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			m[filepath.Base(n)] = b
		}
		return m
	}
	for name, body := range read("testdata/request/evaluation/*.json") {
		if _, err := DecodeEvaluationRequest(body, fuzzLimits); err != nil {
			t.Errorf("evaluation/%s: %v", name, err)
		}
	}
	for name, body := range read("testdata/request/sandbox/*.json") {
		ev, err := DecodeSandboxRequest(body, fuzzLimits)
		if err != nil {
			t.Errorf("sandbox/%s: %v", name, err)
		}
		if name == "script.json" && ev.Script != "'\xed\xa0\x80'.charCodeAt(0) + input.n" {
			t.Errorf("sandbox/script.json: the script reads as %q, not as sent", ev.Script)
		}
	}
	for name, body := range read("testdata/request/evaluation/invalid/*.json") {
		_, err := DecodeEvaluationRequest(body, fuzzLimits)
		if !refusedAs400(err) {
			t.Errorf("evaluation/invalid/%s: %v", name, err)
		}
	}
	for name, body := range read("testdata/request/sandbox/invalid/*.json") {
		_, err := DecodeSandboxRequest(body, fuzzLimits)
		if !refusedAs400(err) {
			t.Errorf("sandbox/invalid/%s: %v", name, err)
		}
	}
}

// refusedAs400 reports whether err is a refusal of a documented type with
// the status 400 (not a size's 413).
func refusedAs400(err error) bool {
	var p *Problem
	return errors.As(err, &p) && p.ProblemType().Title() != "" && p.Status == 400
}

// A determinism member asks for a replayable run on both routes: the object
// alone for the defaults, a seed and an instant as sent (the instant in any
// offset), null as no member at all.
func TestDeterminismIsRead(t *testing.T) {
	decoders := map[string]func(string) (spi.Evaluation, error){
		"evaluations": func(d string) (spi.Evaluation, error) {
			return DecodeEvaluationRequest([]byte(`{"scriptRef":"`+seedRef+`","determinism":`+d+`}`), fuzzLimits)
		},
		"sandbox": func(d string) (spi.Evaluation, error) {
			return DecodeSandboxRequest([]byte(`{"script":"1","inputJson":"1","determinism":`+d+`}`), fuzzLimits)
		},
	}
	instant := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		determinism string
		want        *spi.Replay
	}{
		{`null`, nil},
		{`{}`, &spi.Replay{}},
		{`{"seed":null,"now":null}`, &spi.Replay{}},
		{`{"seed":"flow-42/step-3"}`, &spi.Replay{Seed: "flow-42/step-3"}},
		{`{"seed":"` + strings.Repeat("é", 64) + `"}`, &spi.Replay{Seed: strings.Repeat("é", 64)}},
		{`{"seed":"\u00e9 \ud83d\ude00"}`, &spi.Replay{Seed: "é 😀"}},
		{`{"now":"2026-12-02T08:16:17.5+01:00"}`, &spi.Replay{Now: instant("2026-12-02T07:16:17.5Z")}},
		{`{"now":"1970-01-01T00:00:00Z"}`, &spi.Replay{Now: instant("1970-01-01T00:00:00Z")}},
		{`{"now":"2262-04-11T23:47:16Z","seed":"s"}`, &spi.Replay{Seed: "s", Now: instant("2262-04-11T23:47:16Z")}},
	} {
		for route, decode := range decoders {
			ev, err := decode(tc.determinism)
			if err != nil {
				t.Errorf("%s %s: %v", route, tc.determinism, err)
				continue
			}
			switch got := ev.Replay; {
			case (got == nil) != (tc.want == nil):
				t.Errorf("%s %s: Replay %+v, want %+v", route, tc.determinism, got, tc.want)
			case got != nil && (got.Seed != tc.want.Seed || !got.Now.Equal(tc.want.Now)):
				t.Errorf("%s %s: Replay %+v, want %+v", route, tc.determinism, *got, *tc.want)
			}
		}
	}
}

// A determinism member the service cannot honour is a 400 that names the
// member at fault and says why, on both routes.
func TestDeterminismRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, determinism string
		typ               ProblemType
		field             string
		detail            []string
	}{
		{"seed empty", `{"seed":""}`, ProblemInvalidRequest, "determinism.seed",
			[]string{"determinism.seed must not be empty", "leave it out"}},
		{"seed too long", `{"seed":"` + strings.Repeat("s", 129) + `"}`, ProblemInvalidRequest, "determinism.seed",
			[]string{"determinism.seed is 129 bytes, over the 128 a seed may have"}},
		{"seed too long in bytes, not in characters", `{"seed":"` + strings.Repeat("é", 65) + `"}`, ProblemInvalidRequest, "determinism.seed",
			[]string{"determinism.seed is 130 bytes"}},
		{"seed with a control character", `{"seed":"step\t3"}`, ProblemInvalidRequest, "determinism.seed",
			[]string{"determinism.seed has the control character U+0009"}},
		{"seed with DEL", `{"seed":"step\u007f"}`, ProblemInvalidRequest, "determinism.seed",
			[]string{"control character U+007F"}},
		{"seed with a lone surrogate", `{"seed":"\ud800"}`, ProblemInvalidRequest, "determinism.seed",
			[]string{"determinism.seed is not valid UTF-8"}},
		{"seed not a string", `{"seed":42}`, ProblemInvalidRequest, "determinism.seed",
			[]string{`"determinism.seed" must be a string, got a JSON number`}},
		{"now not a string", `{"now":946684800}`, ProblemInvalidRequest, "determinism.now",
			[]string{`"determinism.now" must be a string, got a JSON number`}},
		{"now not RFC 3339", `{"now":"yesterday"}`, ProblemInvalidRequest, "determinism.now",
			[]string{`determinism.now must be an RFC 3339 instant such as "2000-01-01T00:00:00Z", got "yesterday"`}},
		{"now without its offset", `{"now":"2026-12-02T07:16:17"}`, ProblemInvalidRequest, "determinism.now",
			[]string{"RFC 3339"}},
		{"now with a one-digit hour", `{"now":"2026-12-02T7:16:17Z"}`, ProblemInvalidRequest, "determinism.now",
			[]string{"RFC 3339"}},
		{"now with a comma before the fraction", `{"now":"2026-12-02T07:16:17,5Z"}`, ProblemInvalidRequest, "determinism.now",
			[]string{"RFC 3339"}},
		{"now with an offset of a day", `{"now":"2026-12-02T07:16:17+24:00"}`, ProblemInvalidRequest, "determinism.now",
			[]string{"RFC 3339"}},
		{"now on a day the month does not have", `{"now":"2026-02-30T00:00:00Z"}`, ProblemInvalidRequest, "determinism.now",
			[]string{"RFC 3339"}},
		{"now before 1970", `{"now":"1969-12-31T23:59:59Z"}`, ProblemInvalidRequest, "determinism.now",
			[]string{"determinism.now 1969-12-31T23:59:59Z is outside 1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z"}},
		{"now before 1970 by its offset", `{"now":"1970-01-01T00:30:00+01:00"}`, ProblemInvalidRequest, "determinism.now",
			[]string{"1969-12-31T23:30:00Z is outside"}},
		{"now after 2262", `{"now":"2262-04-11T23:47:16.000000001Z"}`, ProblemInvalidRequest, "determinism.now",
			[]string{"determinism.now 2262-04-11T23:47:16.000000001Z is outside", "the instants a run's clock can read"}},
		{"an unknown member", `{"seed":"s","clock":"frozen"}`, ProblemUnknownField, "determinism.clock",
			[]string{`unknown field "determinism.clock"`, `"determinism" accepts seed, now`}},
		{"not an object", `true`, ProblemInvalidRequest, "determinism",
			[]string{`"determinism" must be an object, got a JSON bool`}},
		{"an array", `[{"seed":"s"}]`, ProblemInvalidRequest, "determinism",
			[]string{`"determinism" must be an object, got a JSON array`}},
	} {
		for route, body := range map[string]string{
			"evaluations": `{"scriptRef":"` + seedRef + `","determinism":` + tc.determinism + `}`,
			"sandbox":     `{"script":"1","inputJson":"1","determinism":` + tc.determinism + `}`,
		} {
			t.Run(tc.name+"/"+route, func(t *testing.T) {
				decode := DecodeSandboxRequest
				if route == "evaluations" {
					decode = DecodeEvaluationRequest
				}
				_, err := decode([]byte(body), fuzzLimits)
				checkRefusal(t, err)
				var p *Problem
				errors.As(err, &p)
				if p.ProblemType() != tc.typ || p.Status != 400 || p.Field != tc.field {
					t.Errorf("got %s %d field %q, want %s 400 field %q (%s)", p.ProblemType(), p.Status, p.Field, tc.typ, tc.field, p.Detail)
				}
				for _, d := range tc.detail {
					if !strings.Contains(p.Detail, d) {
						t.Errorf("detail %q lacks %q", p.Detail, d)
					}
				}
			})
		}
	}
}

// escapeAll writes the ASCII text s as a JSON string with every byte a
// \uXXXX escape: the longest a client may write it.
func escapeAll(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\u%04x`, s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// MinRequestBytes holds the longest request whose script and input are at
// their bounds: every member present and at its own bound, every key and
// every string written with every byte escaped. The decoder reads it, and
// it takes no more than MinRequestBytes.
func TestMinRequestBytesHoldsAnyEscaping(t *testing.T) {
	l := fuzzLimits
	worst := func(scriptBytes int64) string {
		member := func(key, value string) string { return escapeAll(key) + ":" + value }
		input := `"` + strings.Repeat("i", int(l.MaxInputBytes)-2) + `"`
		return "{" + strings.Join([]string{
			member("script", escapeAll(strings.Repeat(" ", int(scriptBytes)-1)+"1")),
			member("inputJson", escapeAll(input)),
			member("limits", "{"+member("wallClockMs", "9223372036854775807")+","+member("memoryBytes", "9223372036854775807")+"}"),
			member("captureLogs", "false"),
			member("determinism", "{"+member("seed", escapeAll(strings.Repeat("s", 128)))+","+member("now", escapeAll("2262-04-11T23:47:16.854775807+23:59"))+"}"),
		}, ",") + "}"
	}
	body := worst(l.MaxScriptBytes)
	ev, err := DecodeSandboxRequest([]byte(body), l)
	if err != nil || int64(len(ev.Script)) != l.MaxScriptBytes || int64(len(ev.Input)) != l.MaxInputBytes {
		t.Fatalf("the longest request within the bounds: %v (script %d, input %d bytes)", err, len(ev.Script), len(ev.Input))
	}
	least := MinRequestBytes(l.MaxScriptBytes, l.MaxInputBytes)
	if n := int64(len(body)); n > least {
		t.Errorf("it is %d bytes, over MinRequestBytes %d", n, least)
	}
	if want := 6*(l.MaxScriptBytes+l.MaxInputBytes) + 64<<10; least != want {
		t.Errorf("MinRequestBytes = %d, want 6 × (script + input) + 64 KiB = %d", least, want)
	}
}
