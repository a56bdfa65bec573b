package reliability

// Bugs found by these batteries in code outside reliability/ (which this
// package does not change). Each test states what the service should do and
// fails until the bug is fixed; docs/reliability.md lists them and what
// each guards. Run the batteries without them with -skip '^TestBug'. A bug
// once fixed keeps its test here as a regression test, renamed without the
// TestBug prefix.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// A stalled store (headers and half the body, then nothing) must be cut
// within the deadline and answered as a retryable problem: another instance,
// or the same one a moment later, may well read the script.
//
// Fixed: the stall held the request until REQUEST_TIMEOUT, and the answer
// was 504 request-timeout, not retryable, whose detail told the caller to
// ask for a shorter wall clock though the script never ran. The effect and
// the SPI route read the script under the request's own context, so the
// store's retry loop (contentstore.retry, 20 s per attempt then) was still
// waiting when the request timeout ended the context, and handler.stopped
// answered request-timeout whatever step was running. The fetch now has its
// own deadline, the request's minus the run's wall clock and the grace
// (here 4 s - 1 s - 1.5 s), after which it is 503 store-unavailable; stopped
// answers store-unavailable too when the request's deadline ends a fetch;
// and contentstore.DefaultAttemptTimeout is 10 s.
func TestStoreStall(t *testing.T) {
	t.Parallel()
	f := newFakeGCS(t, faultBucket)
	c := startGCSChild(t, f, startOpts{})
	ref := f.store(faultBucket, faultPrefix, "'stalled'")
	for _, route := range bothRoutes {
		t.Run(route, func(t *testing.T) {
			f.inject(ref, stall)
			r := c.post(route, refBody(route, ref))
			t.Logf("answered after %v: %s", r.took.Round(time.Millisecond), r)
			wantProblem(t, r, 503, "store-unavailable", true)
			if r.took >= faultRequestTimeout {
				t.Errorf("answered after %v: not before REQUEST_TIMEOUT %v", r.took, faultRequestTimeout)
			}
		})
	}
	f.inject(ref, nil)
	wantJSON(t, c.post(routeSandbox, refBody(routeSandbox, ref)), `{"ok":true,"value":"stalled"}`)
}

// A body cut short on every read must end as store-unavailable after the
// store's own bounded retries (RetryAttempts = 5).
//
// Fixed: the Go storage library's httpReader.Read reopens the object on
// any non-EOF read error in a loop (http_client.go), at once and without
// bound, and the bucket's Retryer(storage.WithPolicy(storage.RetryNever)) in
// contentstore/gcsstore/gcs.go covers each reopen request, not the loop: thousands
// of GCS requests per second until REQUEST_TIMEOUT, then 504
// request-timeout. The store now lets the reader make one request for the
// bytes per attempt (objects/gcsobjects.LimitBodyRequests), so the store's
// retry and its backoff decide.
func TestTruncatedBodyEveryTime(t *testing.T) {
	t.Parallel()
	f := newFakeGCS(t, faultBucket)
	c := startGCSChild(t, f, startOpts{})
	ref := f.store(faultBucket, faultPrefix, "'truncated'")
	f.inject(ref, truncate(-1))
	r := c.post(routeEvaluations, refBody(routeEvaluations, ref))
	n := f.count(ref)
	t.Logf("answered after %v with %d media requests: %s", r.took.Round(time.Millisecond), n.media, r)
	if n.media > 10 {
		t.Errorf("%d requests for the object's bytes in %v for one evaluation; the store retries at most 5 times", n.media, r.took.Round(time.Millisecond))
	}
	wantProblem(t, r, 503, "store-unavailable", true)
	f.inject(ref, nil)
	wantJSON(t, c.post(routeSandbox, refBody(routeSandbox, ref)), `{"ok":true,"value":"truncated"}`)
}

