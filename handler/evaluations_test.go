package handler_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

const allocationBomb = "const a = []; while (true) a.push('x'.repeat(1000) + a.length)"

func shapeHash(t *testing.T, text string) string {
	t.Helper()
	h, err := spi.ShapeHash([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Every outcome of the effect through POST /v1/evaluations, compared byte for
// byte.
func TestEvaluationsOutcomes(t *testing.T) {
	v := newEnv(t)
	missing := contentref.RefOf([]byte("never stored")).String()
	bigInput := `"` + strings.Repeat("x", int(testLimits.MaxInputBytes)) + `"`
	cases := []struct {
		name, script string
		body         map[string]any // besides scriptRef
		want         string
	}{
		{"ok", "input.a + 1", map[string]any{"input": map[string]any{"a": 1}}, `{"ok":true,"value":2}`},
		{"value is the JSON round-trip", `({b: 1, a: [1.0, "<&>", 1e400], c: -0})`, nil, `{"ok":true,"value":{"b":1,"a":[1,"<&>",null],"c":0}}`},
		{"input defaults to null", "input === null", nil, `{"ok":true,"value":true}`},
		{"scriptError with name", "throw new TypeError('bad thing')", nil, `{"ok":false,"failure":{"channel":"scriptError","name":"TypeError","message":"bad thing"}}`},
		{"scriptError without name", "throw 42", nil, `{"ok":false,"failure":{"channel":"scriptError","message":"42"}}`},
		{"syntax error", "let = ;", nil, `{"ok":false,"failure":{"channel":"scriptError","name":"SyntaxError","message":"unexpected token in expression: ';'"}}`},
		{"limitExceeded memory", allocationBomb, map[string]any{"limits": map[string]any{"memoryBytes": 16 << 20}},
			`{"ok":false,"failure":{"channel":"limitExceeded","kind":"memory"}}`},
		{"limitExceeded wallClock", "while (true) {}", map[string]any{"limits": map[string]any{"wallClockMs": 100}},
			`{"ok":false,"failure":{"channel":"limitExceeded","kind":"wallClock"}}`},
		{"limitExceeded output", "'x'.repeat(100000)", nil, `{"ok":false,"failure":{"channel":"limitExceeded","kind":"output"}}`},
		{"shape matches", "({a: 1})", map[string]any{"expectedOutputShapeHash": shapeHash(t, `{"a":7}`)}, `{"ok":true,"value":{"a":1}}`},
		{"shapeMismatch", "({a: 1})", map[string]any{"expectedOutputShapeHash": shapeHash(t, `{"b":"x"}`)},
			fmt.Sprintf(`{"ok":false,"failure":{"channel":"shapeMismatch","expected":%q,"observed":%q}}`, shapeHash(t, `{"b":"x"}`), shapeHash(t, `{"a":1}`))},
		{"inputTooLarge over maxInputBytes", "1", map[string]any{"input": json.RawMessage(bigInput)},
			fmt.Sprintf(`{"ok":false,"failure":{"channel":"inputTooLarge","limitBytes":%d}}`, testLimits.MaxInputBytes)},
		{"inputTooLarge in the engine's memory", "1", map[string]any{"input": strings.Repeat("ab", 600<<10), "limits": map[string]any{"memoryBytes": 1 << 20}},
			fmt.Sprintf(`{"ok":false,"failure":{"channel":"inputTooLarge","limitBytes":%d}}`, testLimits.MaxInputBytes)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"scriptRef": v.put(tc.script)}
			for k, val := range tc.body {
				body[k] = val
			}
			wantBody(t, v.post("/v1/evaluations", body), 200, tc.want)
		})
	}
	t.Run("scriptMissing", func(t *testing.T) {
		wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": missing}), 200,
			fmt.Sprintf(`{"ok":false,"failure":{"channel":"scriptMissing","scriptRef":%q}}`, missing))
	})
}

func TestEvaluationsCPULimit(t *testing.T) {
	v := newEnv(t, withEngine(cpuEngine()))
	ref := v.put("while (true) {}")
	wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": ref}), 200,
		`{"ok":false,"failure":{"channel":"limitExceeded","kind":"cpu"}}`)
}

func TestEvaluationsCaptureLogs(t *testing.T) {
	v := newEnv(t)
	ok := v.put(`console.log("hello", {a: 1}); console.warn("careful"); "done"`)
	wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": ok, "captureLogs": true}), 200,
		`{"ok":true,"value":"done","logs":"hello {\"a\":1}\n[warn] careful\n"}`)
	// Without captureLogs there is no logs member at all.
	wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": ok, "captureLogs": false}), 200, `{"ok":true,"value":"done"}`)
	wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": ok}), 200, `{"ok":true,"value":"done"}`)
	// Logs come with a failure too, and a lone surrogate keeps its escape.
	threw := v.put(`console.log("before \ud800"); throw new Error("after")`)
	wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": threw, "captureLogs": true}), 200,
		`{"ok":false,"failure":{"channel":"scriptError","name":"Error","message":"after"},"logs":"before \ud800\n"}`)
	// A failure before the run has empty logs.
	wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": contentref.RefOf([]byte("x")).String(), "captureLogs": true}), 200,
		fmt.Sprintf(`{"ok":false,"failure":{"channel":"scriptMissing","scriptRef":%q},"logs":""}`, contentref.RefOf([]byte("x")).String()))
}

