package reliability

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// helperEnv, when set (to the parent's compilation cache), makes the test
// binary a helper process: it runs the one helper test it was asked for.
const helperEnv = "RELIABILITY_HELPER_CACHE"

func isHelper() bool { return os.Getenv(helperEnv) != "" }

// helperProcess runs the test named name in a child copy of the test binary
// (so that a crash ends only the child) and returns its combined output and
// exit error.
func helperProcess(t *testing.T, name string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+cacheDir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// secret is what a panic carries; it must never reach a response.
const secret = "sk-secret-4f1d9a"

// panicky panics on scripts that contain /*panic*/, in the engine's place.
type panicky struct{ spi.Reporter }

func (p panicky) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if strings.Contains(req.Script, "/*panic*/") {
		panic("engine panicked holding " + secret)
	}
	return p.Reporter.Evaluate(ctx, req)
}

func (p panicky) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	if strings.Contains(req.Script, "/*panic*/") {
		panic("engine panicked holding " + secret)
	}
	return p.Reporter.Run(ctx, req)
}

// panickyReader panics when asked for one reference.
type panickyReader struct {
	effect.ScriptReader
	ref string
}

func (p panickyReader) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	if ref.String() == p.ref {
		panic("store panicked holding " + secret)
	}
	return p.ScriptReader.Get(ctx, ref)
}

