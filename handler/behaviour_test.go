package handler_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// runaway never ends on its own before its wall clock (the default engine's
// CPU budget is seconds of work); scriptSignal tells the test it started.
const runaway = scriptSignal + "while (true) {}"

// startRunaway sends a runaway evaluation on route and waits until the
// engine is running it. The response arrives on the returned channel.
func startRunaway(t *testing.T, v *env, ctx context.Context, route string, wallClockMs int) <-chan response {
	t.Helper()
	var body map[string]any
	if route == "/v1/evaluations" {
		body = map[string]any{"scriptRef": v.put(runaway)}
	} else {
		body = map[string]any{"script": runaway, "inputJson": "null"}
	}
	body["limits"] = map[string]any{"wallClockMs": wallClockMs}
	done := make(chan response, 1)
	go func() {
		r, _ := v.do(ctx, http.MethodPost, route, body, nil)
		done <- r
	}()
	select {
	case <-v.backend.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the runaway did not start")
	}
	return done
}

// One evaluation at a time: while one runs, the next request, on either
// route, is refused with 429 and Retry-After rather than queued behind it;
// once the run ends the gate admits again.
func TestBusy(t *testing.T) {
	v := newEnv(t, withEffect(func(o *effect.Options) { o.BackendGrace = time.Hour })) // the run ends when released

	done := make(chan response, 1)
	go func() {
		// a run that lasts until the test releases it
		r, _ := v.do(context.Background(), http.MethodPost, "/v1/evaluations",
			map[string]any{"scriptRef": v.put(scriptIgnore), "limits": map[string]any{"wallClockMs": 30000}}, nil)
		done <- r
	}()
	await(t, v.backend.started, "the run to start")
	for _, route := range []string{"/v1/evaluations", "/v1/sandbox/evaluate"} {
		body := map[string]any{"script": "1", "inputJson": "null"}
		if route == "/v1/evaluations" {
			body = map[string]any{"scriptRef": v.put("1")}
		}
		// a request queued behind the run would wait until the release,
		// which only comes after this
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := v.do(ctx, http.MethodPost, route, body, nil)
		cancel()
		if err != nil {
			t.Fatalf("%s: no answer while the gate is shut: %v", route, err)
		}
		p := wantProblem(t, r, 429, "busy", true, "maximum of 1")
		if r.header.Get("Retry-After") != "1" || p["limit"] != "maxConcurrent" || p["limitValue"] != 1.0 {
			t.Fatalf("Retry-After %q, limit %v=%v", r.header.Get("Retry-After"), p["limit"], p["limitValue"])
		}
	}
	// The probes and capabilities are not evaluations: they still answer.
	if r := v.mustDo(http.MethodGet, "/v1/capabilities", nil, nil); r.status != 200 {
		t.Fatalf("capabilities while busy: %s", r)
	}
	select {
	case r := <-done:
		t.Fatalf("the run answered before it was released: %s", r)
	default:
	}
	close(v.backend.release)
	wantBody(t, <-done, 200, `{"ok":true,"value":"released"}`)
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "'free'", "inputJson": "null"}), 200, `{"ok":true,"value":"free"}`)
}

// A client that goes away mid-run stops the run (the engine sees the
// cancellation) and frees the instance for the next request. How soon the
// engine stops is the engine's rule (quickjs's TestCancellation).
func TestClientDisconnectFreesInstance(t *testing.T) {
	for _, route := range []string{"/v1/evaluations", "/v1/sandbox/evaluate"} {
		t.Run(route, func(t *testing.T) {
			v := newEnv(t)
			ctx, cancel := context.WithCancel(context.Background())
			done := startRunaway(t, v, ctx, route, 30000)
			time.Sleep(50 * time.Millisecond)
			cancel()
			<-done
			// The next request is admitted once the engine stopped.
			deadline := time.Now().Add(time.Minute)
			for {
				r := v.post("/v1/sandbox/evaluate", map[string]any{"script": "'next'", "inputJson": "null"})
				if r.status == 200 {
					wantBody(t, r, 200, `{"ok":true,"value":"next"}`)
					break
				}
				wantProblem(t, r, 429, "busy", true)
				if time.Now().After(deadline) {
					t.Fatal("the instance was not freed")
				}
				time.Sleep(20 * time.Millisecond)
			}
			end, ok := v.backend.ended(runaway)
			if !ok || !errors.Is(end.err, context.Canceled) {
				t.Fatalf("the engine's run ended with %v (returned: %v), want context.Canceled", end.err, ok)
			}
			// The log says what happened (the line is written as the
			// handler returns, just after the gate is freed).
			for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
				found := false
				for _, l := range v.logs.lines(t, "evaluation") {
					found = found || l["outcome"] == "client-gone" && l["status"] == 499.0
				}
				if found {
					break
				}
				if time.Since(start) > time.Minute {
					t.Fatalf("no client-gone line in the log:\n%s", v.logs)
				}
			}
		})
	}
}

