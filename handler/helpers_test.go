package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// cacheDir holds wazero's compiled engine, so the second engine the tests
// build skips most of the compilation.
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "handler-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func newEngine(opts ...quickjs.Option) *quickjs.Engine {
	opts = append([]quickjs.Option{
		quickjs.WithPoolSize(1),
		quickjs.WithCompilationCache(cacheDir),
		quickjs.WithLogger(slog.New(slog.DiscardHandler)),
	}, opts...)
	e, err := quickjs.New(context.Background(), opts...)
	if err != nil {
		panic(err)
	}
	if err := e.Warm(context.Background()); err != nil {
		panic(err)
	}
	return e
}

// defaultEngine has the default CPU budget (seconds of work), so runaways
// end on their wall clock; cpuEngine has a tiny one, for the cpu limit.
var (
	defaultEngine = sync.OnceValue(func() *quickjs.Engine { return newEngine() })
	cpuEngine     = sync.OnceValue(func() *quickjs.Engine { return newEngine(quickjs.WithCPUBudget(300)) })
)

var testLimits = api.Limits{
	DefaultWallClock:   5 * time.Second,
	MaxWallClock:       30 * time.Second,
	DefaultMemoryBytes: 32 << 20,
	MinMemoryBytes:     256 << 10,
	MaxMemoryBytes:     64 << 20,
	MaxInputBytes:      2 << 20,
	MaxOutputBytes:     64 << 10,
	MaxScriptBytes:     64 << 10,
	MaxRequestBytes:    16 << 20, // at least api.MinRequestBytes(MaxScriptBytes, MaxInputBytes)
	MaxHeaderBytes:     32 << 10,
	MaxConcurrent:      1,
	MaxBatchItems:      1000,
	RequestTimeout:     time.Minute,
}

// effectOptions are the options of an effect that applies the bounds of
// l, as the service builds it, with a grace of a second.
func effectOptions(l api.Limits, log *slog.Logger) effect.Options {
	return effect.Options{
		MaxInputBytes: int(l.MaxInputBytes), MaxOutputBytes: int(l.MaxOutputBytes),
		MaxScriptBytes: l.MaxScriptBytes, MinMemoryBytes: l.MinMemoryBytes, MaxMemoryBytes: l.MaxMemoryBytes,
		MaxWallClock: l.MaxWallClock, BackendGrace: time.Second, Logger: log,
	}
}

// Scripts that make the test backend misbehave instead of running them.
const (
	scriptPanic          = "/*panic*/"
	scriptInfrastructure = "/*infrastructure*/"
	scriptMalformed      = "/*malformed*/"
	scriptDuplicateKeys  = "/*duplicate-keys*/" // an ok outcome whose value has a key twice
	scriptHang           = "/*hang*/"           // blocks until its context ends, then returns the error
	scriptIgnore         = "/*ignore*/"         // tells the test it started, then blocks until release is closed, whatever its context (see ignore)
	scriptOverlong       = "/*overlong*/"       // an ok value of overlongBytes, longer than any run within 1 MiB can make
	scriptSignal         = "/*signal*/ "        // prefix: tell the test when the run starts, then run the rest
	scriptOutcome        = "/*outcome*/ "       // prefix: answer the outcome document that follows
)

// overlongBytes is one more than spi.MaxValueBytes(1 MiB).
const overlongBytes = 3<<20 + 1

// testBackend is the real engine with a few scripts that make it misbehave,
// and a record of how runs ended.
type testBackend struct {
	*quickjs.Engine
	started chan struct{} // receives when a scriptSignal or scriptIgnore run starts
	ignored chan struct{} // receives when a scriptIgnore run's context ends while it blocks
	release chan struct{} // closed to end the scriptIgnore runs
	mu      sync.Mutex
	runs    []run // how each run of the real engine ended
	// begun counts the runs of the real engine begun, going those not
	// returned yet.
	begun, going atomic.Int64
}

func (b *testBackend) runsBegun() int64 { return b.begun.Load() }
func (b *testBackend) runsGoing() int64 { return b.going.Load() }

type run struct {
	script string
	err    error
	at     time.Time
}