// goroutinesSettle waits until the process has at most max goroutines and
// returns the count (or the last count after timeout).
func goroutinesSettle(max int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.NumGoroutine()
		if n <= max || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A panic in the engine or in the script reader, on either route, is an
// untyped 500 "internal error" that leaks nothing of the panic; the panic is
// logged with its stack; the next request works; nothing is left running.
// (handler/evaluations_test.go and sandbox_test.go cover the engine panic
// with the handler's test backend; this is the same through the binary's
// wiring, service.New, with the real engine behind the panicking wrapper.)
func TestPanicsBecomeInternal(t *testing.T) {
	t.Run("engine in process", func(t *testing.T) { panicsBecomeInternal(t, false) })
	t.Run("worker pool", func(t *testing.T) { panicsBecomeInternal(t, true) })
}

func panicsBecomeInternal(t *testing.T, workers bool) {
	poison := contentref.RefOf([]byte("/* the store panics on this one */")).String()
	s := newInproc(t, inprocConfig{
		workers:     workers,
		wrapBackend: func(b spi.Reporter) spi.Reporter { return panicky{b} },
		wrapScripts: func(r effect.ScriptReader) effect.ScriptReader { return panickyReader{r, poison} },
	})
	refs := s.put(t, "/*panic*/ 1", "input.n * 2")
	panicRef, good := refs[0], refs[1]
	s.client.CloseIdleConnections()
	before := goroutinesSettle(0, 0)

	cases := []struct{ name, route, body string }{
		{"engine panic on the SPI", routeSandbox, `{"script":"/*panic*/ 1","inputJson":"null"}`},
		{"engine panic on the effect route", routeEvaluations, `{"scriptRef":"` + panicRef + `"}`},
		{"store panic on the effect route", routeEvaluations, `{"scriptRef":"` + poison + `"}`},
		{"store panic on the SPI", routeSandbox, `{"scriptRef":"` + poison + `","inputJson":"null"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.post(t, tc.route, tc.body)
			p := wantProblem(t, r, 500, "internal", false)
			if p.detail() != "internal error" || strings.Contains(string(r.body), secret) || strings.Contains(string(r.body), "panic") {
				t.Fatalf("the problem says more than \"internal error\": %s", r)
			}
			for _, k := range []string{"limit", "field", "offset"} {
				if _, ok := p[k]; ok {
					t.Fatalf("the problem has %s: %s", k, r)
				}
			}
			wantJSON(t, s.post(t, routeEvaluations, `{"scriptRef":"`+good+`","input":{"n":21}}`), `{"ok":true,"value":42}`)
			wantJSON(t, s.post(t, routeSandbox, `{"script":"'next'","inputJson":"null"}`), `{"ok":true,"value":"next"}`)
		})
	}
	if n := strings.Count(s.logs.String(), "panicked"); n < len(cases) {
		t.Errorf("%d panic log lines, want %d:\n%s", n, len(cases), s.logs)
	}
	if !strings.Contains(s.logs.String(), "goroutine ") {
		t.Error("no stack in the log")
	}
	s.client.CloseIdleConnections()
	if n := goroutinesSettle(before+2, 5*time.Second); n > before+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines %d after the panics, %d before\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// A client that disconnects mid-run, end to end through the binary: the run
// is stopped (the next request is admitted at once, well before the run's
// own 20 s wall clock), the log line says client-gone with status 499, and
// the process keeps serving. handler/behaviour_test.go's
// TestClientDisconnectFreesInstance covers the same in-process and checks
// that the engine saw the cancellation.
func TestClientDisconnectStopsRun(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	runaway := putScripts(t, store, 1<<20, "while (true) {}")[0]
	c := startChild(t, startOpts{env: []string{"STORE_URL=" + store}})
	for _, tc := range []struct{ route, body string }{
		{routeEvaluations, `{"scriptRef":"` + runaway + `","limits":{"wallClockMs":20000}}`},
		{routeSandbox, `{"script":"while (true) {}","inputJson":"null","limits":{"wallClockMs":20000}}`},
	} {
		t.Run(tc.route, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			done := startRun(t, ctx, c, tc.route, tc.body)
			gone := time.Now()
			cancel()
			if res := <-done; !errors.Is(res.err, context.Canceled) {
				t.Fatalf("the client's request ended with %v %s", res.err, res.r)
			}
			for {
				r := c.post(routeSandbox, `{"script":"'next'","inputJson":"null"}`)
				if r.status == 200 {
					wantJSON(t, r, `{"ok":true,"value":"next"}`)
					break
				}
				wantProblem(t, r, 429, "busy", true)
				if time.Since(gone) > 3*time.Second {
					t.Fatal("the instance was not freed within 3 s of the client leaving")
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("next request admitted %v after the client left", time.Since(gone).Round(time.Millisecond))
			waitLog(t, c.Logs, func(l map[string]any) bool {
				return l["route"] == tc.route && l["outcome"] == "client-gone" && l["status"] == 499.0
			})
		})
	}
	if kills := hardKills(c.Logs); len(kills) > 0 {
		t.Fatalf("a cancelled run was treated as stuck: %v", kills)
	}
}

// runResult is how a background request ended.
type runResult struct {
	r   response
	err error
}

// startRun sends a long run to route in the background and returns once it
// holds the instance's only slot (a probe is refused with 429). A run that
// was itself refused because a probe held the slot at that moment is sent
// again.
func startRun(t *testing.T, ctx context.Context, c *child, route, body string) <-chan runResult {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for attempt := 1; ; attempt++ {
		done := make(chan runResult, 1)
		go func() {
			r, err := do(ctx, c.client, http.MethodPost, c.URL+route, body, nil)
			done <- runResult{r, err}
		}()
		time.Sleep(100 * time.Millisecond)
		for {
			select {
			case res := <-done:
				if res.err == nil && res.r.status == http.StatusTooManyRequests && time.Now().Before(deadline) {
					goto again // a probe held the slot when the run arrived
				}
				t.Fatalf("the run ended before it was seen running: %v %s", res.err, res.r)
			default:
			}
			r := c.post(routeSandbox, `{"script":"1","inputJson":"null"}`)
			if r.status == http.StatusTooManyRequests {
				return done
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run never held the slot; last probe %s", r)
			}
			time.Sleep(10 * time.Millisecond)
		}
	again:
	}
}

// waitLog waits up to 10 s (a line may follow a store's answer, on a busy
// machine) for a log line that satisfies ok.
func waitLog(t *testing.T, logs *servicetest.Logs, ok func(map[string]any) bool) {
	t.Helper()
	if !logs.Await(10*time.Second, ok) {
		t.Fatalf("no such log line in:\n%s", tail(logs.String(), 4096))
	}
}

// SIGTERM mid-run, beyond main_test.go's TestSIGTERMDrains (the SPI route,
// a run shorter than SHUTDOWN_TIMEOUT): on the effect route the running
// evaluation (a 3 s wall clock) still gets its answer; new connections are refused at once
// during the drain; and a run longer than SHUTDOWN_TIMEOUT does not hold the
// process past it.
func TestSIGTERMMidRun(t *testing.T) {
	t.Parallel()
	t.Run("effect route drains", func(t *testing.T) {
		t.Parallel()
		store := t.TempDir()
		runaway := putScripts(t, store, 1<<20, "while (true) {}")[0]
		// no CPU budget: the run must end by its wall clock, however fast the machine
		c := startChild(t, startOpts{env: []string{"STORE_URL=" + store, "SHUTDOWN_TIMEOUT=10s", "CPU_BUDGET=0"}})
		done := startRun(t, context.Background(), c, routeEvaluations, `{"scriptRef":"`+runaway+`","limits":{"wallClockMs":3000}}`)
		start := time.Now()
		if err := c.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		// a new connection during the drain is refused, not served
		fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
		if r, err := do(context.Background(), fresh, http.MethodGet, c.URL+"/healthz", nil, nil); err == nil {
			t.Errorf("a new connection was served during the drain: %s", r)
		}
		res := <-done
		if res.err != nil {
			t.Fatalf("the running evaluation got no answer: %v", res.err)
		}
		wantJSON(t, res.r, `{"ok":false,"failure":{"channel":"limitExceeded","kind":"wallClock"}}`)
		select {
		case <-c.Exited():
			if err := c.Err(); err != nil {
				t.Fatalf("exit: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("did not exit within SHUTDOWN_TIMEOUT of SIGTERM")
		}
		t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	})
	t.Run("a run longer than SHUTDOWN_TIMEOUT", func(t *testing.T) {
		t.Parallel()
		c := startChild(t, startOpts{env: []string{"STORE_URL=none", "SHUTDOWN_TIMEOUT=1s"}})
		done := startRun(t, context.Background(), c, routeSandbox, `{"script":"while (true) {}","inputJson":"null","limits":{"wallClockMs":20000}}`)
		start := time.Now()
		if err := c.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.Exited():
			err := c.Err()
			took := time.Since(start)
			res := <-done
			t.Logf("exited %v after SIGTERM with %v; the client saw: %v %s", took.Round(time.Millisecond), err, res.err, res.r)
			if res.err == nil {
				t.Errorf("the cut run was answered: %s", res.r)
			}
			// the stop was asked for and happened in time: exit 0; the cut
			// run is in the log
			if err != nil {
				t.Errorf("exit after a cut drain: %v, want 0", err)
			}
			if took > 1*time.Second+3*time.Second {
				t.Fatalf("exit took %v with SHUTDOWN_TIMEOUT=1s", took)
			}
		case <-time.After(8 * time.Second):
			t.Fatal("still running 8 s after SIGTERM with SHUTDOWN_TIMEOUT=1s")
		}
		// the log is read from the child's pipe: give it a moment
		waitLog(t, c.Logs, func(l map[string]any) bool { return l["message"] == "drain did not finish in time" })
	})
}

// hardKills returns the service's log lines of a worker killed, or retired,
// for a run that did not stop (the pool's "event":"hardKill").
func hardKills(logs *servicetest.Logs) []map[string]any {
	var out []map[string]any
	for _, l := range logs.Lines("") {
		if l["event"] == "hardKill" {
			out = append(out, l)
		}
	}
	return out
}
