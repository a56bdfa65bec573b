package handler

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

var fuzzLimits = Limits{
	DefaultWallClock: time.Second, MaxWallClock: 10 * time.Second,
	DefaultMemoryBytes: 16 << 20, MaxMemoryBytes: 64 << 20,
	MaxInputBytes: 4 << 10, MaxOutputBytes: 4 << 10, MaxScriptBytes: 4 << 10, MaxRequestBytes: 64 << 10,
}

const seedRef = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"

// checkProblem is the fuzz property for a refusal: a 4xx problem of a
// documented type that encodes.
func checkProblem(t *testing.T, p *problem) {
	t.Helper()
	if p.status < 400 || p.status > 499 {
		t.Fatalf("decoder problem with status %d: %+v", p.status, p)
	}
	if problemTitles[p.slug] == "" || p.detail == "" {
		t.Fatalf("problem without a documented type or a detail: %+v", p)
	}
	b, err := p.MarshalJSON()
	if err != nil || !json.Valid(b) || !utf8.Valid(b) {
		t.Fatalf("problem does not encode: %v %q", err, b)
	}
}

func checkLimits(t *testing.T, l struct {
	wall time.Duration
	mem  int64
}) {
	t.Helper()
	if l.wall <= 0 || l.wall > fuzzLimits.MaxWallClock || l.mem <= 0 || l.mem > fuzzLimits.MaxMemoryBytes {
		t.Fatalf("accepted limits outside the bounds: %+v", l)
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
		"{\"scriptRef\":\"\xed\xa0\x80\"}",
		`[` + strings.Repeat("[", 50) + `]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, p := decodeEvaluation(body, fuzzLimits)
		if p != nil {
			checkProblem(t, p)
			return
		}
		if req.ScriptRef.IsZero() || !json.Valid(req.Input) || (req.ExpectedOutputShapeHash != "" && !effect.ValidShapeHash(req.ExpectedOutputShapeHash)) {
			t.Fatalf("accepted an invalid request: %+v", req)
		}
		checkLimits(t, struct {
			wall time.Duration
			mem  int64
		}{req.Limits.WallClock, req.Limits.MemoryBytes})
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
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, p := decodeSandboxEvaluate(body, fuzzLimits)
		if p != nil {
			checkProblem(t, p)
			return
		}
		if req.HasScript == !req.ScriptRef.IsZero() {
			t.Fatalf("accepted a request without exactly one script: %+v", req)
		}
		if int64(len(req.Script)) > fuzzLimits.MaxScriptBytes || int64(len(req.InputJSON)) > fuzzLimits.MaxInputBytes {
			t.Fatalf("accepted a request over the bounds: script %d, input %d bytes", len(req.Script), len(req.InputJSON))
		}
		if !json.Valid([]byte(req.InputJSON)) || !utf8.ValidString(req.InputJSON) {
			t.Fatalf("accepted inputJson that is not JSON text: %q", req.InputJSON)
		}
		checkLimits(t, struct {
			wall time.Duration
			mem  int64
		}{req.Limits.WallClock, req.Limits.MemoryBytes})
	})
}

// The checker agrees with encoding/json on what is JSON (it is stricter only
// about UTF-8, duplicate keys and depth).
func FuzzJSONChecker(f *testing.F) {
	for _, s := range []string{`{}`, `[1,2.5e-3,"x\u00e9",true,false,null]`, `{"a":{"a":1}}`, `{"a":1,"a":2}`, `01`, `1.`, `"\x"`, "\"\t\"", ` {"a" : [ ] } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := jsonProblem(data, jsontext.Validate(data), "the text", "")
		if p == nil && !json.Valid(data) {
			t.Fatalf("checker accepted what encoding/json refuses: %q", data)
		}
		if p != nil && p.slug == pMalformedJSON && json.Valid(data) && utf8.Valid(data) && !strings.Contains(p.detail, "levels deep") {
			t.Fatalf("checker refused valid JSON: %q: %s", data, p.detail)
		}
	})
}

// Every problem type the handler can send has a section in
// docs/problems.md, and the document names no type the handler lacks.
func TestProblemsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/problems.md")
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### ([a-z-]+)$`).FindAllStringSubmatch(string(doc), -1) {
		headings[m[1]] = true
	}
	for slug := range problemTitles {
		if !headings[slug] {
			t.Errorf("docs/problems.md has no section %q", "### "+slug)
		}
	}
	for h := range headings {
		if problemTitles[h] == "" {
			t.Errorf("docs/problems.md documents %q, which the handler never sends", h)
		}
	}
}