// A script whose result nests deeper than spi.MaxValueDepth (9,999)
// levels is the script's doing and gets a typed outcome, the script's
// RangeError; a result at 9,999 levels is returned, in an answer of 10,000
// levels that every JSON reader downstream, the Go client's among them,
// reads.
//
// Fixed twice: it was a 500 malformed-outcome blaming the engine, because
// JSON.stringify in the guest has no depth limit short of the stack while
// every JSON reader downstream stops at 10,000; then a result of 10,000
// levels was returned in an answer of 10,001, which the Go client, like
// encoding/json, refused as not JSON.
func TestDeeplyNestedResultIsTyped(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	deep := putScripts(t, store, 1<<20, "let a = []; for (let i = 0; i < input; i++) a = [a]; a")[0]
	c := startChild(t, startOpts{env: []string{"STORE_URL=" + store}})
	// 9,998 wraps: 9,999 levels, accepted, and read by the clients' decoders
	r := c.post(routeEvaluations, `{"scriptRef":"`+deep+`","input":9998,"limits":{"wallClockMs":30000}}`)
	if r.status != 200 || !strings.HasPrefix(string(r.body), `{"ok":true,"value":[[[[`) {
		t.Fatalf("9,999 levels: %s", r)
	}
	if _, err := api.DecodeEvaluation(r.body); err != nil {
		t.Fatalf("the Go client's decoder refuses the answer of a 9,999-level value: %v", err)
	}
	r = c.post(routeSandbox, `{"scriptRef":"`+deep+`","inputJson":"9998","limits":{"wallClockMs":30000}}`)
	if o, err := spi.DecodeOutcome(r.body); err != nil || !o.OK {
		t.Fatalf("the SPI's answer of a 9,999-level value: %v, %v: %s", o, err, r)
	}
	// The runs must not end on their wall clock: serialising 20,000
	// levels is quadratic and takes seconds on a loaded machine.
	const msg = `"name":"RangeError","message":"the result nests deeper than 9999 levels: the answer around it would be deeper than the 10000 levels JSON readers accept"}`
	for _, tc := range []struct{ route, body, want string }{
		{routeEvaluations, `{"scriptRef":"` + deep + `","input":9999,"limits":{"wallClockMs":30000}}`, `{"ok":false,"failure":{"channel":"scriptError",` + msg + `}`},
		{routeSandbox, `{"scriptRef":"` + deep + `","inputJson":"9999","limits":{"wallClockMs":30000}}`, `{"ok":false,"kind":"threw",` + msg},
		{routeSandbox, `{"script":"let a = []; for (let i = 0; i < 20000; i++) a = [a]; a","inputJson":"null","limits":{"wallClockMs":30000}}`, `{"ok":false,"kind":"threw",` + msg},
	} {
		wantJSON(t, c.post(tc.route, tc.body), tc.want)
	}
}

