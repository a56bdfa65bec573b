package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/storage"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/internal/gcsfake"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// A script deleted from its store stops running within SCRIPT_CONFIRM_AFTER,
// on both routes, with the directory store and with GCS (the real client
// against fake-gcs-server): within the bound it still runs, from the cache,
// and the store hears nothing; past it the run asks the store (a stat, the
// object's metadata, never its bytes) and answers scriptMissing on
// /v1/evaluations and 404 script-not-found on the SPI, without running.
// SCRIPT_CONFIRM_AFTER=0 asks before every run. A store that fails the
// question, or does not answer it by the fetch deadline, fails the run as a
// fetch fails (503 store-unavailable, retryable), and the script does not
// run. The question is the run's fetch in its usage.
func TestErasure(t *testing.T) {
	env := newErasureEnv(t)
	for _, kind := range []string{"directory", "gcs"} {
		t.Run(kind+"/put, run, delete, run", func(t *testing.T) {
			st := env.store(t, kind)
			within := env.service(t, st, time.Hour)
			ref := st.put(t, "input.n * 2")
			for range 2 {
				within.wantValue(t, routeEvaluations, ref)
				within.wantValue(t, routeSandbox, ref)
			}
			st.remove(t, ref)
			before := st.counts()
			runs := within.runs.Load()
			within.wantValue(t, routeEvaluations, ref)
			within.wantValue(t, routeSandbox, ref)
			if after := st.counts(); after != before {
				t.Errorf("runs within the bound asked the store: %+v, then %+v", before, after)
			}
			if within.runs.Load() != runs+2 {
				t.Errorf("runs within the bound did not run")
			}
			st.wantNoRequests(t, "runs within the bound")

			const bound = 50 * time.Millisecond
			past := env.service(t, st, bound)
			refs := map[string]contentref.Ref{routeEvaluations: st.put(t, "input.n * 3"), routeSandbox: st.put(t, "input.n * 4")}
			for route, ref := range refs {
				past.wantValue(t, route, ref)
			}
			for _, ref := range refs {
				st.remove(t, ref)
			}
			time.Sleep(2 * bound)
			before, runs = st.counts(), past.runs.Load()
			for route, ref := range refs {
				past.wantMissing(t, route, ref)
			}
			if after := st.counts(); after.gets != before.gets || after.exists != before.exists+2 {
				t.Errorf("runs past the bound: the store was asked %+v, then %+v; want a confirmation each and no read", before, after)
			}
			if past.runs.Load() != runs {
				t.Errorf("a script the store no longer has ran")
			}
			st.wantNoMedia(t, "runs past the bound")
		})

		t.Run(kind+"/0 confirms before every run", func(t *testing.T) {
			st := env.store(t, kind)
			svc := env.service(t, st, 0)
			ref := st.put(t, "input.n * 5")
			svc.wantValue(t, routeEvaluations, ref)
			svc.wantValue(t, routeSandbox, ref)
			svc.wantValue(t, routeEvaluations, ref)
			if c := st.counts(); c.gets != 1 || c.exists != 2 {
				t.Errorf("three runs: %+v; want one read and two confirmations", c)
			}
			st.remove(t, ref)
			svc.wantMissing(t, routeEvaluations, ref)
			svc.wantMissing(t, routeSandbox, ref)
		})

		t.Run(kind+"/the confirmation is the run's fetch", func(t *testing.T) {
			st := env.store(t, kind)
			const delay = 20 * time.Millisecond
			st.existsDelay = delay
			svc := env.service(t, st, 0)
			ref := st.put(t, "input.n * 6")
			svc.wantValue(t, routeEvaluations, ref)
			for _, route := range []string{routeEvaluations, routeSandbox} {
				usage := svc.wantValue(t, route, ref)
				if fetch := usage.Phases.Fetch; fetch < float64(delay.Milliseconds()) {
					t.Errorf("%s: a run that waited %v for its confirmation reports a fetch of %v ms", route, delay, fetch)
				}
			}
			if c := st.counts(); c.gets != 1 || c.exists != 2 {
				t.Errorf("%+v; want one read and two confirmations", c)
			}
		})
	}

	t.Run("gcs/a store that fails the confirmation", func(t *testing.T) {
		st := env.store(t, "gcs")
		svc := env.service(t, st, 0)
		ref := st.put(t, "input.n * 7")
		svc.wantValue(t, routeEvaluations, ref)
		st.gcs.fail(ref, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"code":503,"message":"injected"}}`)
		})
		runs := svc.runs.Load()
		for _, route := range []string{routeEvaluations, routeSandbox} {
			svc.wantStoreUnavailable(t, route, ref)
		}
		if svc.runs.Load() != runs {
			t.Errorf("a script whose confirmation failed ran")
		}
		st.gcs.fail(ref, nil)
		st.gcs.reset()
		svc.wantValue(t, routeSandbox, ref)
		st.wantNoMedia(t, "the run once the store answers")
	})

	t.Run("gcs/a confirmation that stalls ends at the fetch deadline", func(t *testing.T) {
		st := env.store(t, "gcs")
		svc := env.service(t, st, 0)
		ref := st.put(t, "input.n * 8")
		svc.wantValue(t, routeEvaluations, ref)
		var ended atomic.Int64
		st.gcs.fail(ref, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			ended.Add(1)
		})
		runs := svc.runs.Load()
		for _, route := range []string{routeEvaluations, routeSandbox} {
			start := time.Now()
			p := svc.wantStoreUnavailable(t, route, ref)
			t.Logf("%s answered in %v", route, time.Since(start))
			// the request timeout's problem says so; the fetch deadline's
			// is the store's own failure
			if want := "the script store did not answer for " + ref.String() + "; a retry may succeed"; p.Detail != want {
				t.Errorf("%s: detail %q, want %q", route, p.Detail, want)
			}
		}
		waitFor(t, func() bool { return ended.Load() == 2 })
		if svc.runs.Load() != runs {
			t.Errorf("a script whose confirmation stalled ran")
		}
	})
}

const (
	routeEvaluations = "/v1/evaluations"
	routeSandbox     = "/v1/sandbox/evaluate"
)

// erasureEnv is what the services of TestErasure share: one engine, in this
// process.
type erasureEnv struct {
	engine Backend
}

// erasureConfig is the services' configuration: a request timeout that
// leaves a run of the default wall clock a fetch deadline of 1.5 s (4 s
// less 1 s, two graces of 250 ms and the second of hand-off).
func erasureConfig() Config {
	c := Defaults()
	c.ProcessKill = false // the engine runs in this test's process
	c.DefaultWallClock, c.MaxWallClock = time.Second, 2*time.Second
	c.HardKillGrace, c.RequestTimeout = 250*time.Millisecond, 4*time.Second
	return c
}

func newErasureEnv(t *testing.T) *erasureEnv {
	ctx := context.Background()
	engine, err := InProcess()(ctx, erasureConfig().EngineOptions(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(ctx) })
	if err := engine.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	return &erasureEnv{engine: engine}
}

// sharedEngine is the env's engine, which a service does not close, with
// its timeline (spi.Timed).
type sharedEngine struct{ Backend }

func (sharedEngine) Close(context.Context) error { return nil }

func (e sharedEngine) Timing(wallClock time.Duration) spi.Timing {
	return e.Backend.(spi.Timed).Timing(wallClock)
}

// erasureService is a service over a store, served over HTTP, whose engine
// counts the runs it is asked for.
type erasureService struct {
	url  string
	runs *atomic.Int64
}

func (e *erasureEnv) service(t *testing.T, st *erasureStore, confirmAfter time.Duration) *erasureService {
	t.Helper()
	ctx := context.Background()
	cfg := erasureConfig()
	cfg.StoreURL, cfg.ScriptConfirmAfter = st.url, confirmAfter
	runs := &atomic.Int64{}
	svc, err := New(ctx, cfg, Options{
		Store: unclosed{st},
		Backend: func(context.Context, worker.EngineOptions, *slog.Logger) (Backend, error) {
			return sharedEngine{e.engine}, nil
		},
		WrapBackend: func(r spi.Reporter) spi.Reporter { return countingBackend{r, runs} },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(ctx) })
	srv := httptest.NewServer(svc.Handler)
	t.Cleanup(srv.Close)
	return &erasureService{url: srv.URL, runs: runs}
}

// countingBackend counts the runs the effect asks of the engine, and keeps
// the engine's timeline (spi.Timed), from which the fetch deadline comes.
type countingBackend struct {
	spi.Reporter
	runs *atomic.Int64
}

func (b countingBackend) Timing(wallClock time.Duration) spi.Timing {
	return b.Reporter.(spi.Timed).Timing(wallClock)
}

func (b countingBackend) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	b.runs.Add(1)
	return b.Reporter.Run(ctx, req)
}

func (b countingBackend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	b.runs.Add(1)
	return b.Reporter.Evaluate(ctx, req)
}

// usage is the part of an answer's usage the tests read.
type usage struct {
	Phases struct {
		Fetch float64 `json:"fetch"`
	} `json:"phasesMs"`
}

// routeAnswer is what a route answered: the fields of either route's body and
// of a problem that the tests read.
type routeAnswer struct {
	status  int
	body    []byte
	OK      *bool `json:"ok"`
	Value   json.RawMessage
	Usage   usage `json:"usage"`
	Failure struct {
		Channel   string `json:"channel"`
		ScriptRef string `json:"scriptRef"`
	} `json:"failure"`
	Type      string `json:"type"`
	Detail    string `json:"detail"`
	Retryable *bool  `json:"retryable"`
}

func (s *erasureService) post(t *testing.T, route string, ref contentref.Ref) routeAnswer {
	t.Helper()
	body := fmt.Sprintf(`{"scriptRef":%q,"input":{"n":21}}`, ref)
	if route == routeSandbox {
		body = fmt.Sprintf(`{"scriptRef":%q,"inputJson":"{\"n\":21}"}`, ref)
	}
	resp, err := http.Post(s.url+route, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := routeAnswer{status: resp.StatusCode}
	if a.body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(a.body, &a); err != nil {
		t.Fatalf("%s: %v: %s", route, err, a.body)
	}
	return a
}

// wantValue runs the script on route, which must answer its value, and
// returns the run's usage.
func (s *erasureService) wantValue(t *testing.T, route string, ref contentref.Ref) usage {
	t.Helper()
	a := s.post(t, route, ref)
	if a.status != http.StatusOK || a.OK == nil || !*a.OK || len(a.Value) == 0 {
		t.Fatalf("%s of %s: %d %s; want its value", route, ref, a.status, a.body)
	}
	return a.Usage
}

// wantMissing runs the script on route, which must answer that the store
// has no such script.
func (s *erasureService) wantMissing(t *testing.T, route string, ref contentref.Ref) {
	t.Helper()
	a := s.post(t, route, ref)
	switch route {
	case routeEvaluations:
		if a.status != http.StatusOK || a.OK == nil || *a.OK || a.Failure.Channel != "scriptMissing" || a.Failure.ScriptRef != ref.String() {
			t.Errorf("%s of a deleted script: %d %s; want scriptMissing", route, a.status, a.body)
		}
	default:
		if a.status != http.StatusNotFound || !strings.HasSuffix(a.Type, "#script-not-found") {
			t.Errorf("%s of a deleted script: %d %s; want 404 script-not-found", route, a.status, a.body)
		}
	}
}

// wantStoreUnavailable runs the script on route, which must answer the
// retryable store failure.
func (s *erasureService) wantStoreUnavailable(t *testing.T, route string, ref contentref.Ref) routeAnswer {
	t.Helper()
	a := s.post(t, route, ref)
	if a.status != http.StatusServiceUnavailable || !strings.HasSuffix(a.Type, "#store-unavailable") || a.Retryable == nil || !*a.Retryable {
		t.Errorf("%s of a script whose store does not confirm it: %d %s; want 503 store-unavailable, retryable", route, a.status, a.body)
	}
	return a
}

// erasureStore is a real store, opened from its URL as the service opens
// one, counting what reaches it.
type erasureStore struct {
	contentstore.Store
	url         string
	gets        atomic.Int64
	exists      atomic.Int64
	existsDelay time.Duration
	remove      func(t testing.TB, ref contentref.Ref)
	gcs         *gcsFront // nil for the directory
}

type storeCounts struct{ gets, exists int64 }

func (s *erasureStore) counts() storeCounts {
	return storeCounts{s.gets.Load(), s.exists.Load()}
}

func (s *erasureStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, ref)
}

func (s *erasureStore) Exists(ctx context.Context, ref contentref.Ref) error {
	s.exists.Add(1)
	if s.existsDelay > 0 {
		select {
		case <-time.After(s.existsDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Store.Exists(ctx, ref)
}

func (s *erasureStore) String() string { return s.url }

func (s *erasureStore) put(t testing.TB, script string) contentref.Ref {
	t.Helper()
	ref, err := s.Put(context.Background(), []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// wantNoRequests says whether the bucket heard anything since its
// requests were last reset (a directory cannot say).
func (s *erasureStore) wantNoRequests(t *testing.T, what string) {
	t.Helper()
	if s.gcs != nil {
		if reqs := s.gcs.requests(); len(reqs) != 0 {
			t.Errorf("%s: the bucket heard %v", what, reqs)
		}
	}
}

// wantNoMedia says whether the bucket was asked for an object's bytes
// since its requests were last reset.
func (s *erasureStore) wantNoMedia(t *testing.T, what string) {
	t.Helper()
	if s.gcs == nil {
		return
	}
	for _, r := range s.gcs.requests() {
		if strings.HasPrefix(r, "media ") {
			t.Errorf("%s: the bucket was asked for bytes: %v", what, s.gcs.requests())
			return
		}
	}
}

// unclosed is a store that the service does not close: the test's
// services share it.
type unclosed struct{ *erasureStore }

func (unclosed) Close() error { return nil }

// store opens a fresh store of kind: a directory, or a bucket of
// fake-gcs-server reached by the real client (STORAGE_EMULATOR_HOST).
func (e *erasureEnv) store(t testing.TB, kind string) *erasureStore {
	t.Helper()
	st := &erasureStore{}
	switch kind {
	case "directory":
		dir := t.TempDir()
		st.url = dir
		st.remove = func(t testing.TB, ref contentref.Ref) {
			if err := os.Remove(filepath.Join(dir, "sha256", ref.Hex())); err != nil {
				t.Fatal(err)
			}
		}
	case "gcs":
		st.gcs = &gcsFront{}
		gs := gcsfake.Start(t, st.gcs.wrap, "erasure")
		t.Setenv("STORAGE_EMULATOR_HOST", gs.Addr)
		st.url = "gs://erasure/scripts"
		st.remove = func(t testing.TB, ref contentref.Ref) {
			client, err := storage.NewClient(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			if err := client.Bucket("erasure").Object(ref.ObjectName("scripts/")).Delete(context.Background()); err != nil {
				t.Fatal(err)
			}
			st.gcs.reset()
		}
	}
	opts := contentstore.Options{MaxScriptBytes: erasureConfig().MaxScriptBytes, Logger: slog.New(slog.DiscardHandler),
		RetryInitialBackoff: time.Millisecond, RetryMaxBackoff: 5 * time.Millisecond}
	real, err := OpenStore(context.Background(), st.url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { real.Close() })
	st.Store = real
	return st
}

// gcsFront stands in front of the emulator: it records each request
// ("media <path>" for an object's bytes, "meta <path>" for the rest) and
// answers an object's requests itself while a fault is set for it.
type gcsFront struct {
	mu     sync.Mutex
	reqs   []string
	faults map[string]func(http.ResponseWriter, *http.Request) // by object hex
}

func (f *gcsFront) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := "meta "
		if gcsfake.IsMedia(r) {
			kind = "media "
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, kind+r.URL.Path)
		var fault func(http.ResponseWriter, *http.Request)
		for hex, fl := range f.faults {
			if strings.Contains(r.URL.Path, hex) {
				fault = fl
			}
		}
		f.mu.Unlock()
		if fault != nil {
			fault(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fail answers every request for ref's object with fault (nil: none).
func (f *gcsFront) fail(ref contentref.Ref, fault func(http.ResponseWriter, *http.Request)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.faults == nil {
		f.faults = map[string]func(http.ResponseWriter, *http.Request){}
	}
	if fault == nil {
		delete(f.faults, ref.Hex())
		return
	}
	f.faults[ref.Hex()] = fault
}

func (f *gcsFront) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}

func (f *gcsFront) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = nil
}

// BenchmarkScriptConfirmation measures what a run from the cache pays for
// its store's word that the script is still there: the cache's Get (the
// whole of a run's fetch) when no confirmation is due (hit) and when one is
// (confirm: SCRIPT_CONFIRM_AFTER=0), over a real directory and over the real
// GCS client against fake-gcs-server on loopback, each store opened as the
// service opens it. Each reports the median of its Gets; the difference of
// a store's two medians is what a run that confirms adds. docs/spi.md,
// "Scripts", has the figures.
func BenchmarkScriptConfirmation(b *testing.B) {
	var env erasureEnv // no engine: no run, only its fetch
	for _, kind := range []string{"directory", "gcs"} {
		for _, tc := range []struct {
			name  string
			after time.Duration
		}{{"hit", time.Hour}, {"confirm", 0}} {
			b.Run(kind+"/"+tc.name, func(b *testing.B) {
				st := env.store(b, kind)
				c := contentstore.NewCache(st.Store, contentstore.CacheOptions{
					MaxBytes: contentstore.DefaultCacheBytes, ConfirmAfter: tc.after, Logger: slog.New(slog.DiscardHandler)})
				ref := st.put(b, "input.n * 2")
				ctx := context.Background()
				if _, err := c.Get(ctx, ref); err != nil {
					b.Fatal(err)
				}
				took := make([]time.Duration, 0, b.N)
				for b.Loop() {
					start := time.Now()
					if _, err := c.Get(ctx, ref); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(start))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "median-µs/get")
			})
		}
	}
}
