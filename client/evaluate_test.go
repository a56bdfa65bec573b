package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

func TestEvaluateEveryOutcome(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       spi.Outcome
	}{
		{"ok", `{"ok":true,"value":{"b": [1, 2.50, "é\u00e9"], "a": null}}`,
			spi.OK([]byte(`{"b": [1, 2.50, "é\u00e9"], "a": null}`))},
		{"ok null", `{"ok":true,"value":null}`, spi.OK([]byte(`null`))},
		{"ok value first", `{"value":"x","ok":true}`, spi.OK([]byte(`"x"`))},
		{"limit cpu", `{"ok":false,"kind":"limit","limit":"cpu"}`, spi.LimitHit(spi.LimitCPU)},
		{"limit memory", `{"ok":false,"kind":"limit","limit":"memory"}`, spi.LimitHit(spi.LimitMemory)},
		{"limit wallClock", `{"ok":false,"kind":"limit","limit":"wallClock"}`, spi.LimitHit(spi.LimitWallClock)},
		{"threw", `{"ok":false,"kind":"threw","name":"TypeError","message":"x is not a function"}`,
			spi.Threw(ptr("TypeError"), "x is not a function")},
		{"threw without name", `{"ok":false,"kind":"threw","message":"42"}`, spi.Threw(nil, "42")},
		{"threw empty name", `{"ok":false,"kind":"threw","name":"","message":"m"}`, spi.Threw(ptr(""), "m")},
		{"threw empty message", `{"ok":false,"kind":"threw","name":"Error","message":""}`, spi.Threw(ptr("Error"), "")},
		{"inputTooLarge", `{"ok":false,"kind":"inputTooLarge"}`, spi.InputTooLarge()},
		{"infrastructure", `{"ok":false,"kind":"infrastructure","message":"quickjs: engine failed"}`,
			spi.Infrastructure("quickjs: engine failed")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, tc.body) })
			got := evalT(t, dial(t, f.URL))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("outcome %+v (value %s), want %+v (value %s)", got, got.Value, tc.want, tc.want.Value)
			}
		})
	}
}

func TestEvaluateSendsTheContract(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
	c := dial(t, f.URL)
	ctx := context.Background()
	script := "input.a + '<&>'"
	if _, err := c.Evaluate(ctx, spi.Request{Script: script, InputJSON: `{"a":"é"}`,
		Limits: spi.Limits{WallClock: 1500*time.Millisecond + time.Microsecond, MemoryBytes: 1 << 20}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EvaluateRef(ctx, "sha256:"+strings.Repeat("0", 64), `null`, defaultLimits); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.Method != http.MethodPost || r.Path != "/v1/sandbox/evaluate" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %s %s %q", r.Method, r.Path, r.Header.Get("Content-Type"))
		}
		if r.Header.Get("Authorization") != "" {
			t.Errorf("Authorization sent without WithIDToken")
		}
	}
	var byValue, byRef map[string]any
	if err := json.Unmarshal(reqs[0].Body, &byValue); err != nil {
		t.Fatal(err)
	}
	wantValue := map[string]any{"script": script, "inputJson": `{"a":"é"}`,
		"limits": map[string]any{"wallClockMs": 1501.0, "memoryBytes": float64(1 << 20)}}
	if !reflect.DeepEqual(byValue, wantValue) {
		t.Errorf("by value: sent %s, want %v", reqs[0].Body, wantValue)
	}
	if err := json.Unmarshal(reqs[1].Body, &byRef); err != nil {
		t.Fatal(err)
	}
	wantRef := map[string]any{"scriptRef": "sha256:" + strings.Repeat("0", 64), "inputJson": `null`,
		"limits": map[string]any{"wallClockMs": 2000.0, "memoryBytes": float64(32 << 20)}}
	if !reflect.DeepEqual(byRef, wantRef) {
		t.Errorf("by reference: sent %s, want %v", reqs[1].Body, wantRef)
	}
}

