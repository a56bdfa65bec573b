package handler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
)

// Every outcome kind through POST /v1/sandbox/evaluate: the object of docs/spi.md, "Outcomes",
// byte for byte, with no other members.
func TestSandboxOutcomes(t *testing.T) {
	v := newEnv(t)
	cases := []struct {
		name, script, input string
		limits              map[string]any
		want                string
	}{
		{"ok", "input.a", `{"a":[1,"x",null]}`, nil, `{"ok":true,"value":[1,"x",null]}`},
		{"ok keeps the engine's serialisation", `({b: 1, a: "<&>"})`, "null", nil, `{"ok":true,"value":{"b":1,"a":"<&>"}}`},
		{"threw with name", "throw new Error('boom')", "null", nil, `{"ok":false,"kind":"threw","name":"Error","message":"boom"}`},
		{"threw without name", "throw 42", "null", nil, `{"ok":false,"kind":"threw","message":"42"}`},
		{"threw an empty message", "throw new Error()", "null", nil, `{"ok":false,"kind":"threw","name":"Error","message":""}`},
		{"threw an empty string", `throw ""`, "null", nil, `{"ok":false,"kind":"threw","message":""}`},
		{"threw a lone surrogate", `throw "a\ud800b"`, "null", nil, `{"ok":false,"kind":"threw","message":"a\ud800b"}`},
		{"limit memory", allocationBomb, "null", map[string]any{"memoryBytes": 16 << 20}, `{"ok":false,"kind":"limit","limit":"memory"}`},
		{"limit wallClock", "while (true) {}", "null", map[string]any{"wallClockMs": 100}, `{"ok":false,"kind":"limit","limit":"wallClock"}`},
		{"inputTooLarge", "1", `"` + strings.Repeat("ab", 600<<10) + `"`, map[string]any{"memoryBytes": 1 << 20}, `{"ok":false,"kind":"inputTooLarge"}`},
		{"infrastructure", scriptInfrastructure, "null", nil, `{"ok":false,"kind":"infrastructure","message":"test: the machine room is on fire"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"script": tc.script, "inputJson": tc.input}
			if tc.limits != nil {
				body["limits"] = tc.limits
			}
			wantBody(t, v.post("/v1/sandbox/evaluate", body), 200, tc.want)
		})
	}
	t.Run("by reference", func(t *testing.T) {
		ref := v.put("input.map(x => x * 2)")
		wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"scriptRef": ref, "inputJson": "[1,2,3]"}), 200, `{"ok":true,"value":[2,4,6]}`)
	})
}

func TestSandboxCPULimit(t *testing.T) {
	v := newEnv(t, withEngine(cpuEngine()))
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "while (true) {}", "inputJson": "null"}), 200,
		`{"ok":false,"kind":"limit","limit":"cpu"}`)
}

func TestSandboxFetch(t *testing.T) {
	v := newEnv(t)
	missing := contentref.RefOf([]byte("never stored")).String()
	tampered := contentref.RefOf([]byte("the real script")).String()
	v.store.set(tampered, func() ([]byte, error) { return []byte("something else"), nil })
	down := contentref.RefOf([]byte("in a store that is down")).String()
	v.store.set(down, func() ([]byte, error) { return nil, fmt.Errorf("%w: test outage", contentref.ErrUnavailable) })
	panicked := contentref.RefOf([]byte("in a store that panicked")).String()
	v.store.set(panicked, func() ([]byte, error) { return nil, fmt.Errorf("%w while reading it", contentref.ErrPanicked) })
	huge := strings.Repeat("1;", int(testLimits.MaxScriptBytes))
	bigRef := contentref.RefOf([]byte(huge)).String()
	v.store.set(bigRef, func() ([]byte, error) { return []byte(huge), nil })

	spi := func(ref string) response {
		return v.post("/v1/sandbox/evaluate", map[string]any{"scriptRef": ref, "inputJson": "null"})
	}
	t.Run("missing", func(t *testing.T) {
		p := wantProblem(t, spi(missing), 404, "script-not-found", false, missing)
		if p["field"] != "scriptRef" {
			t.Fatalf("field %v", p["field"])
		}
	})
	t.Run("integrity", func(t *testing.T) {
		wantProblem(t, spi(tampered), 500, "script-integrity", false, "do not hash", tampered)
	})
	t.Run("unavailable", func(t *testing.T) {
		r := spi(down)
		wantProblem(t, r, 503, "store-unavailable", true)
		if r.header.Get("Retry-After") == "" {
			t.Fatal("no Retry-After")
		}
	})
	t.Run("store panicked (recovered by contentstore.Cache)", func(t *testing.T) {
		p := wantProblem(t, spi(panicked), 500, "internal", false)
		if p["detail"] != "internal error" {
			t.Fatalf("detail %q", p["detail"])
		}
	})
	t.Run("stored script over maxScriptBytes", func(t *testing.T) {
		p := wantProblem(t, spi(bigRef), 413, "script-too-large", false, "maxScriptBytes")
		if p["limit"] != "maxScriptBytes" || p["limitValue"] != float64(testLimits.MaxScriptBytes) {
			t.Fatalf("limit %v %v", p["limit"], p["limitValue"])
		}
	})
}

func TestSandboxUntyped(t *testing.T) {
	v := newEnv(t)
	t.Run("malformed outcome", func(t *testing.T) {
		wantProblem(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": scriptMalformed, "inputJson": "null"}), 500, "malformed-outcome", false, "bogus")
	})
	t.Run("backend did not settle", func(t *testing.T) {
		v := newEnv(t, stuckGraces(10*time.Millisecond))
		r := v.post("/v1/sandbox/evaluate", map[string]any{"script": scriptHang, "inputJson": "null", "limits": map[string]any{"wallClockMs": 1}})
		wantProblem(t, r, 503, "backend-did-not-settle", true, "wall clock")
	})
	t.Run("panic", func(t *testing.T) {
		r := v.post("/v1/sandbox/evaluate", map[string]any{"script": scriptPanic, "inputJson": "null"})
		p := wantProblem(t, r, 500, "internal", false)
		if p["detail"] != "internal error" || strings.Contains(string(r.body), "secret") {
			t.Fatalf("panic detail leaked: %s", r)
		}
		wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "6 * 7", "inputJson": "null"}), 200, `{"ok":true,"value":42}`)
	})
}

func TestSandboxNoStore(t *testing.T) {
	v := newEnv(t, withoutStore())
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "input + 1", "inputJson": "41"}), 200, `{"ok":true,"value":42}`)
	ref := contentref.RefOf([]byte("1")).String()
	wantProblem(t, v.post("/v1/sandbox/evaluate", map[string]any{"scriptRef": ref, "inputJson": "null"}), http.StatusServiceUnavailable, "no-script-store", false)
}

// The SPI route writes every outcome of api/testdata byte for byte as the
// golden file holds it, which the Go and TypeScript clients decode.
func TestGoldenOutcomesThroughTheRoute(t *testing.T) {
	names, err := filepath.Glob("../api/testdata/outcome/*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no golden outcomes: %v", err)
	}
	v := newEnv(t)
	for _, n := range names {
		doc, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		doc = bytes.TrimSuffix(doc, []byte("\n"))
		r := v.post("/v1/sandbox/evaluate", map[string]any{"script": scriptOutcome + string(doc), "inputJson": "null"})
		if r.status != 200 || !bytes.Equal(bytes.TrimSuffix(r.body, []byte("\n")), doc) {
			t.Errorf("%s: the route answers %s, want %s", filepath.Base(n), r, doc)
		}
	}
}

// A replayable run over HTTP, on both routes, through the validating
// middleware: the same request answers the same value, the clocks read the
// instant asked for (or the default), and both routes derive the same seed
// from the same script and input, however the input is spelt.
func TestReplayableRuns(t *testing.T) {
	v := newEnv(t)
	const script = "[Math.random(), Math.random(), new Date().toISOString(), Date.now()]"
	ref := v.put(script)
	value := func(r response) string {
		t.Helper()
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var ans struct {
			OK    bool            `json:"ok"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(r.body, &ans); err != nil || !ans.OK {
			t.Fatalf("answer %s: %v", r.body, err)
		}
		return string(ans.Value)
	}
	seeded := map[string]any{"script": script, "inputJson": `{"a":1}`, "determinism": map[string]any{"seed": "flow-42/step-3", "now": "2026-12-02T08:16:17.5+01:00"}}
	first := value(v.post("/v1/sandbox/evaluate", seeded))
	if again := value(v.post("/v1/sandbox/evaluate", seeded)); again != first {
		t.Errorf("the same replayable run answered %s, then %s", first, again)
	}
	if !strings.Contains(first, `"2026-12-02T07:16:17.500Z"`) {
		t.Errorf("the clock does not read the instant asked for: %s", first)
	}

	bySPI := value(v.post("/v1/sandbox/evaluate", map[string]any{"script": script, "inputJson": `{"a":1}`, "determinism": map[string]any{}}))
	byEffect := value(v.post("/v1/evaluations", map[string]any{"scriptRef": ref, "input": map[string]any{"a": 1}, "determinism": map[string]any{}}))
	if bySPI != byEffect || bySPI == first || !strings.Contains(bySPI, `"2000-01-01T00:00:00.000Z"`) {
		t.Errorf("the defaults: %s on the SPI route, %s through the effect; want one value, the default instant, another seed than %s", bySPI, byEffect, first)
	}

	// the default seed is the input's value, not its spelling, on both
	// routes: every spelling of {"a":1} draws what it drew above, and
	// another value other numbers
	scriptJSON, _ := json.Marshal(script)
	for in, same := range map[string]bool{`{ "a": 1 }`: true, `{"a":1.0}`: true, `{"a":10e-1}`: true, "{\n \"a\" : 1\n}": true, `{"a":2}`: false} {
		inJSON, _ := json.Marshal(in)
		spiRun := value(v.post("/v1/sandbox/evaluate", `{"script":`+string(scriptJSON)+`,"inputJson":`+string(inJSON)+`,"determinism":{}}`))
		effectRun := value(v.post("/v1/evaluations", `{"scriptRef":"`+ref+`","input":`+in+`,"determinism":{}}`))
		if spiRun != effectRun || (spiRun == bySPI) != same {
			t.Errorf("input %s: %s on the SPI route, %s through the effect; {\"a\":1} drew %s (the same: want %v)", in, spiRun, effectRun, bySPI, same)
		}
	}

	plain := map[string]any{"script": script, "inputJson": `{"a":1}`}
	if a, b := value(v.post("/v1/sandbox/evaluate", plain)), value(v.post("/v1/sandbox/evaluate", plain)); a == b {
		t.Errorf("without determinism two runs drew the same numbers at the same instant: %s", a)
	}
}

// What no retry can change is an outcome on POST /v1/sandbox/evaluate, never
// a problem (docs/spi.md, "Answers no retry can change"): a script over
// maxScriptBytes is its RangeError naming both sizes, a memory limit below
// minMemoryBytes the memory limit, an input over maxInputBytes
// inputTooLarge, one order deciding between them; and a limit above its
// maximum runs at the maximum. POST /v1/evaluations answers the same as
// channels. Each answer has its usage, and nothing ran for a settled one.
func TestSandboxAnswersWhatNoRetryCanChange(t *testing.T) {
	v := newEnv(t, withConfig(func(c *handler.Config) {
		c.Limits.MaxWallClock, c.Limits.DefaultWallClock = 300*time.Millisecond, 200*time.Millisecond
	}))
	l := v.cfg.Limits
	script := "1;" + strings.Repeat(" ", int(l.MaxScriptBytes)-1)
	input := `"` + strings.Repeat("i", int(l.MaxInputBytes)-1) + `"`
	rangeError := fmt.Sprintf(`{"ok":false,"kind":"threw","name":"RangeError","message":"the script is %d bytes, over the service's maxScriptBytes of %d"}`,
		l.MaxScriptBytes+1, l.MaxScriptBytes)
	for _, tc := range []struct {
		name   string
		body   map[string]any
		want   string
		memory int64 // the usage's memoryLimitBytes
	}{
		{"a script over maxScriptBytes", map[string]any{"script": script, "inputJson": "null"}, rangeError, l.DefaultMemoryBytes},
		{"memory below minMemoryBytes", map[string]any{"script": "1", "inputJson": "null", "limits": map[string]any{"memoryBytes": l.MinMemoryBytes - 1}},
			`{"ok":false,"kind":"limit","limit":"memory"}`, l.MinMemoryBytes - 1},
		{"a byte of memory", map[string]any{"script": "1", "inputJson": "null", "limits": map[string]any{"memoryBytes": 1}},
			`{"ok":false,"kind":"limit","limit":"memory"}`, 1},
		{"an input over maxInputBytes", map[string]any{"script": "1", "inputJson": input}, `{"ok":false,"kind":"inputTooLarge"}`, l.DefaultMemoryBytes},
		{"the script first", map[string]any{"script": script, "inputJson": input, "limits": map[string]any{"memoryBytes": 1}}, rangeError, 1},
		{"then the memory", map[string]any{"script": "1", "inputJson": input, "limits": map[string]any{"memoryBytes": 1}},
			`{"ok":false,"kind":"limit","limit":"memory"}`, 1},
		{"a wall clock above the maximum runs", map[string]any{"script": "input.a + 1", "inputJson": `{"a":1}`, "limits": map[string]any{"wallClockMs": 3_600_000}},
			`{"ok":true,"value":2}`, l.DefaultMemoryBytes},
		{"and meets the maximum", map[string]any{"script": "for (;;) {}", "inputJson": "null", "limits": map[string]any{"wallClockMs": 99999999999999999}},
			`{"ok":false,"kind":"limit","limit":"wallClock"}`, l.DefaultMemoryBytes},
		{"a memory limit above the maximum runs at it", map[string]any{"script": "1", "inputJson": "null", "limits": map[string]any{"memoryBytes": l.MaxMemoryBytes * 4}},
			`{"ok":true,"value":1}`, l.MaxMemoryBytes},
		{"and meets it", map[string]any{"script": `"x".repeat(96 << 20).length`, "inputJson": "null", "limits": map[string]any{"memoryBytes": l.MaxMemoryBytes * 4}},
			`{"ok":false,"kind":"limit","limit":"memory"}`, l.MaxMemoryBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := v.post("/v1/sandbox/evaluate", tc.body)
			wantBody(t, r, 200, tc.want)
			if r.usage == nil || r.usage.MemoryLimitBytes != tc.memory {
				t.Errorf("usage %+v, want a memory limit of %d", r.usage, tc.memory)
			}
			if took := time.Since(start); strings.Contains(tc.want, "wallClock") && took > 20*time.Second {
				t.Errorf("the runaway ran %v, not the maximum's 300 ms", took)
			}
		})
	}

	ref := v.put("input")
	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"memory below minMemoryBytes", map[string]any{"scriptRef": ref, "limits": map[string]any{"memoryBytes": 4096}},
			`{"ok":false,"failure":{"channel":"limitExceeded","kind":"memory"}}`},
		{"an input over maxInputBytes", map[string]any{"scriptRef": ref, "input": json.RawMessage(input)},
			fmt.Sprintf(`{"ok":false,"failure":{"channel":"inputTooLarge","limitBytes":%d}}`, l.MaxInputBytes)},
		{"limits above the maxima run", map[string]any{"scriptRef": ref, "input": 7, "limits": map[string]any{"wallClockMs": 3_600_000, "memoryBytes": 1 << 40}},
			`{"ok":true,"value":7}`},
	} {
		t.Run("evaluations: "+tc.name, func(t *testing.T) {
			wantBody(t, v.post("/v1/evaluations", tc.body), 200, tc.want)
		})
	}
}

