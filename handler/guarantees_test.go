package handler_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/effect"
)

// A backend that ignores its context loses the race against wall clock +
// grace on both routes, whatever the logging: both run through the effect,
// so the answer is the retryable 503 backend-did-not-settle, not a request
// held for as long as the backend keeps running. The concurrency gate stays
// shut while that backend runs (at most the effect's stop grace, here far
// longer than the test), so the next request is refused, and opens once it
// returns.
func TestABackendThatIgnoresItsContextLosesAndHoldsTheGate(t *testing.T) {
	for _, observed := range []bool{true, false} {
		for _, route := range []string{"/v1/sandbox/evaluate", "/v1/evaluations"} {
			t.Run(fmt.Sprintf("%s observed=%v", route, observed), func(t *testing.T) {
				opts := []option{withEffect(func(o *effect.Options) { o.StopGrace = time.Minute })}
				if !observed {
					opts = append(opts, unobserved())
				}
				v := newEnv(t, opts...)
				body := map[string]any{"script": scriptIgnore, "inputJson": "null", "limits": map[string]any{"wallClockMs": 100}}
				if route == "/v1/evaluations" {
					body = map[string]any{"scriptRef": v.put(scriptIgnore), "limits": map[string]any{"wallClockMs": 100}}
				}
				done := make(chan response, 1)
				go func() {
					r, _ := v.do(context.Background(), http.MethodPost, route, body, nil)
					done <- r
				}()
				select {
				case <-v.backend.started:
				case <-time.After(10 * time.Second):
					t.Fatal("the run did not start")
				}
				// The effect gives up at 100 ms + the effect's 1 s grace; three
				// seconds is well past it, and the backend still runs.
				time.Sleep(3 * time.Second)
				select {
				case r := <-done:
					t.Fatalf("answered while the backend still runs, so the gate opened with the engine busy: %s", r)
				default:
				}
				wantProblem(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "1", "inputJson": "null"}), 429, "busy", true)

				close(v.backend.release)
				select {
				case r := <-done:
					wantProblem(t, r, 503, "backend-did-not-settle", true)
				case <-time.After(10 * time.Second):
					t.Fatal("no answer once the backend returned")
				}
				wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "1", "inputJson": "null"}), 200, `{"ok":true,"value":1}`)
			})
		}
	}
}

// A backend that never returns holds a /v1/sandbox/evaluate request no
// longer than wall clock + the effect's grace + its stop grace (1.1 s + 1 s
// here): the answer is the documented 503 backend-did-not-settle, not a
// request held for as long as the backend runs.
func TestSPIRouteDoesNotWaitForAStuckBackend(t *testing.T) {
	v := newEnv(t)
	t.Cleanup(func() { close(v.backend.release) })
	start := time.Now()
	r := v.post("/v1/sandbox/evaluate", map[string]any{"script": scriptIgnore, "inputJson": "null", "limits": map[string]any{"wallClockMs": 100}})
	took := time.Since(start)
	wantProblem(t, r, 503, "backend-did-not-settle", true)
	if took < 2*time.Second || took > 10*time.Second {
		t.Errorf("answered after %v; want about 2.1 s (wall clock 0.1 s + the effect's grace 1 s + the handler's 1 s), within a loaded machine's slack", took)
	}
}