func TestEvaluateRefusesLocallyWhatJSONCannotCarry(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
	c := dial(t, f.URL)
	ctx := context.Background()
	for name, req := range map[string]spi.Request{
		"script not UTF-8": {Script: "'\xff'", InputJSON: "null", Limits: defaultLimits},
		"input not UTF-8":  {Script: "1", InputJSON: "\"\xed\xa0\x80\"", Limits: defaultLimits},
	} {
		o, err := c.Evaluate(ctx, req)
		if err != nil {
			t.Errorf("%s: error %v", name, err)
			continue
		}
		wantInfra(t, o, "sandbox service client: ")
	}
	o, _ := c.EvaluateRef(ctx, "", "null", defaultLimits)
	wantInfra(t, o, "empty script reference")
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

func TestEvaluateMalformedBodiesAreInfrastructure(t *testing.T) {
	for _, tc := range []struct{ name, body, fragment string }{
		{"empty", ``, "not JSON"},
		{"not JSON", `ok`, "not JSON"},
		{"array", `[{"ok":true,"value":1}]`, "a JSON object is required"},
		{"truncated", `{"ok":true,"value":[1,2`, "not JSON"},
		{"trailing", `{"ok":true,"value":1}{}`, "data after the JSON value"},
		{"no ok", `{"value":1}`, `"ok": missing`},
		{"ok as string", `{"ok":"true","value":1}`, `"ok": must be a boolean, got a string`},
		{"ok null", `{"ok":null}`, `"ok": must be a boolean, got null`},
		{"ok without value", `{"ok":true}`, `"value": missing`},
		{"ok with kind", `{"ok":true,"value":1,"kind":"limit"}`, `"kind": not a member of this kind of outcome`},
		{"duplicate ok", `{"ok":true,"ok":false,"value":1}`, "duplicate member"},
		{"duplicate value", `{"ok":true,"value":1,"value":2}`, "duplicate member"},
		{"failed without kind", `{"ok":false}`, `"kind": missing`},
		{"failed with value", `{"ok":false,"kind":"inputTooLarge","value":1}`, `"value": not a member of this kind of outcome`},
		{"unknown kind", `{"ok":false,"kind":"timeout"}`, "must be one of limit, threw, inputTooLarge, infrastructure"},
		{"kind number", `{"ok":false,"kind":3}`, "must be a string, got a number"},
		{"limit output", `{"ok":false,"kind":"limit","limit":"output"}`, "must be one of cpu, memory, wallClock"},
		{"limit missing", `{"ok":false,"kind":"limit"}`, `"limit": missing`},
		{"limit with message", `{"ok":false,"kind":"limit","limit":"cpu","message":"x"}`, `"message": not a member of this kind of outcome`},
		{"threw without message", `{"ok":false,"kind":"threw","name":"Error"}`, `"message": missing`},
		{"infrastructure empty message", `{"ok":false,"kind":"infrastructure","message":""}`, "must not be empty"},
		{"threw null name", `{"ok":false,"kind":"threw","name":null,"message":"m"}`, `"name": must be a string, got null`},
		{"threw with limit", `{"ok":false,"kind":"threw","message":"m","limit":"cpu"}`, `"limit": not a member of this kind of outcome`},
		{"inputTooLarge with message", `{"ok":false,"kind":"inputTooLarge","message":"m"}`, `"message": not a member of this kind of outcome`},
		{"infrastructure without message", `{"ok":false,"kind":"infrastructure"}`, `"message": missing`},
		{"infrastructure with name", `{"ok":false,"kind":"infrastructure","message":"m","name":"n"}`, `"name": not a member of this kind of outcome`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, tc.body) })
			o := evalT(t, dial(t, f.URL))
			wantInfra(t, o, "POST /v1/sandbox/evaluate: HTTP 200: malformed outcome: ", tc.fragment)
		})
	}
}