func newTestBackend(e *quickjs.Engine) *testBackend {
	return &testBackend{Engine: e, started: make(chan struct{}, 16), ignored: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *testBackend) misbehave(ctx context.Context, script string) (spi.Outcome, error, bool) {
	switch {
	case script == scriptPanic:
		panic("secret panic detail")
	case script == scriptInfrastructure:
		return spi.Infrastructure("test: the machine room is on fire"), nil, true
	case script == scriptMalformed:
		return spi.Outcome{Kind: "bogus"}, nil, true
	case script == scriptDuplicateKeys:
		return spi.OK([]byte(`{"a":1,"a":2}`)), nil, true
	case script == scriptHang:
		<-ctx.Done()
		return spi.Outcome{}, ctx.Err(), true
	case script == scriptOverlong:
		v := bytes.Repeat([]byte("x"), overlongBytes)
		v[0], v[len(v)-1] = '"', '"'
		return spi.OK(v), nil, true
	case script == scriptIgnore:
		return b.ignore(ctx)
	case strings.HasPrefix(script, scriptOutcome):
		o, err := spi.DecodeOutcome([]byte(strings.TrimPrefix(script, scriptOutcome)))
		if err != nil {
			panic(err)
		}
		return o, nil, true
	case strings.HasPrefix(script, scriptSignal):
		b.started <- struct{}{}
	}
	return spi.Outcome{}, nil, false
}

// ignore is a run that does not stop when its context ends: it tells the
// test when it started and when its context ended (the effect's deadline
// passed, or the caller left), and returns only once release is closed:
// then with its context's error, as an engine that stops late does, or with
// a value when its context never ended.
func (b *testBackend) ignore(ctx context.Context) (spi.Outcome, error, bool) {
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		b.ignored <- struct{}{}
		<-b.release
	}
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err, true
	}
	return spi.OK([]byte(`"released"`)), nil, true
}

func (b *testBackend) record(script string, err error) {
	b.mu.Lock()
	b.runs = append(b.runs, run{script, err, time.Now()})
	b.mu.Unlock()
}

// ended returns how the last run of script ended; ok is false when no such
// run has returned.
func (b *testBackend) ended(script string) (r run, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.runs) - 1; i >= 0; i-- {
		if b.runs[i].script == script {
			return b.runs[i], true
		}
	}
	return run{}, false
}

func (b *testBackend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if out, err, ok := b.misbehave(ctx, req.Script); ok {
		return out, err
	}
	b.begun.Add(1)
	b.going.Add(1)
	defer b.going.Add(-1)
	out, err := b.Engine.Evaluate(ctx, req)
	b.record(req.Script, err)
	return out, err
}

func (b *testBackend) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	if out, err, ok := b.misbehave(ctx, req.Script); ok {
		return spi.Report{Outcome: out}, err
	}
	b.begun.Add(1)
	b.going.Add(1)
	defer b.going.Add(-1)
	rep, err := b.Engine.Run(ctx, req)
	b.record(req.Script, err)
	return rep, err
}

// faultyStore returns what a test sets for a reference, else asks the real
// store.
type faultyStore struct {
	inner  effect.ScriptReader
	mu     sync.Mutex
	faults map[string]func() ([]byte, error)
}

func (s *faultyStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	s.mu.Lock()
	f := s.faults[ref.String()]
	s.mu.Unlock()
	if f != nil {
		return f()
	}
	return s.inner.Get(ctx, ref)
}

func (s *faultyStore) set(ref string, f func() ([]byte, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults == nil {
		s.faults = make(map[string]func() ([]byte, error))
	}
	s.faults[ref] = f
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the JSON log lines whose message is msg.
func (b *syncBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		if m["msg"] == msg || m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// await waits for c to receive. What it waits for takes milliseconds; the
// minute is only there to fail rather than hang on a machine however busy.
func await(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
	}
}

// awaitLog waits for a log line whose message is msg.
func (v *env) awaitLog(t *testing.T, msg string) {
	t.Helper()
	for start := time.Now(); len(v.logs.lines(t, msg)) == 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("waited a minute for the log line %q:\n%s", msg, v.logs)
		}
	}
}

// env is one server under test, over the shared engines.
type env struct {
	t       *testing.T
	srv     *httptest.Server
	mem     *contentstore.MemStore
	cache   *contentstore.Cache
	store   *faultyStore
	backend *testBackend
	logs    *syncBuffer
	cfg     handler.Config
	raw     bool
	// scripts is the effect's store (the faulty store over the cache, or
	// effect.NoStore); editEffect adjusts the effect's options.
	scripts    effect.ScriptReader
	editEffect func(*effect.Options)

	readTimeout time.Duration
	unobserved  bool
}

type option func(*env)

