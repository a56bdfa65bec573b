package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// problemBase is the start of every problem's type; the slug follows.
const problemBase = "https://github.com/loom-plugins/sandbox-cloudrun/blob/main/docs/problems.md#"

// Routes.
const (
	routeEvaluations = "/v1/evaluations"
	routeSandbox     = "/v1/sandbox/evaluate"
	routeCaps        = "/v1/capabilities"
)

// cacheDir is wazero's compilation cache, shared by every child process and
// in-process engine of one test run, so that only the first one compiles.
var cacheDir string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == worker.Verb {
		// a worker of an in-process service (inprocConfig.workers): the
		// test binary is its own worker, as the service's binary is
		os.Exit(worker.Main())
	}
	if dir := os.Getenv(helperEnv); dir != "" {
		// a helper process (see helperProcess): the parent owns the cache
		cacheDir = dir
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir = filepath.Join(dir, "wazero-cache")
	code := m.Run()
	_ = os.RemoveAll(dir)
	servicetest.Cleanup()
	os.Exit(code)
}

// child is the service binary running `serve` on a loopback port, with a
// client of its own.
type child struct {
	*servicetest.Process
	t      *testing.T
	client *http.Client
}

type startOpts struct {
	env []string
	// notReady: wait for /healthz only (the store is meant to be
	// unreachable, so /readyz never turns 200).
	notReady bool
}

// startChild starts the binary with the given environment on top of the
// test's and waits until it is ready. The process is killed when the test
// ends; its log is printed if the test failed.
func startChild(t *testing.T, o startOpts) *child {
	t.Helper()
	c := &child{t: t, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	t.Cleanup(c.client.CloseIdleConnections)
	probe := "/readyz"
	if o.notReady {
		probe = "/healthz"
	}
	c.Process = servicetest.Start(t, servicetest.Options{
		Env: append([]string{"COMPILATION_CACHE_DIR=" + cacheDir}, o.env...), Probe: probe, Client: c.client})
	return c
}

func tail(s string, n int) string { return servicetest.Tail(s, n) }

// response is what the tests keep of an HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
}

func (r response) String() string {
	return fmt.Sprintf("%d %s", r.status, tail(strings.TrimSpace(string(r.body)), 600))
}

// do sends one request (servicetest.Do).
func do(ctx context.Context, client *http.Client, method, url string, body any, header map[string]string) (response, error) {
	r, err := servicetest.Do(ctx, client, method, url, body, header)
	return response{status: r.Status, header: r.Header, body: r.Body, took: r.Took}, err
}

func (c *child) do(method, path string, body any, header map[string]string) response {
	c.t.Helper()
	r, err := do(context.Background(), c.client, method, c.URL+path, body, header)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

func (c *child) post(path string, body any) response {
	c.t.Helper()
	return c.do(http.MethodPost, path, body, nil)
}

// problemDoc is a decoded problem document.
type problemDoc map[string]any

// asProblem decodes r as a problem document and checks its invariant
// members: Content-Type, type under docs/problems.md, a title, status equal
// to the HTTP status, a detail and a boolean retryable; limit and limitValue
// come together.
func asProblem(r response) (problemDoc, error) {
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		return nil, fmt.Errorf("Content-Type %q, want application/problem+json; response %s", ct, r)
	}
	var p problemDoc
	if err := json.Unmarshal(r.body, &p); err != nil {
		return nil, fmt.Errorf("problem is not JSON: %v: %s", err, r)
	}
	typ, _ := p["type"].(string)
	if !strings.HasPrefix(typ, problemBase) || len(typ) == len(problemBase) {
		return nil, fmt.Errorf("type %q is not under docs/problems.md", typ)
	}
	if title, _ := p["title"].(string); title == "" {
		return nil, fmt.Errorf("no title: %s", r)
	}
	if p["status"] != float64(r.status) {
		return nil, fmt.Errorf("status member %v, HTTP status %d", p["status"], r.status)
	}
	if d, _ := p["detail"].(string); d == "" {
		return nil, fmt.Errorf("no detail: %s", r)
	}
	if _, ok := p["retryable"].(bool); !ok {
		return nil, fmt.Errorf("retryable is not a boolean: %s", r)
	}
	if _, hasLimit := p["limit"]; hasLimit != (p["limitValue"] != nil) {
		return nil, fmt.Errorf("limit and limitValue must come together: %s", r)
	}
	return p, nil
}

func (p problemDoc) slug() string {
	s, _ := p["type"].(string)
	return strings.TrimPrefix(s, problemBase)
}

func (p problemDoc) detail() string {
	s, _ := p["detail"].(string)
	return s
}

// wantProblem checks that r is the problem slug with the status, the
// retryable member and a detail mentioning each of detailHas.
func wantProblem(t *testing.T, r response, status int, slug string, retryable bool, detailHas ...string) problemDoc {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (%s); response %s", r.status, status, slug, r)
	}
	p, err := asProblem(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.slug() != slug {
		t.Fatalf("problem %q, want %q; response %s", p.slug(), slug, r)
	}
	if p["retryable"] != retryable {
		t.Fatalf("retryable %v, want %v; response %s", p["retryable"], retryable, r)
	}
	for _, s := range detailHas {
		if !strings.Contains(p.detail(), s) {
			t.Fatalf("detail %q does not mention %q", p.detail(), s)
		}
	}
	return p
}

// wantJSON checks a 200 application/json answer with exactly body.
func wantJSON(t *testing.T, r response, body string) {
	t.Helper()
	if r.status != 200 || strings.TrimSuffix(string(r.body), "\n") != body {
		t.Fatalf("got  %s\nwant 200 %s", r, body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
}

// putScripts stores scripts in a directory store (the layout the binary
// serves with STORE_URL=<dir>) and returns their references in order.
// maxBytes bounds what Put accepts, so a test can store a script over the
// server's own cap.
func putScripts(t *testing.T, dir string, maxBytes int64, scripts ...string) []string {
	t.Helper()
	st, err := contentstore.NewDirStore(dir, contentstore.Options{MaxScriptBytes: maxBytes, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]string, len(scripts))
	for i, s := range scripts {
		ref, err := st.Put(context.Background(), []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		refs[i] = ref.String()
	}
	return refs
}

// jsonString is s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// missingRef is a reference nothing is stored under.
var missingRef = "sha256:" + strings.Repeat("0", 64)