func TestEvaluateHTTPFailuresAreInfrastructure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		handler   http.HandlerFunc
		fragments []string
	}{
		{"400 problem", func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, 400, "limits.wallClockMs 60000 exceeds the maximum 30000", `"retryable":false`)
		}, []string{"HTTP 400", "Bad Request", "limits.wallClockMs 60000 exceeds the maximum 30000"}},
		{"401", func(w http.ResponseWriter, r *http.Request) { writeProblem(w, 401, "an ID token is required", "") },
			[]string{"HTTP 401", "an ID token is required"}},
		{"403", func(w http.ResponseWriter, r *http.Request) { writeProblem(w, 403, "caller not allowed", "") },
			[]string{"HTTP 403", "caller not allowed"}},
		{"404 scriptRef", func(w http.ResponseWriter, r *http.Request) { writeProblem(w, 404, "script sha256:00 not found", "") },
			[]string{"HTTP 404", "script sha256:00 not found"}},
		{"413", func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, 413, "body over the cap of 4194304 bytes", "")
		},
			[]string{"HTTP 413", "4194304"}},
		{"415", func(w http.ResponseWriter, r *http.Request) { writeProblem(w, 415, "want application/json", "") },
			[]string{"HTTP 415", "want application/json"}},
		{"500 problem", func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, 500, "the engine failed", `"retryable":true`)
		}, []string{"HTTP 500", "the engine failed"}},
		{"502 html", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "<html>upstream <script>bad</script></html>")
		}, []string{"HTTP 502"}},
		{"problem too long", func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, 500, strings.Repeat("d", 100<<10), "")
		}, []string{"HTTP 500"}},
		{"long detail bounded", func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, 400, strings.Repeat("é", 30<<10), "")
		}, []string{"HTTP 400", "éé"}},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, []string{"HTTP 307", "redirects are not followed"}},
		{"200 text/plain", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, `{"ok":true,"value":1}`)
		}, []string{"HTTP 200", `Content-Type is "text/plain`}},
		{"200 invalid UTF-8", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, "{\"ok\":true,\"value\":\"\xff\"}")
		}, []string{"HTTP 200", "not valid UTF-8"}},
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }, []string{"HTTP 204"}},
		{"connection dropped", func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}, []string{"POST /v1/sandbox/evaluate: ", "EOF"}},
		{"body cut short", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, `{"ok":true,`)
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}, []string{"reading the response", "unexpected EOF"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					hits.Add(1)
				}
				tc.handler(w, r)
			})
			o := evalT(t, dial(t, f.URL))
			wantInfra(t, o, append([]string{"sandbox service: POST /v1/sandbox/evaluate"}, tc.fragments...)...)
			if strings.Contains(o.Message, "<script>") {
				t.Errorf("message quotes a non-problem body: %q", o.Message)
			}
			if hits.Load() != 0 {
				t.Errorf("the redirect was followed")
			}
		})
	}
}

func TestEvaluateNetworkError(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {})
	c := dial(t, f.URL)
	f.Close() // nothing listens any more
	o := evalT(t, c)
	wantInfra(t, o, "sandbox service: POST /v1/sandbox/evaluate: Post \"http://127.0.0.1")
}

func TestEvaluateOversizedBody(t *testing.T) {
	const limit = 1 << 10
	value := `"` + strings.Repeat("v", limit) + `"`
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if chunked {
					w.(http.Flusher).Flush() // no Content-Length
				}
				_, _ = io.WriteString(w, `{"ok":true,"value":`+value+`}`)
			})
			c := dial(t, f.URL, client.WithMaxResponseBytes(limit))
			wantInfra(t, evalT(t, c), "exceeds the client's limit of 1024 bytes")
		})
	}
	// At the limit exactly, the body is read.
	body := `{"ok":true,"value":"` + strings.Repeat("v", limit-len(`{"ok":true,"value":""}`)) + `"}`
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, body) })
	if o := evalT(t, dial(t, f.URL, client.WithMaxResponseBytes(limit))); !o.OK {
		t.Errorf("a body of exactly the limit: %+v", o)
	}
}

// waits records the waits the client chose between busy retries; with
// real set it also waits them, as the client does.
type waits struct {
	mu   sync.Mutex
	got  []time.Duration
	real bool
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.got = append(w.got, d)
	w.mu.Unlock()
	if !w.real {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (w *waits) list() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.got...)
}

// busyFake answers 429 (with retryAfter as its Retry-After when not "")
// to the first busy requests, and then the value "done".
func busyFake(t *testing.T, busy int32, retryAfter string) (*fake, *atomic.Int32) {
	var attempts atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) <= busy {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			writeProblem(w, http.StatusTooManyRequests, "one evaluation at a time", `"retryable":true`)
			return
		}
		writeJSON(w, 200, `{"ok":true,"value":"done"}`)
	})
	return f, &attempts
}

