package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// The service built from an empty environment (Defaults) advertises the
// limits and the engine README's GET /v1/capabilities example shows, so that
// a default restated differently anywhere on the way (the configuration, the
// handler, the effect, the engine) fails here, and so does an example left
// behind by an engine upgrade.
func TestServiceFromDefaultsAdvertisesREADMELimits(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\{"spiVersion".*"limits":(\{[^}]*\}).*"engine":(\{[^}]*\}).*$`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no capabilities example")
	}
	var want map[string]int64
	if err := json.Unmarshal(m[1], &want); err != nil {
		t.Fatal(err)
	}
	wantEngine := string(m[2])

	ctx := context.Background()
	store, err := contentstore.NewMemStore(contentstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.ProcessKill = false // the engine runs in this test's process
	svc, err := New(ctx, cfg, Options{Store: store, Backend: InProcess()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(ctx) })
	srv := httptest.NewServer(svc.Handler)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/v1/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got struct {
		Limits map[string]int64 `json:"limits"`
		Engine json.RawMessage  `json:"engine"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for k, v := range want {
		if got.Limits[k] != v {
			t.Errorf("limits.%s: the service from Defaults says %d, README %d", k, got.Limits[k], v)
		}
	}
	if len(got.Limits) != len(want) {
		t.Errorf("limits: the service says %v, README %v", got.Limits, want)
	}
	if string(got.Engine) != wantEngine {
		t.Errorf("engine: the service says %s, README %s", got.Engine, wantEngine)
	}
}

// flakyStore is a store whose Check fails with fail's error while it is set.
type flakyStore struct {
	contentstore.Store
	fail atomic.Pointer[error]
}

func (f *flakyStore) Check(ctx context.Context) error {
	if err := f.fail.Load(); err != nil {
		return *err
	}
	return nil
}

func (f *flakyStore) String() string { return "gs://scripts/p/" }

func (f *flakyStore) failWith(err error) {
	if err == nil {
		f.fail.Store(nil)
		return
	}
	f.fail.Store(&err)
}

// idleBackend is an engine that is warm at once and runs nothing.
type idleBackend struct{}

func (idleBackend) Capabilities() spi.Capabilities {
	return quickjs.DeclaredCapabilities(quickjs.DefaultCPUBudget, true)
}
func (idleBackend) Evaluate(context.Context, spi.Request) (spi.Outcome, error) {
	return spi.Infrastructure("idle"), nil
}
func (idleBackend) Run(context.Context, spi.RunRequest) (spi.Report, error) {
	return spi.Report{Outcome: spi.Infrastructure("idle")}, nil
}
func (idleBackend) Warm(context.Context) error  { return nil }
func (idleBackend) Close(context.Context) error { return nil }

// A remote store that cannot be read does not stop the server, which says
// so at once in its log, at ERROR when the failure will not mend on its own
// and at WARNING when it may, with the cause, once per change and not at
// every probe; /readyz's problem names the store and how it fails (never
// the cause's text); its return is logged at INFO.
func TestStoreThatCannotBeReadIsSaid(t *testing.T) {
	store, err := contentstore.NewMemStore(contentstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	flaky := &flakyStore{Store: store}
	flaky.failWith(fmt.Errorf("%w: checking gs://scripts/p/: googleapi: Error 403: runner@secret.example lacks storage.objects.list", contentref.ErrPermission))
	logs := &servicetest.Logs{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := New(ctx, Defaults(), Options{
		Logger: telemetry.NewLogger(logs, slog.LevelInfo, ""), Store: flaky,
		Backend: func(context.Context, worker.EngineOptions, *slog.Logger) (Backend, error) { return idleBackend{}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String() + "/readyz"

	// logged at start, before any probe
	waitFor(t, func() bool { return len(logs.Lines("the script store cannot be read: access is denied")) == 1 })
	want := "the instance is not ready: the script store gs://scripts/p/ cannot be read: access is denied (the log says why)"
	waitFor(t, func() bool { return readyz(t, url) == want })
	for range 3 {
		if got := readyz(t, url); got != want {
			t.Fatalf("/readyz: %s", got)
		}
	}
	lines := logs.Lines("the script store cannot be read: access is denied")
	if len(lines) != 1 || lines[0]["severity"] != "ERROR" || lines[0]["store"] != "gs://scripts/p/" ||
		!strings.Contains(lines[0]["err"].(string), "Error 403") {
		t.Fatalf("the failure's log lines: %v\n%s", lines, logs)
	}

	flaky.failWith(nil)
	if got := readyz(t, url); got != "ready" {
		t.Fatalf("/readyz once the store answers: %s", got)
	}
	if l := logs.Lines("the script store can be read again"); len(l) != 1 || l[0]["severity"] != "INFO" {
		t.Fatalf("the return: %v\n%s", l, logs)
	}

	flaky.failWith(fmt.Errorf("%w: checking gs://scripts/p/: connection reset", contentref.ErrUnavailable))
	if got := readyz(t, url); got != "the instance is not ready: the script store gs://scripts/p/ cannot be read: it does not answer (the log says why)" {
		t.Fatalf("/readyz: %s", got)
	}
	if l := logs.Lines("the script store cannot be read: it does not answer"); len(l) != 1 || l[0]["severity"] != "WARNING" {
		t.Fatalf("a failure that may mend: %v\n%s", l, logs)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// readyz is GET /readyz's problem detail, or "ready".
func readyz(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct {
		Status any    `json:"status"`
		Detail string `json:"detail"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && p.Status == "ready" {
		return "ready"
	}
	return p.Detail
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("not within 30 s")
}