// A client that sends its whole request and then half-closes its side of
// the connection (as nc and some proxies do) is a client that left, to
// net/http: the run is stopped and the log says client-gone. It must get no
// response at all, never a success status without an outcome (net/http's
// implicit 200 for a handler that wrote nothing).
func TestHalfClosedClientGetsNoEmpty200(t *testing.T) {
	v := newEnv(t, unvalidated())
	ref := v.put("let t = Date.now(); while (Date.now() - t < 300) {} 7")
	for _, tc := range []struct{ name, route, body string }{
		{"effect route", "/v1/evaluations", `{"scriptRef":"` + ref + `"}`},
		{"SPI", "/v1/sandbox/evaluate", `{"scriptRef":"` + ref + `","inputJson":"null"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", v.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", tc.route, len(tc.body), tc.body)
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Fatalf("answered %d %q; want the connection closed without a response", resp.StatusCode, b)
			}
			for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
				found := false
				for _, l := range v.logs.lines(t, "evaluation") {
					found = found || l["route"] == tc.route && l["outcome"] == "client-gone" && l["status"] == 499.0
				}
				if found {
					break
				}
				if time.Since(start) > 2*time.Second {
					t.Fatalf("no client-gone line for %s in the log:\n%s", tc.route, v.logs)
				}
			}
		})
	}
	// the instance still serves
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "'next'", "inputJson": "null"}), 200, `{"ok":true,"value":"next"}`)
}

// The server's request timeout ends the run (the engine sees the request's
// deadline, not its wall clock), and the response says so.
func TestRequestTimeout(t *testing.T) {
	for _, route := range []string{"/v1/evaluations", "/v1/sandbox/evaluate"} {
		t.Run(route, func(t *testing.T) {
			v := newEnv(t, withConfig(func(c *handler.Config) { c.Limits.RequestTimeout = 300 * time.Millisecond }))
			r := <-startRunaway(t, v, context.Background(), route, 20000)
			p := wantProblem(t, r, 504, "request-timeout", false, "request timeout of 300ms", "stopped")
			if p["limit"] != "requestTimeoutMs" || p["limitValue"] != 300.0 {
				t.Fatalf("limit %v=%v", p["limit"], p["limitValue"])
			}
			if end, ok := v.backend.ended(runaway); !ok || !errors.Is(end.err, context.DeadlineExceeded) {
				t.Fatalf("the engine's run ended with %v (returned: %v), want context.DeadlineExceeded", end.err, ok)
			}
			wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "2", "inputJson": "null"}), 200, `{"ok":true,"value":2}`)
		})
	}
}

// deadlineStore fails every Get at once, as contentstore.Cache does for a
// store that is down, and records how long before its deadline each Get's
// context had.
type deadlineStore struct {
	mu   sync.Mutex
	left []time.Duration
}

func (s *deadlineStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	d, ok := ctx.Deadline()
	s.mu.Lock()
	if ok {
		s.left = append(s.left, time.Until(d))
	} else {
		s.left = append(s.left, -1)
	}
	s.mu.Unlock()
	return nil, fmt.Errorf("%w: %s: test outage", contentref.ErrUnavailable, ref)
}

// The fetch's deadline is the server's request timeout, counted from the
// gate, less the run's wall clock and the effect's grace (spi.Timing's
// FetchDeadline, whose stall the effect's TestFetchDeadlineAndErrNotRun
// runs out): the handler gives the effect the request's deadline, and
// answers the store's failure with the retryable 503 store-unavailable, on
// both routes, whatever the logging.
func TestTheFetchHasTheRequestsDeadline(t *testing.T) {
	ref := contentref.RefOf([]byte("'down'")).String()
	limits := map[string]any{"wallClockMs": 500}
	bodies := map[string]map[string]any{
		"/v1/evaluations":      {"scriptRef": ref, "limits": limits},
		"/v1/sandbox/evaluate": {"scriptRef": ref, "inputJson": "null", "limits": limits},
	}
	// request timeout 1 min, wall clock 0.5 s, grace 1 s (effectOptions)
	const want = time.Minute - 1500*time.Millisecond
	for _, observed := range []bool{true, false} {
		store := &deadlineStore{}
		opts := []option{withScripts(store)}
		if !observed {
			opts = append(opts, unobserved()) // the deadline is not the observer's
		}
		v := newEnv(t, opts...)
		for _, route := range []string{"/v1/evaluations", "/v1/sandbox/evaluate"} {
			t.Run(fmt.Sprintf("%s observed=%v", route, observed), func(t *testing.T) {
				r := v.post(route, bodies[route])
				wantProblem(t, r, 503, "store-unavailable", true, ref, "retry may succeed")
				if r.header.Get("Retry-After") != "1" {
					t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
				}
			})
		}
		store.mu.Lock()
		if len(store.left) != 2 {
			t.Errorf("%d fetches, want 2", len(store.left))
		}
		for _, left := range store.left {
			// time passes between the gate and the fetch: a generous margin
			if left > want || left < want-30*time.Second {
				t.Errorf("a fetch had %v before its deadline, want %v less the time to reach it", left, want)
			}
		}
		store.mu.Unlock()
	}
}

// stallingStore never answers: Get waits for its context to end, then fails
// as contentstore.Cache does.
type stallingStore struct{}

func (stallingStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("%w: waiting for %s: %w", contentref.ErrUnavailable, ref, ctx.Err())
}

// When the run's wall clock leaves the fetch less than a second of the
// request, the fetch may run to the request's deadline; a store that stalls
// until then is still answered with 503 store-unavailable (the script never
// ran, and the wall clock is not to blame), not with 504 request-timeout.
func TestAStoreStallPastTheRequestTimeoutIsTheStores(t *testing.T) {
	ref := contentref.RefOf([]byte("'stalled'")).String()
	for _, observed := range []bool{true, false} {
		opts := []option{withConfig(func(c *handler.Config) { c.Limits.RequestTimeout = 50 * time.Millisecond }), withScripts(stallingStore{})}
		if !observed {
			opts = append(opts, unobserved()) // 503, not 504, is not the observer's decision
		}
		v := newEnv(t, opts...)
		for _, route := range []string{"/v1/evaluations", "/v1/sandbox/evaluate"} {
			t.Run(fmt.Sprintf("%s observed=%v", route, observed), func(t *testing.T) {
				body := map[string]any{"scriptRef": ref} // the default 5 s wall clock
				if route == "/v1/sandbox/evaluate" {
					body["inputJson"] = "null"
				}
				wantProblem(t, v.post(route, body), 503, "store-unavailable", true, ref, "request timeout of 50ms", "not run")
			})
		}
	}
}

// A body that arrives too slowly is cut at the server's read timeout: a
// slow client holds the instance's only slot no longer than that.
func TestSlowBody(t *testing.T) {
	v := newEnv(t, unvalidated(), withReadTimeout(300*time.Millisecond))
	conn, err := net.Dial("tcp", strings.TrimPrefix(v.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/sandbox/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"script\":")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	wantProblem(t, response{status: resp.StatusCode, header: resp.Header, body: body}, 408, "body-timeout", true, "did not arrive")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("answered after %v", d)
	}
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "3", "inputJson": "null"}), 200, `{"ok":true,"value":3}`)
}

func TestAuth(t *testing.T) {
	var calls atomic.Int32
	v := newEnv(t, withConfig(func(c *handler.Config) {
		c.Auth = func(r *http.Request) (string, error) {
			calls.Add(1)
			switch r.Header.Get("Authorization") {
			case "Bearer good":
				return "alice@example.com", nil
			case "Bearer other":
				return "", fmt.Errorf("%w: mallory@example.com is not on the allow-list", handler.ErrForbidden)
			case "Bearer broken":
				return "", errors.New("the key server is down")
			case "":
				return "", fmt.Errorf("%w: no bearer token", handler.ErrUnauthenticated)
			}
			return "", fmt.Errorf("%w: token audience mismatch", handler.ErrUnauthenticated)
		}
	}))
	body := map[string]any{"script": "1", "inputJson": "null"}
	as := func(token string) map[string]string {
		if token == "" {
			return nil
		}
		return map[string]string{"Authorization": "Bearer " + token}
	}
	t.Run("unauthenticated", func(t *testing.T) {
		r := v.mustDo(http.MethodPost, "/v1/sandbox/evaluate", body, nil)
		wantProblem(t, r, 401, "unauthenticated", false, "no bearer token")
		if r.header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
		}
		wantProblem(t, v.mustDo(http.MethodGet, "/v1/capabilities", nil, as("forged")), 401, "unauthenticated", false, "audience")
	})
	t.Run("forbidden", func(t *testing.T) {
		wantProblem(t, v.mustDo(http.MethodPost, "/v1/evaluations", map[string]any{"scriptRef": v.put("1")}, as("other")), 403, "forbidden", false, "allow-list")
	})
	t.Run("cannot check", func(t *testing.T) {
		r := v.mustDo(http.MethodPost, "/v1/sandbox/evaluate", body, as("broken"))
		wantProblem(t, r, 503, "auth-unavailable", true)
		if strings.Contains(string(r.body), "key server") {
			t.Fatalf("the hook's internal error leaked: %s", r)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		wantBody(t, v.mustDo(http.MethodPost, "/v1/sandbox/evaluate", body, as("good")), 200, `{"ok":true,"value":1}`)
		if r := v.mustDo(http.MethodGet, "/v1/capabilities", nil, as("good")); r.status != 200 {
			t.Fatalf("capabilities: %s", r)
		}
		found := false
		for _, l := range v.logs.lines(t, "evaluation") {
			found = found || l["principal"] == "alice@example.com"
		}
		if !found {
			t.Fatal("the principal is not in the evaluation's log line")
		}
	})
	t.Run("probes are open", func(t *testing.T) {
		before := calls.Load()
		for _, p := range []string{"/healthz", "/readyz"} {
			if r := v.mustDo(http.MethodGet, p, nil, nil); r.status != 200 {
				t.Fatalf("%s: %s", p, r)
			}
		}
		if calls.Load() != before {
			t.Fatal("the probes ran the auth hook")
		}
	})
}

func TestProbes(t *testing.T) {
	var ready atomic.Bool
	v := newEnv(t, withConfig(func(c *handler.Config) {
		c.Ready = func(ctx context.Context) error {
			if !ready.Load() {
				return errors.New("engine still compiling at /secret/path")
			}
			return nil
		}
	}))
	wantBody(t, v.mustDo(http.MethodGet, "/healthz", nil, nil), 200, `{"status":"ok"}`)
	r := v.mustDo(http.MethodGet, "/readyz", nil, nil)
	wantProblem(t, r, 503, "not-ready", true, "not ready")
	if strings.Contains(string(r.body), "secret") || r.header.Get("Retry-After") == "" {
		t.Fatalf("readyz: %s (Retry-After %q)", r, r.header.Get("Retry-After"))
	}
	if r := v.mustDo(http.MethodHead, "/readyz", nil, nil); r.status != 503 || len(r.body) != 0 {
		t.Fatalf("HEAD /readyz while not ready: %s", r)
	}
	ready.Store(true)
	wantBody(t, v.mustDo(http.MethodGet, "/readyz", nil, nil), 200, `{"status":"ready"}`)
	// uptime checkers ask with HEAD: the status and headers of GET, no body
	for _, p := range []string{"/healthz", "/readyz"} {
		r := v.mustDo(http.MethodHead, p, nil, nil)
		if r.status != 200 || len(r.body) != 0 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("HEAD %s: %s (Content-Type %q)", p, r, r.header.Get("Content-Type"))
		}
	}
}

// A readiness failure that says why (handler.NotReady) has its reason in
// the problem's detail, so that the probe's answer names what is wrong; its
// cause stays in the log.
func TestProbeSaysWhyNotReady(t *testing.T) {
	v := newEnv(t, withConfig(func(c *handler.Config) {
		c.Ready = func(ctx context.Context) error {
			return fmt.Errorf("readiness: %w", &handler.NotReady{
				Reason: "the script store gs://scripts/p/ cannot be read: access is denied",
				Err:    errors.New("googleapi: Error 403: secret-holder@example lacks storage.objects.list"),
			})
		}
	}))
	r := v.mustDo(http.MethodGet, "/readyz", nil, nil)
	p := wantProblem(t, r, 503, "not-ready", true)
	if want := "the instance is not ready: the script store gs://scripts/p/ cannot be read: access is denied"; p["detail"] != want {
		t.Errorf("detail %q, want %q", p["detail"], want)
	}
	if strings.Contains(string(r.body), "secret") || r.header.Get("Retry-After") == "" {
		t.Fatalf("readyz: %s (Retry-After %q)", r, r.header.Get("Retry-After"))
	}
}

func TestCapabilities(t *testing.T) {
	e := defaultEngine()
	want := fmt.Sprintf(`{"spiVersion":"1.0.0","capabilities":{"language":"javascript","network":"none","wallClock":"soft","memory":true,"cpu":true,"freshPerRun":true},`+
		`"idempotent":true,"scriptStore":%%t,"determinism":true,"limits":{"defaultWallClockMs":5000,"maxWallClockMs":30000,"defaultMemoryBytes":33554432,"minMemoryBytes":262144,"maxMemoryBytes":67108864,`+
		`"maxInputBytes":2097152,"maxOutputBytes":65536,"maxScriptBytes":65536,"maxRequestBytes":16777216,"maxHeaderBytes":32768,"maxConcurrent":1,"requestTimeoutMs":60000,"maxBatchItems":1000},`+
		`"engine":{"name":"quickjs","version":%q,"wasmSha256":%q}}`, quickjs.EngineVersion, quickjs.WasmSHA256())
	if e.Capabilities().WallClock != spi.WallClockSoft {
		t.Fatalf("engine declares %+v", e.Capabilities())
	}
	wantBody(t, newEnv(t).mustDo(http.MethodGet, "/v1/capabilities", nil, nil), 200, fmt.Sprintf(want, true))
	wantBody(t, newEnv(t, withoutStore()).mustDo(http.MethodGet, "/v1/capabilities", nil, nil), 200, fmt.Sprintf(want, false))
}

func TestNewValidatesConfig(t *testing.T) {
	eff, err := effect.New(effect.NoStore, newTestBackend(defaultEngine()), effectOptions(testLimits, nil))
	if err != nil {
		t.Fatal(err)
	}
	good := handler.Config{Effect: eff, Limits: testLimits}
	if _, err := handler.New(good); err != nil {
		t.Fatalf("credential-free config refused: %v", err)
	}
	cases := []struct {
		name string
		edit func(c *handler.Config)
		want string
	}{
		{"no effect", func(c *handler.Config) { c.Effect = nil }, "Effect is required"},
		{"zero limits", func(c *handler.Config) { c.Limits = api.Limits{} }, "MaxRequestBytes must be positive"},
		{"a body cap that would refuse an escaped script and input", func(c *handler.Config) {
			c.Limits.MaxRequestBytes = api.MinRequestBytes(c.Limits.MaxScriptBytes, c.Limits.MaxInputBytes) - 1
		}, "below api.MinRequestBytes"},
		{"default over max", func(c *handler.Config) { c.Limits.DefaultWallClock = time.Hour }, "exceeds Limits.MaxWallClock"},
		{"negative concurrency", func(c *handler.Config) { c.Limits.MaxConcurrent = -1 }, "MaxConcurrent"},
		{"negative timeout", func(c *handler.Config) { c.Limits.RequestTimeout = -time.Second }, "RequestTimeout"},
		{"no timeout", func(c *handler.Config) { c.Limits.RequestTimeout = 0 }, "RequestTimeout must be positive"},
		{"no concurrency", func(c *handler.Config) { c.Limits.MaxConcurrent = 0 }, "MaxConcurrent must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			if _, err := handler.New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	// The memory maximum the handler advertises is the one the effect
	// enforces, and the effect refuses one over the engine's.
	over := effectOptions(testLimits, nil)
	over.MaxMemoryBytes = 4 << 30
	if _, err := effect.New(effect.NoStore, newTestBackend(defaultEngine()), over); err == nil || !strings.Contains(err.Error(), "engine's maximum") {
		t.Fatalf("effect.New: %v, want an error mentioning the engine's maximum", err)
	}
}