// A 429 is retried within milliseconds, not after its whole Retry-After
// (whole seconds): the first wait is a few milliseconds and the next one
// doubles it, each within the Retry-After; the retry sends the same body.
func TestEvaluateBusyRetriesSoon(t *testing.T) {
	f, attempts := busyFake(t, 2, "1")
	w := &waits{real: true}
	o := evalT(t, dial(t, f.URL, client.WithSleepForTest(w.sleep)))
	if !o.OK || string(o.Value) != `"done"` {
		t.Fatalf("outcome %+v", o)
	}
	if n := attempts.Load(); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	got := w.list()
	if len(got) != 2 {
		t.Fatalf("waits %v, want two", got)
	}
	if got[0] < 10*time.Millisecond || got[0] > 25*time.Millisecond {
		t.Errorf("first wait %v, want 10 to 25 ms", got[0])
	}
	if got[1] != 2*got[0] {
		t.Errorf("second wait %v, want twice the first (%v)", got[1], got[0])
	}
	for _, d := range got {
		if d > time.Second {
			t.Errorf("a wait of %v is over the Retry-After of 1 s", d)
		}
	}
	reqs := f.requests()
	for _, r := range reqs[1:] {
		if string(r.Body) != string(reqs[0].Body) {
			t.Errorf("a retry sent another body: %s then %s", reqs[0].Body, r.Body)
		}
	}
}

// The waits double up to a ceiling: the Retry-After, or a second without
// one; a Retry-After of 0 keeps every wait at the first, so that the
// service is not hammered.
func TestEvaluateBusyWaitsGrowToTheirCeiling(t *testing.T) {
	for _, tc := range []struct {
		retryAfter string
		ceiling    time.Duration
	}{
		{"", time.Second},
		{"1", time.Second},
		{"3", 3 * time.Second},
		{"0", 0}, // the first wait
		{"not a number", time.Second},
	} {
		t.Run("Retry-After "+tc.retryAfter, func(t *testing.T) {
			const busy = 12
			f, attempts := busyFake(t, busy, tc.retryAfter)
			w := &waits{}
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			o, err := dial(t, f.URL, client.WithSleepForTest(w.sleep)).Evaluate(ctx, spi.Request{Script: "1", InputJSON: "null"})
			if err != nil || !o.OK {
				t.Fatalf("Evaluate = %+v, %v", o, err)
			}
			if n := attempts.Load(); n != busy+1 {
				t.Errorf("%d attempts, want %d", n, busy+1)
			}
			got := w.list()
			if len(got) != busy {
				t.Fatalf("%d waits (%v), want %d", len(got), got, busy)
			}
			ceiling := tc.ceiling
			if ceiling == 0 {
				ceiling = got[0]
			}
			for i, d := range got {
				switch {
				case d <= 0 || d > ceiling:
					t.Errorf("wait %d is %v, outside (0, %v]", i, d, ceiling)
				case i > 0 && d != min(2*got[i-1], ceiling):
					t.Errorf("wait %d is %v after %v, want %v", i, d, got[i-1], min(2*got[i-1], ceiling))
				}
			}
			if last := got[len(got)-1]; last != ceiling {
				t.Errorf("the waits %v never reach the ceiling %v", got, ceiling)
			}
		})
	}
}

// A service that stays busy is waited for only while the context's
// deadline allows: the client gives up, as an infrastructure outcome, when
// the next wait would outlast it, having waited less than the deadline in
// all.
func TestEvaluateBusyBeyondTheDeadlineIsInfrastructure(t *testing.T) {
	f, attempts := busyFake(t, 1<<30, "30")
	w := &waits{real: true}
	c := dial(t, f.URL, client.WithSleepForTest(w.sleep))
	// between two sums of the doubling waits (496 ms, then 1008 ms), so
	// that the last wait and the last request fit well inside it
	const patience = 800 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	o, err := c.Evaluate(ctx, spi.Request{Script: "1", InputJSON: "null", Limits: defaultLimits})
	if err != nil {
		t.Fatalf("error %v, want an infrastructure outcome", err)
	}
	wantInfra(t, o, "HTTP 429", "busy: waited", "outlasts the context's deadline")
	got := w.list()
	var total time.Duration
	for i, d := range got {
		total += d
		if i > 0 && d <= got[i-1] {
			t.Errorf("the waits %v do not grow", got)
		}
	}
	if total >= patience {
		t.Errorf("waited %v in all (%v), not within the deadline of %v", total, got, patience)
	}
	if n := attempts.Load(); int(n) != len(got)+1 || n < 2 {
		t.Errorf("%d attempts after %d waits, want a retry after each wait", n, len(got))
	}
}

