package reliability

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

const (
	faultBucket = "scripts-reliability"
	faultPrefix = "team/p/"
	// the fault child's REQUEST_TIMEOUT: every answer must come within it
	faultRequestTimeout = 4 * time.Second
)

// startGCSChild starts the binary over gs://faultBucket/faultPrefix in f,
// with the script cache off (so that every request reads the store), a 4 KiB
// script cap and a 4 s request timeout.
func startGCSChild(t *testing.T, f *fakeGCS, o startOpts) *child {
	t.Helper()
	if o.env == nil {
		o.env = []string{"STORE_URL=gs://" + faultBucket + "/" + strings.TrimSuffix(faultPrefix, "/")}
	}
	o.env = append(o.env,
		"STORAGE_EMULATOR_HOST="+f.addr,
		"SCRIPT_CACHE_BYTES=0",
		"MAX_SCRIPT_BYTES=4096",
		"DEFAULT_WALL_CLOCK=1s", "MAX_WALL_CLOCK=2s", "HARD_KILL_GRACE=250ms",
		"REQUEST_TIMEOUT="+faultRequestTimeout.String(),
	)
	return startChild(t, o)
}

// bodies of a request for ref on each route, with input {"n":1}
func refBody(route string, ref contentref.Ref) string {
	if route == routeEvaluations {
		return `{"scriptRef":"` + ref.String() + `","input":{"n":1}}`
	}
	return `{"scriptRef":"` + ref.String() + `","inputJson":"{\"n\":1}"}`
}

var bothRoutes = []string{routeEvaluations, routeSandbox}

