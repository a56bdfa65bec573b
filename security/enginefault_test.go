package security

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	sandboxsvc "github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// trapWorkerArg makes this test binary, started as a worker, break its
// engine for the scripts that begin with faultMarker (quickjs.WithTrapForTests):
// a run of one traps inside the guest, as a script that found a
// memory-safety bug in QuickJS would make it.
const (
	trapWorkerArg = "trap"
	faultMarker   = "/* engine fault */"
)

// trapWorker is the worker verb of trapWorkerArg.
func trapWorker() int {
	return worker.Main(quickjs.WithTrapForTests(func(script string) bool { return strings.HasPrefix(script, faultMarker) }))
}

// An engine fault is an operator's alarm, through the whole service over
// HTTP on loopback, its guests in locked-down worker processes whose engine
// traps: on both routes the answer stays infrastructure; the service logs
// one ERROR line "engine fault" with the request's id and trace, the route,
// the script's hash and the trap's text; its sandbox.engine.faults metric
// counts it by route, as its OpenTelemetry exporter writes it; and the
// fault costs only its run: the next runs answer, and no worker died or
// was killed.
func TestEngineFaultIsAnAlarm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	ctx := context.Background()
	logs, exported := &servicetest.Logs{}, &servicetest.Logs{}
	log := telemetry.NewLogger(logs, slog.LevelInfo, "test-project")
	cfg := sandboxsvc.Defaults()
	cfg.CompilationCacheDir = cacheDir
	cfg.OTelExporter = telemetry.ExporterStdout
	st, err := contentstore.NewMemStore(contentstore.Options{MaxScriptBytes: cfg.MaxScriptBytes, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	var pool *worker.Pool
	svc, err := sandboxsvc.New(ctx, cfg, sandboxsvc.Options{Logger: log, Store: st, TelemetryOut: exported,
		// the pool the service builds, its workers started with trapWorkerArg
		Backend: func(_ context.Context, eo worker.EngineOptions, log *slog.Logger) (sandboxsvc.Backend, error) {
			p, err := worker.New(worker.Options{Engine: eo, Concurrent: cfg.MaxConcurrentEvaluations, Spares: cfg.WorkerSpares,
				Lockdown: worker.Lockdown(cfg.WorkerLockdown), Logger: log, LogLevel: cfg.LogLevel,
				Args: []string{worker.Verb, trapWorkerArg}})
			pool = p
			return p, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	closeService := func() {
		if !closed {
			closed = true
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			svc.Close(cctx) // flushes the metrics to exported
		}
	}
	defer closeService()
	if err := svc.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler)
	defer srv.Close()

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	script := faultMarker + " input.n + 1"
	ref, err := st.Put(ctx, []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	post := func(route, body, requestID string) servicetest.Response {
		t.Helper()
		r, err := servicetest.Do(ctx, srv.Client(), http.MethodPost, srv.URL+route, body,
			map[string]string{"X-Request-Id": requestID, "traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	r := post(string(evaluations), `{"scriptRef":"`+ref.String()+`","input":{"n":1}}`, "fault-1")
	var p struct {
		Type      string `json:"type"`
		Detail    string `json:"detail"`
		Retryable bool   `json:"retryable"`
	}
	if err := json.Unmarshal(r.Body, &p); err != nil || r.Status != 503 || !strings.HasSuffix(p.Type, "#backend-unavailable") ||
		!p.Retryable || !strings.Contains(p.Detail, "quickjs: engine failed: wasm error: unreachable") {
		t.Errorf("%s: %d %s, want the retryable infrastructure problem", evaluations, r.Status, r.Body)
	}
	r = post(string(spiRoute), `{"script":`+quote(script)+`,"inputJson":"{\"n\":1}"}`, "fault-2")
	if want := `{"ok":false,"kind":"infrastructure","message":"quickjs: engine failed: wasm error: unreachable"}`; r.Status != 200 || string(r.Body) != want+"\n" {
		t.Errorf("%s: %d %s, want %s", spiRoute, r.Status, r.Body, want)
	}
	// the service serves on: the next runs, through the same workers
	if r := post(string(evaluations), `{"scriptRef":"`+mustPut(t, st, "input.n + 1")+`","input":{"n":1}}`, "ok-1"); r.Status != 200 || string(r.Body) != `{"ok":true,"value":2}`+"\n" {
		t.Errorf("the next run on %s: %d %s", evaluations, r.Status, r.Body)
	}
	if r := post(string(spiRoute), `{"script":"input.n + 1","inputJson":"{\"n\":1}"}`, "ok-2"); r.Status != 200 || string(r.Body) != `{"ok":true,"value":2}`+"\n" {
		t.Errorf("the next run on %s: %d %s", spiRoute, r.Status, r.Body)
	}

	lines := logs.Lines(answer.EngineFaultMessage)
	if len(lines) != 2 {
		t.Fatalf("%d %q lines, want 2:\n%s", len(lines), answer.EngineFaultMessage, logs)
	}
	for i, route := range []route{evaluations, spiRoute} {
		for k, want := range map[string]any{
			"severity": "ERROR", "route": string(route), "requestId": []string{"fault-1", "fault-2"}[i],
			"logging.googleapis.com/trace": "projects/test-project/traces/" + traceID,
			"scriptSha256":                 contentref.RefOf([]byte(script)).String(), "trap": "wasm error: unreachable",
		} {
			if lines[i][k] != want {
				t.Errorf("the engine fault line of %s has %s = %v, want %v: %v", route, k, lines[i][k], want, lines[i])
			}
		}
	}
	if pool.Kills() != 0 || len(logs.Lines("a sandbox worker exited")) != 0 || len(logs.Lines("a sandbox worker died during a run")) != 0 {
		t.Errorf("the fault cost a worker (%d killed):\n%s", pool.Kills(), logs)
	}

	closeService()
	faults, err := exportedSums(exported.String(), "sandbox.engine.faults")
	if err != nil {
		t.Fatal(err)
	}
	if len(faults) != 2 || faults[string(evaluations)] != 1 || faults[string(spiRoute)] != 1 {
		t.Errorf("sandbox.engine.faults by route = %v, want 1 on each route", faults)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func mustPut(t *testing.T, st *contentstore.MemStore, script string) string {
	t.Helper()
	ref, err := st.Put(context.Background(), []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// exportedSums reads the last value, by route, of the counter name in what
// the stdout exporter wrote (spans and metrics, one JSON document each).
func exportedSums(out, name string) (map[string]float64, error) {
	type point struct {
		Attributes []struct {
			Key   string
			Value struct{ Value any }
		}
		Value float64
	}
	sums := map[string]float64{}
	dec := json.NewDecoder(strings.NewReader(out))
	found := false
	for {
		var doc struct {
			ScopeMetrics []struct {
				Metrics []struct {
					Name string
					Data struct{ DataPoints []point }
				}
			}
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		for _, sm := range doc.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != name {
					continue
				}
				found = true
				for _, p := range m.Data.DataPoints {
					route := ""
					for _, a := range p.Attributes {
						if a.Key == "route" {
							route, _ = a.Value.Value.(string)
						}
					}
					sums[route] = p.Value // cumulative: the last export holds the total
				}
			}
		}
	}
	if !found {
		return nil, errors.New("the exporter wrote no " + name + ":\n" + servicetest.Tail(out, 4<<10))
	}
	return sums, nil
}