// Without a deadline, the client stops retrying once its waits would pass
// maxBusyWaitTotal.
func TestEvaluateBusyWithoutADeadlineIsBounded(t *testing.T) {
	f, attempts := busyFake(t, 1<<30, "")
	w := &waits{}
	o, err := dial(t, f.URL, client.WithSleepForTest(w.sleep)).Evaluate(context.Background(), spi.Request{Script: "1", InputJSON: "null"})
	if err != nil {
		t.Fatalf("error %v, want an infrastructure outcome", err)
	}
	wantInfra(t, o, "HTTP 429", "beyond the client's 1m0s without a deadline")
	var total time.Duration
	for _, d := range w.list() {
		total += d
	}
	if total > time.Minute || total < time.Minute-time.Second {
		t.Errorf("waited %v in all, want just under a minute", total)
	}
	if n := attempts.Load(); int(n) != len(w.list())+1 {
		t.Errorf("%d attempts after %d waits", n, len(w.list()))
	}
}

func TestEvaluateBusyWithoutRetry(t *testing.T) {
	var attempts atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		w.Header().Set("Retry-After", "1")
		writeProblem(w, http.StatusTooManyRequests, "busy", "")
	})
	o := evalT(t, dial(t, f.URL, client.WithRetryBusy(false)))
	wantInfra(t, o, "HTTP 429", "busy")
	if n := attempts.Load(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

func TestEvaluateBusyCancelledWhileWaiting(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		writeProblem(w, http.StatusTooManyRequests, "busy", "")
	})
	c := dial(t, f.URL)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Evaluate(ctx, spi.Request{Script: "1", InputJSON: "null", Limits: defaultLimits})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned %v after the start; the wait ignores the context", d)
	}
}

// TestEvaluateCancellationReachesTheServer: a slow run is cancelled by the
// caller's context; Evaluate returns the context's error at once and the
// server sees its request context end, which is what stops the run there.
func TestEvaluateCancellationReachesTheServer(t *testing.T) {
	started := make(chan struct{}, 1)
	serverSaw := make(chan error, 1)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-r.Context().Done():
			serverSaw <- r.Context().Err()
		case <-time.After(30 * time.Second):
			serverSaw <- errors.New("the request context never ended")
		}
	})
	c := dial(t, f.URL)
	for _, how := range []string{"cancel", "deadline"} {
		t.Run(how, func(t *testing.T) {
			var ctx context.Context
			var cancel context.CancelFunc
			if how == "cancel" {
				ctx, cancel = context.WithCancel(context.Background())
				go func() { <-started; time.Sleep(50 * time.Millisecond); cancel() }()
			} else {
				ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
			}
			defer cancel()
			start := time.Now()
			o, err := c.Evaluate(ctx, spi.Request{Script: "for(;;){}", InputJSON: "null", Limits: spi.Limits{WallClock: time.Hour, MemoryBytes: 1 << 20}})
			if !errors.Is(err, ctx.Err()) || ctx.Err() == nil {
				t.Fatalf("Evaluate = %+v, %v; want the context's error", o, err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Evaluate returned %v after the start", d)
			}
			select {
			case err := <-serverSaw:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("server: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("the server did not see the cancellation")
			}
		})
	}
}

func TestEvaluateAlreadyCancelledSendsNothing(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
	c := dial(t, f.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Evaluate(ctx, spi.Request{Script: "1", InputJSON: "null", Limits: defaultLimits}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestIDToken(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
	var audiences []string
	hook := func(ctx context.Context, audience string) (string, error) {
		audiences = append(audiences, audience)
		return token, nil
	}
	var capsAuth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/capabilities":
			capsAuth.Store(r.Header.Get("Authorization"))
			writeJSON(w, 200, capsDoc)
		case "/v1/sandbox/evaluate":
			if got := r.Header.Get("Authorization"); got != "Bearer "+token {
				writeProblem(w, 401, "no token", "")
				return
			}
			// A careless or hostile server echoes the credential.
			writeProblem(w, 403, "caller with "+r.Header.Get("Authorization")+" is not allowed", `"retryable":false`)
		}
	}))
	defer srv.Close()
	c := dial(t, srv.URL+"/", client.WithIDToken(hook))
	if got := capsAuth.Load(); got != "Bearer "+token {
		t.Errorf("GET /v1/capabilities sent Authorization %q", got)
	}
	o := evalT(t, c)
	wantInfra(t, o, "HTTP 403", "is not allowed", "[token]")
	if strings.Contains(o.Message, token) || strings.Contains(o.Message, "c2lnbmF0dXJl") {
		t.Errorf("the token leaked into the outcome: %q", o.Message)
	}
	for _, a := range audiences {
		if a != srv.URL {
			t.Errorf("hook called with audience %q, want the origin %q", a, srv.URL)
		}
	}

	_, err := client.Dial(context.Background(), srv.URL, client.WithIDToken(hook), client.WithAudience("https://svc.example"))
	if err != nil || audiences[len(audiences)-1] != "https://svc.example" {
		t.Errorf("WithAudience: %v, audiences %q", err, audiences)
	}

	// The hook fails, or returns something that is not a token: nothing is sent.
	var sent atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { sent.Add(1); writeJSON(w, 200, `{"ok":true,"value":1}`) })
	var mode atomic.Value
	mode.Store("ok")
	c2 := dial(t, f.URL, client.WithIDToken(func(ctx context.Context, aud string) (string, error) {
		switch mode.Load() {
		case "fail":
			return "", errors.New("metadata server unreachable")
		case "bad":
			return token + "\r\nX-Evil: 1", nil
		case "empty":
			return "", nil
		}
		return token, nil
	}))
	for _, m := range []string{"fail", "bad", "empty"} {
		mode.Store(m)
		o := evalT(t, c2)
		wantInfra(t, o, "ID token")
		if strings.Contains(o.Message, token) {
			t.Errorf("%s: the token leaked: %q", m, o.Message)
		}
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests sent without a usable token", n)
	}
}