// A client that sends a whole request and then half-closes its side (as
// `nc` and some proxies do) must get the outcome, or at worst no response;
// never a success status without an outcome. net/http reads the half-close
// as the client leaving and cancels the request's context; the handler stops
// the run and logs 499 client-gone.
//
// Fixed: handler.stopped (handler/middleware.go) wrote nothing for a client
// that left, and net/http turned a handler that wrote nothing into an
// implicit "200 OK" with an empty body. It now aborts the response
// (panic(http.ErrAbortHandler), with requestLog writing its line in a
// defer), so the connection closes without a status line.
func TestHalfClosedClientNeverGetsEmpty200(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	ref := putScripts(t, store, 1<<20, "let t = Date.now(); while (Date.now() - t < 300) {} 7")[0]
	c := startChild(t, startOpts{env: []string{"STORE_URL=" + store}})
	addr := strings.TrimPrefix(c.URL, "http://")
	for _, tc := range []struct{ name, route, body string }{
		{"effect route, whole request", routeEvaluations, `{"scriptRef":"` + ref + `"}`},
		{"SPI, whole request", routeSandbox, `{"scriptRef":"` + ref + `","inputJson":"null"}`},
		{"SPI, body shorter than its Content-Length", routeSandbox, `{"script":"1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			length := len(tc.body)
			if strings.Contains(tc.name, "shorter") {
				length = 100
			}
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", tc.route, length, tc.body)
			_ = conn.(*net.TCPConn).CloseWrite()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Logf("no response (acceptable): %v", err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Logf("answered %d %q", resp.StatusCode, b)
			if resp.StatusCode == 200 && len(b) == 0 {
				t.Fatalf("a 200 with an empty body: a success status without an outcome")
			}
		})
	}
}

// A panic in the store must become an untyped 500 and leave the instance
// serving, as a panic in the handler or the engine does. Behind
// contentstore.Cache (which service.New always puts in front of the store) the
// read runs on the cache's own goroutine. Run in a child copy of the test
// binary.
//
// Fixed: nothing recovered on that goroutine, and the process died.
// contentstore.Cache now recovers the panic, logs it with its stack and hands
// the waiters contentref.ErrPanicked, which the handler answers as 500
// internal.
func TestStorePanicBehindCache(t *testing.T) {
	t.Parallel()
	out, err := helperProcess(t, "TestHelperStorePanicBehindCache")
	if err != nil {
		i := strings.Index(out, "panic:")
		if i < 0 {
			i = 0
		}
		t.Fatalf("the process died (%v) instead of answering 500:\n%s", err, tail(out[i:], 1500))
	}
	if !strings.Contains(out, "--- PASS: TestHelperStorePanicBehindCache") {
		t.Fatalf("the helper did not pass:\n%s", tail(out, 3000))
	}
}

// panickyStore is a store whose Get panics for one reference.
type panickyStore struct {
	contentstore.Store
	ref contentref.Ref
}

func (p panickyStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	if ref == p.ref {
		panic("store panicked holding " + secret)
	}
	return p.Store.Get(ctx, ref)
}

// TestHelperStorePanicBehindCache runs only as TestStorePanicBehindCache's
// child process.
func TestHelperStorePanicBehindCache(t *testing.T) {
	if !isHelper() {
		t.Skip("runs as TestStorePanicBehindCache's child process")
	}
	mem, err := contentstore.NewMemStore(contentstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	poison := contentref.RefOf([]byte("poison"))
	s := newInproc(t, inprocConfig{store: panickyStore{mem, poison}})
	good := s.put(t, "'fine'")[0]
	r := s.post(t, routeEvaluations, `{"scriptRef":"`+poison.String()+`"}`)
	wantProblem(t, r, 500, "internal", false)
	if strings.Contains(string(r.body), secret) {
		t.Fatalf("the panic's value leaked: %s", r)
	}
	wantJSON(t, s.post(t, routeEvaluations, `{"scriptRef":"`+good+`"}`), `{"ok":true,"value":"fine"}`)
}

// A stored script over MAX_SCRIPT_BYTES is a 413 script-too-large whose
// detail and members name the limit ("limit: maxScriptBytes when the
// server's bound applied", docs/problems.md). In the
// binary the store is opened with MaxScriptBytes = MAX_SCRIPT_BYTES, so the
// server's bound is exactly what applied.
//
// Fixed: the problem used to say only "over the store's maximum script
// size", without the number or the limit member, because storeProblem
// (handler/evaluations.go) mapped contentref.ErrTooLarge without the
// limit. It now names maxScriptBytes and its value (and the object's size,
// from contentref.TooLargeError) whenever the server's bound applied.
func TestStoredScriptOverCapNamesTheLimit(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	const max = 4096
	over := putScripts(t, store, 1<<20, scriptOfSize(max+1))[0]
	c := startChild(t, startOpts{env: []string{"STORE_URL=" + store, "MAX_SCRIPT_BYTES=" + strconv.Itoa(max)}})
	for _, route := range bothRoutes {
		t.Run(route, func(t *testing.T) {
			body := `{"scriptRef":"` + over + `"}`
			if route == routeSandbox {
				body = `{"scriptRef":"` + over + `","inputJson":"null"}`
			}
			r := c.post(route, body)
			p := wantProblem(t, r, 413, "script-too-large", false)
			if p["limit"] != "maxScriptBytes" || p["limitValue"] != float64(max) || !strings.Contains(p.detail(), strconv.Itoa(max)) {
				t.Fatalf("the problem does not name maxScriptBytes of %d: %s", max, r)
			}
		})
	}
}

// A guest that recurses deeply (a stack overflow, a backtracking regular
// expression) makes wazero grow the guest's native call stack in the
// worker's Go heap, about 50 MiB per run. The worker returns that garbage to
// the system after the answer, so its resident memory comes back to near
// where it was before such runs. Through the binary, which is never
// race-built (the race detector's shadow of the heap is not returned with
// it).
//
// Fixed: the Go runtime kept those pages resident, and the soak's workers
// held 170 to 180 MiB each; worker.runner.releaseAfterRun now returns them.
func TestDeepRecursionLeavesNoResidentGarbage(t *testing.T) {
	t.Parallel()
	c := startChild(t, startOpts{env: []string{"STORE_URL=none", "WORKER_SPARES=0"}})
	// workers is the resident memory of the server's workers once the tree
	// has settled: the release runs after the answer is sent
	workers := func() int64 {
		t.Helper()
		r := settle(t, c.Pid(), math.MaxInt)
		return r.rssKiB - r.server.RSSKiB
	}
	wantJSON(t, c.post(routeSandbox, `{"script":"input.n + 1","inputJson":"{\"n\":41}"}`), `{"ok":true,"value":42}`)
	before := workers()
	const recurse = `{"script":"function f(n) { return f(n + 1) + 1 } f(0)","inputJson":"null","limits":{"wallClockMs":30000}}`
	for range 20 {
		wantJSON(t, c.post(routeSandbox, recurse), `{"ok":false,"kind":"threw","name":"InternalError","message":"stack overflow"}`)
	}
	after := workers()
	t.Logf("the worker's RSS: %d MiB before 20 deep recursions, %d MiB after", before>>10, after>>10)
	// one run grows the stack by about 50 MiB: kept, that would show; the
	// worker may keep some heap for its next runs, not a stack's worth
	if after > before+40<<10 {
		t.Errorf("the worker's RSS: %d MiB before 20 deep recursions, %d MiB after", before>>10, after>>10)
	}
}
