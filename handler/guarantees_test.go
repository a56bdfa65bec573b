package handler_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
)

// stuckGraces makes the effect give up on a backend a few milliseconds past
// its wall clock: the deadline and the race are the effect's rules, tested
// in effect (race_test.go, caller_test.go) on a fake clock; here only what
// the handler makes of them matters, so the tests need not wait a real
// second for them.
func stuckGraces(stop time.Duration) option {
	return withEffect(func(o *effect.Options) { o.BackendGrace, o.StopGrace = 10*time.Millisecond, stop })
}

// stuckBody is a request on route for scriptIgnore with a wall clock of a
// millisecond.
func stuckBody(v *env, route string) map[string]any {
	limits := map[string]any{"wallClockMs": 1}
	if route == "/v1/evaluations" {
		return map[string]any{"scriptRef": v.put(scriptIgnore), "limits": limits}
	}
	return map[string]any{"script": scriptIgnore, "inputJson": "null", "limits": limits}
}

// A backend that ignores its context loses the effect's race on both routes,
// whatever the logging, and the answer is the retryable 503
// backend-did-not-settle. The handler holds the concurrency gate until
// Effect.Run returns, which it does only once that backend returns (or its
// stop grace, here far longer than the test, passes): the next request is
// refused while the backend still runs, and admitted once it returned.
func TestABackendThatIgnoresItsContextLosesAndHoldsTheGate(t *testing.T) {
	for _, observed := range []bool{true, false} {
		for _, route := range []string{"/v1/sandbox/evaluate", "/v1/evaluations"} {
			t.Run(fmt.Sprintf("%s observed=%v", route, observed), func(t *testing.T) {
				opts := []option{stuckGraces(time.Hour)}
				if !observed {
					opts = append(opts, unobserved())
				}
				v := newEnv(t, opts...)
				done := make(chan response, 1)
				go func() {
					r, _ := v.do(context.Background(), http.MethodPost, route, stuckBody(v, route), nil)
					done <- r
				}()
				await(t, v.backend.started, "the run to start")
				await(t, v.backend.ignored, "the effect's deadline to pass")
				if observed {
					// the effect says when it stopped waiting for the backend
					v.awaitLog(t, "sandbox backend did not settle")
				}
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
				case <-time.After(time.Minute):
					t.Fatal("no answer once the backend returned")
				}
				wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "1", "inputJson": "null"}), 200, `{"ok":true,"value":1}`)
			})
		}
	}
}

// A backend that never returns holds a request, and the concurrency gate, no
// longer than the effect's deadline and its stop grace: the answer is the
// documented 503 backend-did-not-settle, and the next request is admitted
// while that backend still runs.
func TestNoRouteWaitsForAStuckBackend(t *testing.T) {
	for _, route := range []string{"/v1/sandbox/evaluate", "/v1/evaluations"} {
		t.Run(route, func(t *testing.T) {
			v := newEnv(t, stuckGraces(10*time.Millisecond))
			t.Cleanup(func() { close(v.backend.release) })
			// a handler that waited for the backend would wait for ever
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := v.do(ctx, http.MethodPost, route, stuckBody(v, route), nil)
			if err != nil {
				t.Fatalf("no answer while the backend is stuck: %v", err)
			}
			wantProblem(t, r, 503, "backend-did-not-settle", true)
			wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "1", "inputJson": "null"}), 200, `{"ok":true,"value":1}`)
		})
	}
}

// No value after the deadline, on both routes (docs/spi.md, "Timing"): a
// run that overruns its wall clock inside one builtin, and ends on its own
// well inside the hard kill's grace of a minute, answers
// the wall-clock limit. The deadline is the run's own: a script that took
// longer to fetch than its whole wall clock, and then ran within it, keeps
// its value.
func TestNoValueAfterTheDeadline(t *testing.T) {
	var stuck atomic.Int32
	engine := newEngine(quickjs.WithHardKill(quickjs.HardKillWatchdog, time.Minute),
		quickjs.WithOnStuck(func(quickjs.StuckRun) { stuck.Add(1) }))
	t.Cleanup(func() { _ = engine.Close(context.Background()) })
	// the effect waits for the engine's own timeline, not the tests' second
	v := newEnv(t, withEngine(engine), withEffect(func(o *effect.Options) { o.BackendGrace = 0 }))

	overrun := conformance.JavaScriptFixtures().NativeOverrun
	past := map[string]any{"wallClockMs": conformance.OverrunWallClock.Milliseconds()}
	wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": v.put(overrun), "limits": past}), 200,
		`{"ok":false,"failure":{"channel":"limitExceeded","kind":"wallClock"}}`)
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": overrun, "inputJson": "null", "limits": past}), 200,
		`{"ok":false,"kind":"limit","limit":"wallClock"}`)
	if n := stuck.Load(); n != 0 {
		t.Fatalf("the watchdog abandoned %d run(s): the overrun did not end on its own, and the test proves nothing of it", n)
	}

	const fetch, wallClock = 1500 * time.Millisecond, time.Second
	slow := "input.n + 1"
	ref := v.put(slow)
	v.store.set(ref, func() ([]byte, error) {
		time.Sleep(fetch)
		return []byte(slow), nil
	})
	within := map[string]any{"wallClockMs": wallClock.Milliseconds()}
	wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": ref, "input": map[string]any{"n": 41}, "limits": within}), 200,
		`{"ok":true,"value":42}`)
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"scriptRef": ref, "inputJson": `{"n":41}`, "limits": within}), 200,
		`{"ok":true,"value":42}`)
}