// A request whose script and input are within their bounds arrives however
// a client escapes them: every byte of both written as a \uXXXX escape,
// six times their length, is answered, not refused as a body over
// maxRequestBytes. A body over maxRequestBytes is still the 413.
func TestEscapedRequestsWithinTheBoundsArrive(t *testing.T) {
	v := newEnv(t)
	l := v.cfg.Limits
	escapeAll := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, `\u%04x`, s[i])
		}
		return b.String()
	}
	script := "input.length" + strings.Repeat(" ", int(l.MaxScriptBytes)-len("input.length"))
	input := `"` + strings.Repeat("i", int(l.MaxInputBytes)-2) + `"`
	body := `{"script":"` + escapeAll(script) + `","inputJson":"` + escapeAll(input) + `"}`
	if n := int64(len(body)); n <= 6*(l.MaxScriptBytes+l.MaxInputBytes) {
		t.Fatalf("the body is %d bytes: want every byte escaped", n)
	}
	wantBody(t, v.post("/v1/sandbox/evaluate", body), 200, fmt.Sprintf(`{"ok":true,"value":%d}`, l.MaxInputBytes-2))

	over := body[:len(body)-1] + strings.Repeat(" ", int(l.MaxRequestBytes)-len(body)+1) + "}"
	wantProblem(t, v.post("/v1/sandbox/evaluate", over), 413, "request-too-large", false, strconv.FormatInt(l.MaxRequestBytes, 10))
}