func withEngine(e *quickjs.Engine) option { return func(v *env) { v.backend = newTestBackend(e) } }
func withoutStore() option                { return func(v *env) { v.scripts = effect.NoStore } }
func withScripts(r effect.ScriptReader) option {
	return func(v *env) { v.scripts = r }
}
func withEffect(f func(*effect.Options)) option { return func(v *env) { v.editEffect = f } }
func withConfig(f func(*handler.Config)) option { return func(v *env) { f(&v.cfg) } }

// unvalidated serves the handler without the OpenAPI check, whose reading
// of the whole body first would hide how the handler reads it.
func unvalidated() option { return func(v *env) { v.raw = true } }

// unobserved discards the logs of the handler and the effect: what the
// handler decides must not change.
func unobserved() option { return func(v *env) { v.unobserved = true } }

// withReadTimeout sets the test server's http.Server.ReadTimeout.
func withReadTimeout(d time.Duration) option { return func(v *env) { v.readTimeout = d } }

func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	mem, err := contentstore.NewMemStore(contentstore.Options{MaxScriptBytes: testLimits.MaxScriptBytes, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	v := &env{t: t, mem: mem, logs: &syncBuffer{}}
	v.cache = contentstore.NewCache(mem, contentstore.CacheOptions{MaxBytes: 1 << 20, ConfirmAfter: contentstore.DefaultConfirmAfter, Logger: slog.New(slog.DiscardHandler)})
	v.store = &faultyStore{inner: v.cache}
	v.backend = newTestBackend(defaultEngine())
	v.cfg = handler.Config{
		Limits:     testLimits,
		Engine:     api.Engine{Name: quickjs.EngineName, Version: quickjs.EngineVersion, WasmSHA256: quickjs.WasmSHA256()},
		Logger:     slog.New(slog.NewJSONHandler(v.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		CacheStats: v.cache.Stats,
	}
	v.scripts = v.store
	for _, o := range opts {
		o(v)
	}
	if v.unobserved {
		v.cfg.Logger = nil
	}
	eo := effectOptions(v.cfg.Limits, v.cfg.Logger)
	if v.editEffect != nil {
		v.editEffect(&eo)
	}
	eff, err := effect.New(v.scripts, v.backend, eo)
	if err != nil {
		t.Fatal(err)
	}
	v.cfg.Effect = eff
	h, err := handler.New(v.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !v.raw {
		h = validating(t, h)
	}
	v.srv = httptest.NewUnstartedServer(h)
	v.srv.Config.ReadTimeout = v.readTimeout
	v.srv.Start()
	t.Cleanup(v.srv.Close)
	return v
}

// put stores a script and returns its reference.
func (v *env) put(script string) string {
	v.t.Helper()
	ref, err := v.mem.Put(context.Background(), []byte(script))
	if err != nil {
		v.t.Fatal(err)
	}
	return ref.String()
}

type response struct {
	status int
	header http.Header
	body   []byte     // without the usage member of an evaluation's 200 answer
	usage  *spi.Usage // what the run used, from that member
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// problem decodes a problem document.
func (r response) problem(t *testing.T) map[string]any {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json; response %s", ct, r)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("problem is not JSON: %v: %s", err, r.body)
	}
	return m
}

// do sends a request; body may be a string, []byte or a value to marshal.
func (v *env) do(ctx context.Context, method, path string, body any, header map[string]string) (response, error) {
	r, err := servicetest.Do(ctx, v.srv.Client(), method, v.srv.URL+path, body, header)
	return response{status: r.Status, header: r.Header, body: r.Body, usage: r.Usage}, err
}

func (v *env) mustDo(method, path string, body any, header map[string]string) response {
	v.t.Helper()
	r, err := v.do(context.Background(), method, path, body, header)
	if err != nil {
		v.t.Fatal(err)
	}
	return r
}

func (v *env) post(path string, body any) response {
	v.t.Helper()
	return v.mustDo(http.MethodPost, path, body, nil)
}

// wantProblem checks a problem's status, type and retryable member, and
// that its detail mentions each of the given texts.
func wantProblem(t *testing.T, r response, status int, slug string, retryable bool, detailHas ...string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; response %s", r.status, status, r)
	}
	p := r.problem(t)
	if want := "https://github.com/loom-plugins/sandbox-cloudrun/blob/main/docs/problems.md#" + slug; p["type"] != want {
		t.Fatalf("type %v, want %s; response %s", p["type"], want, r)
	}
	if p["status"] != float64(status) {
		t.Fatalf("status member %v, want %d", p["status"], status)
	}
	if p["retryable"] != retryable {
		t.Fatalf("retryable %v, want %v; response %s", p["retryable"], retryable, r)
	}
	detail, _ := p["detail"].(string)
	for _, s := range detailHas {
		if !strings.Contains(detail, s) {
			t.Fatalf("detail %q does not mention %q", detail, s)
		}
	}
	return p
}

func wantBody(t *testing.T, r response, status int, body string) {
	t.Helper()
	if r.status != status || strings.TrimSuffix(string(r.body), "\n") != body {
		t.Fatalf("got  %d %s\nwant %d %s", r.status, bytes.TrimSpace(r.body), status, body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
}

// The OpenAPI document, loaded and validated once.
var apiDoc = sync.OnceValues(func() (routers.Router, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../api/openapi.yaml")
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	doc.Servers = nil // match paths on any host
	return legacy.NewRouter(doc)
})

// validating checks every real request and response of the tests against
// api/openapi.yaml: each response must be what the document says the route
// answers with that status, and each request the server accepted (2xx) must
// be one the document allows. A request to a path or method the document
// does not have must get a 404 or 405 problem.
func validating(t *testing.T, h http.Handler) http.Handler {
	router, err := apiDoc()
	if err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqBody, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		tee := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tee, r)
		if r.Context().Err() != nil {
			return // the client went away: nothing was sent, nothing to check
		}
		res := &http.Response{StatusCode: tee.status, Header: w.Header()}
		if res.StatusCode == 0 {
			res.StatusCode = http.StatusOK
		}
		resBody := tee.body.Bytes()

		check := r.Clone(context.Background())
		check.Body = io.NopCloser(bytes.NewReader(reqBody))
		route, params, err := router.FindRoute(check)
		if err != nil {
			if res.StatusCode != http.StatusNotFound && res.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("openapi: %s %s is not in the document but got %d", r.Method, r.URL.Path, res.StatusCode)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("openapi: %s %s: %d with Content-Type %q, want a problem", r.Method, r.URL.Path, res.StatusCode, ct)
			}
			return
		}
		in := &openapi3filter.RequestValidationInput{
			Request: check, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
		}
		if res.StatusCode/100 == 2 {
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
				t.Errorf("openapi: the server accepted a request the document refuses: %s %s %.300s: %v", r.Method, r.URL.Path, reqBody, err)
			}
		}
		out := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in,
			Status:                 res.StatusCode,
			Header:                 res.Header,
			Body:                   io.NopCloser(bytes.NewReader(resBody)),
			Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		}
		if ct := res.Header.Get("Content-Type"); ct == api.BatchContentType {
			// a stream of lines: each is checked against the response's
			// schema, which is a line's
			out.Options.ExcludeResponseBody = true
			validateLines(t, route, res.StatusCode, ct, resBody)
		}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("openapi: %s %s → %d %.300s does not match the document: %v", r.Method, r.URL.Path, res.StatusCode, resBody, err)
		}
	})
}