// Store faults, end to end: the binary reads gs://… through the real
// storage client from an in-process fake-gcs-server behind a fault
// injector. Each fault maps to its outcome or problem within the request
// timeout, on both evaluation routes, and the instance keeps serving: after
// each one a fresh script is read and run on both routes.
func TestStoreFaults(t *testing.T) {
	t.Parallel()
	f := newFakeGCS(t, faultBucket)
	c := startGCSChild(t, f, startOpts{})

	serial := 0
	fresh := func(what string) contentref.Ref {
		serial++
		return f.store(faultBucket, faultPrefix, fmt.Sprintf("({ case: %q, serial: %d, n: input.n })", what, serial))
	}
	stillServing := func(t *testing.T) {
		t.Helper()
		ref := fresh("good")
		want := fmt.Sprintf(`{"case":"good","serial":%d,"n":1}`, serial)
		wantJSON(t, c.post(routeEvaluations, refBody(routeEvaluations, ref)), `{"ok":true,"value":`+want+`}`)
		wantJSON(t, c.post(routeSandbox, refBody(routeSandbox, ref)), `{"ok":true,"value":`+want+`}`)
	}

	type expect struct {
		// recovered: the script ran; else the problem (or, with channel, the
		// typed failure on /v1/evaluations and the problem on the SPI)
		recovered bool
		status    int
		slug      string
		retry     bool
		detail    []string
		channel   string
		// requests the store made for the object: at most, and at least
		maxRequests, minRequests int
		noMedia                  bool // the object's bytes were never requested
	}
	cases := []struct {
		name   string
		script func(ref contentref.Ref) // optional: store something else under ref
		fault  fault
		want   expect
	}{
		{name: "503 burst recovered by retry", fault: failFirst(3, 503), want: expect{recovered: true, minRequests: 5, maxRequests: 5}},
		{name: "429 burst recovered by retry", fault: failFirst(2, 429), want: expect{recovered: true, minRequests: 4, maxRequests: 4}},
		{name: "connection reset recovered by retry", fault: resetFirst, want: expect{recovered: true, minRequests: 3, maxRequests: 3}},
		{name: "truncated body recovered by retry", fault: truncate(1), want: expect{recovered: true, minRequests: 3, maxRequests: 4}},
		{name: "503 until the retries run out", fault: failAlways(503, "backend error"),
			// the store's five tries, or fewer when the fetch's deadline (a
			// share of the 1 s wall clock's) ends them first, as on a busy
			// machine: bounded either way, and retried
			want: expect{status: 503, slug: "store-unavailable", retry: true, detail: []string{"did not answer", "retry may succeed"}, minRequests: 2, maxRequests: 5}},
		// (a truncated body every time, and a stalled body:
		// TestTruncatedBodyEveryTime and TestStoreStall)
		{name: "tampered object", script: func(ref contentref.Ref) {
			f.put(faultBucket, faultPrefix, ref, []byte(`"EVIL: this is not the script its name says"`))
		}, want: expect{status: 500, slug: "script-integrity", detail: []string{"do not hash to that reference", "was not run"}, minRequests: 2, maxRequests: 2}},
		{name: "permission denied (403)", fault: failAlways(403, "caller does not have storage.objects.get access"),
			want: expect{status: 500, slug: "store-failed", detail: []string{"refused access", "configuration problem"}, minRequests: 1, maxRequests: 1, noMedia: true}},
		{name: "unauthenticated (401)", fault: failAlways(401, "invalid credentials"),
			want: expect{status: 500, slug: "store-failed", detail: []string{"refused access"}, minRequests: 1, maxRequests: 1, noMedia: true}},
		{name: "object missing (404)", fault: failAlways(404, "No such object"),
			want: expect{channel: "scriptMissing", status: 404, slug: "script-not-found", minRequests: 1, maxRequests: 1, noMedia: true}},
		{name: "object over MAX_SCRIPT_BYTES refused unread", script: func(ref contentref.Ref) {
			f.put(faultBucket, faultPrefix, ref, []byte(strings.Repeat("x", 5000)))
		}, want: expect{status: 413, slug: "script-too-large", detail: []string{"5000 bytes", "maxScriptBytes of 4096"}, minRequests: 1, maxRequests: 1, noMedia: true}},
		{name: "metadata that is not JSON", fault: garbage,
			want: expect{status: 500, slug: "store-failed", detail: []string{"store failed"}, minRequests: 1, maxRequests: 1, noMedia: true}},
		{name: "slow but steady store", fault: func(w http.ResponseWriter, r *http.Request, next http.Handler, _ objectCount, _ bool) bool {
			time.Sleep(300 * time.Millisecond)
			return false
		}, want: expect{recovered: true, minRequests: 2, maxRequests: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref := fresh(tc.name)
			wantValue := fmt.Sprintf(`{"case":%q,"serial":%d,"n":1}`, tc.name, serial)
			if tc.script != nil {
				tc.script(ref)
			}
			for _, route := range bothRoutes {
				f.inject(ref, tc.fault)
				r := c.post(route, refBody(route, ref))
				if r.took > faultRequestTimeout {
					t.Errorf("%s: answered after %v, beyond REQUEST_TIMEOUT %v", route, r.took, faultRequestTimeout)
				}
				if err := validResponse(http.MethodPost, route, r); err != nil {
					t.Error(err)
				}
				w := tc.want
				switch {
				case w.recovered:
					wantJSON(t, r, `{"ok":true,"value":`+wantValue+`}`)
				case w.channel != "" && route == routeEvaluations:
					wantJSON(t, r, `{"ok":false,"failure":{"channel":"`+w.channel+`","scriptRef":"`+ref.String()+`"}}`)
				default:
					p := wantProblem(t, r, w.status, w.slug, w.retry, w.detail...)
					if w.retry && r.header.Get("Retry-After") == "" {
						t.Errorf("%s: a retryable %s without Retry-After", route, w.slug)
					}
					if strings.Contains(string(r.body), "EVIL") || strings.Contains(string(r.body), "injected") || strings.Contains(p.detail(), "googleapi") {
						t.Errorf("%s: the problem carries the store's text: %s", route, r)
					}
				}
				n := f.count(ref)
				if n.total() < w.minRequests || n.total() > w.maxRequests {
					t.Errorf("%s: %d requests for the object (%d metadata, %d media), want %d to %d", route, n.total(), n.metadata, n.media, w.minRequests, w.maxRequests)
				}
				if w.noMedia && n.media > 0 {
					t.Errorf("%s: the object's bytes were requested %d time(s)", route, n.media)
				}
				t.Logf("%s: %d after %v (%d store requests)", route, r.status, r.took.Round(time.Millisecond), n.total())
			}
			stillServing(t)
		})
	}
	if strings.Contains(c.Logs.String(), `"status":500,"totalMs"`) && strings.Contains(c.Logs.String(), `"problem":"internal"`) {
		t.Errorf("a store fault surfaced as an internal error:\n%s", c.Logs)
	}
}

