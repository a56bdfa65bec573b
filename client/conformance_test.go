package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance/conformancetest"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// TestConformanceThroughTheClient runs the conformance kit through the client
// against a server on loopback that runs the real engine, one evaluation at a
// time as the service does by default, so that the concurrent cases also go
// through 429 and Retry-After.
//
// The server is contractDouble, a TEST DOUBLE of the service's HTTP contract,
// not the service's handler: it lets the client be proven end to end on its
// own. The same kit runs against the real handler and binary elsewhere.
func TestConformanceThroughTheClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole kit over HTTP")
	}
	engine, err := quickjs.New(context.Background(), quickjs.WithHardKill(quickjs.HardKillForTests, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(context.Background()) })
	double := &contractDouble{engine: engine, gate: make(chan struct{}, 1)}
	srv := httptest.NewServer(double)
	t.Cleanup(srv.Close)

	conformancetest.Run(t, func(t *testing.T) spi.Backend {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := client.Dial(ctx, srv.URL)
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		if c.Capabilities() != engine.Capabilities() {
			t.Fatalf("the client's capabilities %+v differ from the engine's %+v", c.Capabilities(), engine.Capabilities())
		}
		return c
	}, conformance.Options{
		// How long past a run's wall clock the backend may answer. That the
		// engine stops a run within the in-process grace is the engine's
		// own kit (quickjs: TestConformance, with the default); here it
		// bounds how long the client may take to carry an answer, and a
		// client that never carries one fails at any grace. Composition
		// carries a 5 MiB message (about 29 MB of JSON) back through the
		// client under the race detector: about 14 s of CPU, which on two
		// cores kept busy by other work took over a minute.
		BackendGrace: 5 * time.Minute,
	})

	// abort_mid_run cancelled a runaway through the client: the server must
	// have seen its request end and stopped the run, not left it running.
	deadline := time.Now().Add(5 * time.Second)
	for double.running.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := double.running.Load(); n != 0 {
		t.Errorf("%d runs still going on the server after the kit", n)
	}
	if n := engine.StuckRuns(); n != 0 {
		t.Errorf("%d runs abandoned by the engine's watchdog", n)
	}
	t.Logf("server: %d evaluations, %d refused as busy, %d cancelled by the client; largest response %d bytes",
		double.served.Load(), double.busy.Load(), double.cancelled.Load(), double.largest.Load())
	if double.cancelled.Load() == 0 {
		t.Errorf("no run was cancelled by the client; abort_mid_run did not reach the server")
	}
}

// contractDouble is a TEST DOUBLE of the service's HTTP contract (api/openapi.yaml),
// not the service: the smallest handler that serves GET /v1/capabilities and
// POST /v1/sandbox/evaluate (a script by value) over the real engine, with
// problem documents for what it refuses and 429 with Retry-After when an
// evaluation is already running.
type contractDouble struct {
	engine    *quickjs.Engine
	gate      chan struct{}
	running   atomic.Int32
	served    atomic.Int32
	busy      atomic.Int32
	cancelled atomic.Int32
	largest   atomic.Int64 // the largest response body, in bytes
}

func (d *contractDouble) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/capabilities":
		d.capabilities(w)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/sandbox/evaluate":
		d.evaluate(w, r)
	default:
		doubleProblem(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path, false)
	}
}

func (d *contractDouble) capabilities(w http.ResponseWriter) {
	doc := map[string]any{
		"spiVersion":   spi.SPIVersion,
		"capabilities": d.engine.Capabilities(),
		"limits": map[string]any{
			"defaultWallClockMs": 5000, "maxWallClockMs": int64(time.Hour / time.Millisecond),
			"defaultMemoryBytes": 64 << 20, "maxMemoryBytes": d.engine.MaxMemoryBytes(),
		},
		"engine": map[string]any{"name": quickjs.EngineName, "version": quickjs.EngineVersion, "wasmSha256": quickjs.WasmSHA256()},
	}
	body, _ := json.Marshal(doc)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (d *contractDouble) evaluate(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		doubleProblem(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json", false)
		return
	}
	var req struct {
		Script    *string `json:"script"`
		ScriptRef *string `json:"scriptRef"`
		InputJSON *string `json:"inputJson"`
		Limits    *struct {
			WallClockMs int64 `json:"wallClockMs"`
			MemoryBytes int64 `json:"memoryBytes"`
		} `json:"limits"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		doubleProblem(w, http.StatusBadRequest, "malformed request: "+err.Error(), false)
		return
	}
	switch {
	case req.ScriptRef != nil:
		doubleProblem(w, http.StatusNotFound, "this double has no script store", false)
		return
	case req.Script == nil || req.InputJSON == nil || req.Limits == nil:
		doubleProblem(w, http.StatusBadRequest, "script, inputJson and limits are required", false)
		return
	}
	select {
	case d.gate <- struct{}{}:
		defer func() { <-d.gate }()
	default:
		d.busy.Add(1)
		w.Header().Set("Retry-After", "1")
		doubleProblem(w, http.StatusTooManyRequests, "an evaluation is running; one at a time", true)
		return
	}
	d.running.Add(1)
	defer d.running.Add(-1)
	o, err := d.engine.Evaluate(r.Context(), spi.Request{
		Script:    *req.Script,
		InputJSON: *req.InputJSON,
		Limits:    spi.Limits{WallClock: time.Duration(req.Limits.WallClockMs) * time.Millisecond, MemoryBytes: req.Limits.MemoryBytes},
	})
	if err != nil { // the client went away and the engine stopped
		d.cancelled.Add(1)
		return
	}
	d.served.Add(1)
	body, err := client.OutcomeJSON(o)
	if err != nil {
		doubleProblem(w, http.StatusInternalServerError, "encoding the outcome: "+err.Error(), false)
		return
	}
	for n := int64(len(body)); ; {
		if cur := d.largest.Load(); n <= cur || d.largest.CompareAndSwap(cur, n) {
			break
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func doubleProblem(w http.ResponseWriter, status int, detail string, retryable bool) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"type":"about:blank","title":%q,"status":%d,"detail":%q,"retryable":%v}`,
		http.StatusText(status), status, detail, retryable)
}