// validateLines checks each line of an NDJSON answer against the schema
// the document gives the route's answer of that status and type.
func validateLines(t *testing.T, route *routers.Route, status int, ct string, body []byte) {
	t.Helper()
	ref := route.Operation.Responses.Status(status)
	if ref == nil || ref.Value.Content.Get(ct) == nil {
		t.Errorf("openapi: %s %s has no %d answer of type %s", route.Method, route.Path, status, ct)
		return
	}
	schema := ref.Value.Content.Get(ct).Schema.Value
	// as openapi3filter.ValidateResponse reads a body: a response, by the
	// document's version of JSON Schema (3.1's, where a schema without a
	// type accepts null)
	opts := []openapi3.SchemaValidationOption{openapi3.VisitAsResponse(), openapi3.MultiErrors()}
	if route.Spec.IsOpenAPI31OrLater() {
		opts = append(opts, openapi3.EnableJSONSchema2020())
	}
	for line := range bytes.Lines(body) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Errorf("openapi: a line of %s %s is not JSON: %v: %.300s", route.Method, route.Path, err, line)
			continue
		}
		if err := schema.VisitJSON(v, opts...); err != nil {
			t.Errorf("openapi: the line %.300s of %s %s does not match the document: %v", line, route.Method, route.Path, err)
		}
	}
}

// teeWriter passes a response through and keeps a copy; Unwrap lets the
// handler reach the connection (http.ResponseController).
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