// The bucket disappearing under a running instance, then coming back:
// /readyz turns not-ready (503, retryable) and says why in the log; a
// script read on the effect route is the typed scriptMissing, on the SPI a
// 404 script-not-found; once the bucket answers again the instance serves
// and is ready, without a restart.
func TestStoreBucketMissing(t *testing.T) {
	t.Parallel()
	f := newFakeGCS(t, faultBucket)
	ref := f.store(faultBucket, faultPrefix, "'here'")
	t.Run("mid-life", func(t *testing.T) {
		c := startGCSChild(t, f, startOpts{})
		wantJSON(t, c.post(routeEvaluations, refBody(routeEvaluations, ref)), `{"ok":true,"value":"here"}`)
		f.setEvery(func(w http.ResponseWriter, r *http.Request, _ http.Handler, _ objectCount, _ bool) bool {
			if strings.Contains(r.URL.Path, faultBucket) {
				writeGCSError(w, 404, "The specified bucket does not exist.")
				return true
			}
			return false
		})
		r := c.do(http.MethodGet, "/readyz", nil, nil)
		wantProblem(t, r, 503, "not-ready", true)
		wantJSON(t, c.post(routeEvaluations, refBody(routeEvaluations, ref)), `{"ok":false,"failure":{"channel":"scriptMissing","scriptRef":"`+ref.String()+`"}}`)
		wantProblem(t, c.post(routeSandbox, refBody(routeSandbox, ref)), 404, "script-not-found", false, ref.String())
		// the log is read from the child's pipe: give it a moment
		waitLog(t, c.Logs, func(l map[string]any) bool {
			e, _ := l["error"].(string)
			return strings.Contains(e, `bucket "`+faultBucket+`" does not exist`)
		})
		f.setEvery(nil)
		if r := c.do(http.MethodGet, "/readyz", nil, nil); r.status != 200 {
			t.Fatalf("not ready once the bucket is back: %s", r)
		}
		wantJSON(t, c.post(routeSandbox, refBody(routeSandbox, ref)), `{"ok":true,"value":"here"}`)
	})
	t.Run("from the start", func(t *testing.T) {
		c := startGCSChild(t, f, startOpts{env: []string{"STORE_URL=gs://absent-bucket/p"}, notReady: true})
		// the server runs (the bucket may be a moment away), says so at
		// once at ERROR with the cause, and its probe names the store
		waitLog(t, c.Logs, func(l map[string]any) bool {
			e, _ := l["err"].(string)
			return l["severity"] == "ERROR" && l["message"] == "the script store cannot be read: it does not exist" &&
				l["store"] == "gs://absent-bucket/p" && strings.Contains(e, `bucket "absent-bucket" does not exist`)
		})
		wantProblem(t, c.do(http.MethodGet, "/readyz", nil, nil), 503, "not-ready", true,
			"the script store gs://absent-bucket/p cannot be read: it does not exist")
		wantJSON(t, c.post(routeEvaluations, refBody(routeEvaluations, ref)), `{"ok":false,"failure":{"channel":"scriptMissing","scriptRef":"`+ref.String()+`"}}`)
		wantProblem(t, c.post(routeSandbox, refBody(routeSandbox, ref)), 404, "script-not-found", false)
		// scripts by value do not need the store
		wantJSON(t, c.post(routeSandbox, `{"script":"'by value'","inputJson":"null"}`), `{"ok":true,"value":"by value"}`)
	})
}