// Untyped failures are 5xx problems that say whether a retry can help.
func TestEvaluationsUntyped(t *testing.T) {
	v := newEnv(t)
	tampered := contentref.RefOf([]byte("the real script")).String()
	v.store.set(tampered, func() ([]byte, error) { return []byte("something else"), nil })
	down := contentref.RefOf([]byte("in a store that is down")).String()
	v.store.set(down, func() ([]byte, error) { return nil, fmt.Errorf("%w: test outage", contentref.ErrUnavailable) })
	denied := contentref.RefOf([]byte("in a store that says no")).String()
	v.store.set(denied, func() ([]byte, error) { return nil, fmt.Errorf("%w: test", contentref.ErrPermission) })
	big := contentref.RefOf([]byte("a big one")).String()
	v.store.set(big, func() ([]byte, error) { return nil, fmt.Errorf("%w: test", contentref.ErrTooLarge) })
	panicked := contentref.RefOf([]byte("in a store that panicked")).String()
	v.store.set(panicked, func() ([]byte, error) { return nil, fmt.Errorf("%w while reading it", contentref.ErrPanicked) })
	bigAtCap := contentref.RefOf([]byte("over the server's cap")).String()
	v.store.set(bigAtCap, func() ([]byte, error) {
		return nil, &contentref.TooLargeError{Object: "gs://b/x", Size: 70000, Limit: testLimits.MaxScriptBytes}
	})
	bigSmallStore := contentref.RefOf([]byte("over a smaller store's cap")).String()
	v.store.set(bigSmallStore, func() ([]byte, error) {
		return nil, &contentref.TooLargeError{Object: "gs://b/y", Size: 5000, Limit: 4096}
	})

	t.Run("integrity mismatch", func(t *testing.T) {
		wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": tampered}), 500, "script-integrity", false, tampered, "do not hash")
	})
	t.Run("store unavailable", func(t *testing.T) {
		r := v.post("/v1/evaluations", map[string]any{"scriptRef": down})
		wantProblem(t, r, 503, "store-unavailable", true, down)
		if strings.Contains(string(r.body), "test outage") {
			t.Fatalf("the store's own error leaked: %s", r)
		}
	})
	t.Run("store panicked (recovered by contentstore.Cache)", func(t *testing.T) {
		p := wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": panicked}), 500, "internal", false)
		if p["detail"] != "internal error" {
			t.Fatalf("detail %q", p["detail"])
		}
	})
	t.Run("store refused", func(t *testing.T) {
		wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": denied}), 500, "store-failed", false, "refused")
	})
	t.Run("stored script too large", func(t *testing.T) {
		// the store's maximum unknown, or the server's: the server's bound is named
		for _, tc := range []struct {
			ref    string
			detail []string
		}{
			{big, []string{big, "maxScriptBytes of 65536"}},
			{bigAtCap, []string{bigAtCap, "70000 bytes", "maxScriptBytes of 65536"}},
		} {
			p := wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": tc.ref}), 413, "script-too-large", false, tc.detail...)
			if p["limit"] != "maxScriptBytes" || p["limitValue"] != float64(testLimits.MaxScriptBytes) || p["field"] != "scriptRef" {
				t.Errorf("%s: limit %v=%v, field %v", tc.ref, p["limit"], p["limitValue"], p["field"])
			}
			if strings.Contains(p["detail"].(string), "gs://") {
				t.Errorf("the store's object name leaked: %v", p["detail"])
			}
		}
		// a store whose own maximum is below the server's: that one applied
		p := wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": bigSmallStore}), 413, "script-too-large", false,
			"5000 bytes", "store's maximum script size of 4096 bytes")
		if _, ok := p["limit"]; ok {
			t.Errorf("the server's limit named where the store's applied: %v", p)
		}
	})
	t.Run("infrastructure outcome", func(t *testing.T) {
		wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": v.put(scriptInfrastructure)}), 503, "backend-unavailable", true,
			"the machine room is on fire", "retry")
	})
	t.Run("malformed outcome", func(t *testing.T) {
		wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": v.put(scriptMalformed)}), 500, "malformed-outcome", false, "bogus")
	})
	t.Run("backend did not settle", func(t *testing.T) {
		v := newEnv(t, stuckGraces(10*time.Millisecond))
		r := v.post("/v1/evaluations", map[string]any{"scriptRef": v.put(scriptHang), "limits": map[string]any{"wallClockMs": 1}})
		wantProblem(t, r, 503, "backend-did-not-settle", true)
	})
	t.Run("panic", func(t *testing.T) {
		r := v.post("/v1/evaluations", map[string]any{"scriptRef": v.put(scriptPanic)})
		p := wantProblem(t, r, 500, "internal", false)
		if p["detail"] != "internal error" || strings.Contains(string(r.body), "secret") {
			t.Fatalf("panic detail leaked: %s", r)
		}
		// The next request works.
		wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": v.put("1 + 1")}), 200, `{"ok":true,"value":2}`)
	})
}

func TestEvaluationsNoStore(t *testing.T) {
	v := newEnv(t, withoutStore())
	ref := contentref.RefOf([]byte("1")).String()
	wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": ref}), http.StatusServiceUnavailable, "no-script-store", false, "no script store configured")
}