// Without WithMaxResponseBytes, the client reads any value the service can
// return (up to spi.MaxValueBytes of the advertised maxMemoryBytes), even
// one over DefaultMaxResponseBytes, so that the caller's effect bounds the
// output (limitExceeded output) instead of the transport failing untyped.
func TestEvaluateReadsAnyValueTheServiceCanMake(t *testing.T) {
	value := `"` + strings.Repeat("v", client.DefaultMaxResponseBytes) + `"`
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":`+value+`}`) })
	// The deadline only stops a hang: reading and checking 64 MiB of JSON
	// takes about 6 s quiet under the race detector, and past 15 s on two
	// cores kept busy by other work.
	o := evalWithin(t, dial(t, f.URL), 3*time.Minute) // capsDoc's maxMemoryBytes is 256 MiB
	if !o.OK || len(o.Value) != len(value) {
		t.Fatalf("a %d-byte value: ok=%v kind=%q, %d bytes", len(value), o.OK, o.Kind, len(o.Value))
	}
}

// The client reads outcomes with the service's JSON policy: keys are UTF-16
// code units (two lone surrogates are two keys), a key twice is refused at
// any depth, and a string keeps its lone surrogates.
func TestOutcomeJSONPolicy(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"ok":true,"value":{"\ud800":1,"\ud801":2}}`, ""},
		{`{"ok":true,"value":{"a":{"b":1,"b":2}}}`, `"value"."a"."b": duplicate member`},
		{`{"ok":true,"value":[{"b":1,"\u0062":2}]}`, `"value"[0]."b": duplicate member`},
	} {
		_, err := client.DecodeOutcomeForTest([]byte(tc.body))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s refused: %v", tc.body, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.body, err, tc.want)
		}
	}
	o, err := client.DecodeOutcomeForTest([]byte(`{"ok":false,"kind":"threw","message":"'\ud800'"}`))
	if err != nil || o.Message != "'\xed\xa0\x80'" {
		t.Errorf("threw message %q, %v; want the lone surrogate kept as WTF-8", o.Message, err)
	}
}

// A script holding a lone surrogate (WTF-8, as the engine and the service
// hold one) is sent as its escape, which the service runs as that code unit:
// the body is api/testdata's golden request.
func TestEvaluateSendsLoneSurrogatesEscaped(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":55297}`) })
	c := dial(t, f.URL)
	o, err := c.Evaluate(context.Background(), spi.Request{Script: "'\xed\xa0\x80'.charCodeAt(0) + input.n", InputJSON: `{"n":1}`,
		Limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 16 << 20}})
	if err != nil || !o.OK {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	want, err := os.ReadFile("../api/testdata/request/sandbox/script.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.requests(); len(got) != 1 || string(got[0].Body)+"\n" != string(want) {
		t.Errorf("sent %q, want %s", got, want)
	}
}
