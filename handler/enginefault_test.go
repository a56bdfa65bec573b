package handler_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// faultMarker chooses the runs that the engine of TestEngineFault breaks.
const faultMarker = "/* engine fault */"

// An engine fault is an operator's alarm, on every route (in a batch, for
// the input whose run it broke): the answer stays
// infrastructure (on /v1/evaluations the retryable problem of a backend
// that failed), and the service logs one ERROR line with the stable message
// answer.EngineFaultMessage, the request's id and trace, the route, the
// script's hash and the trap's text, and counts it in
// sandbox.engine.faults by route. An infrastructure outcome that is no
// fault, and an ordinary run, raise neither.
func TestEngineFault(t *testing.T) {
	logs := &syncBuffer{}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	engine := newEngine(quickjs.WithTrapForTests(func(script string) bool { return strings.HasPrefix(script, faultMarker) }))
	t.Cleanup(func() { _ = engine.Close(context.Background()) })
	v := newEnv(t, withEngine(engine), withConfig(func(c *handler.Config) {
		c.Logger = telemetry.NewLogger(logs, slog.LevelInfo, "test-project")
		c.Meter = mp
	}))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	script := faultMarker + " input.n + 1"
	ref := v.put(script)
	hdr := func(id string) map[string]string {
		return map[string]string{"X-Request-Id": id, "traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}
	}

	r := v.mustDo(http.MethodPost, "/v1/evaluations", map[string]any{"scriptRef": ref, "input": map[string]any{"n": 1}}, hdr("step-1"))
	wantProblem(t, r, 503, "backend-unavailable", true, "wasm error: unreachable")
	r = v.mustDo(http.MethodPost, "/v1/sandbox/evaluate", map[string]any{"script": script, "inputJson": `{"n":1}`}, hdr("step-2"))
	wantBody(t, r, 200, `{"ok":false,"kind":"infrastructure","message":"quickjs: engine failed: wasm error: unreachable"}`)
	// in a batch: that input's line is the problem, the batch goes on
	r = v.mustDo(http.MethodPost, "/v1/evaluations:batch", map[string]any{"scriptRef": ref, "inputs": []any{map[string]any{"n": 1}}}, hdr("step-3"))
	if batch, _ := batchLines(t, r); len(batch) != 2 || batch[0].Problem == nil || batch[0].Problem.ProblemType() != "backend-unavailable" {
		t.Errorf("a batch's engine fault: %s", r.body)
	}
	// no fault: an ordinary run, and an infrastructure outcome of another cause
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "input.n + 1", "inputJson": `{"n":1}`}), 200, `{"ok":true,"value":2}`)
	wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": v.put(scriptInfrastructure)}), 503, "backend-unavailable", true, "the machine room is on fire")
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": scriptInfrastructure, "inputJson": "null"}), 200,
		`{"ok":false,"kind":"infrastructure","message":"test: the machine room is on fire"}`)

	lines := logs.lines(t, answer.EngineFaultMessage)
	if len(lines) != 3 {
		t.Fatalf("%d engine fault lines, want 3:\n%s", len(lines), logs)
	}
	sha := contentref.RefOf([]byte(script)).String()
	for i, route := range []string{"/v1/evaluations", "/v1/sandbox/evaluate", "/v1/evaluations:batch"} {
		for k, want := range map[string]any{
			"severity": "ERROR", "route": route, "scriptSha256": sha, "trap": "wasm error: unreachable",
			"requestId": []string{"step-1", "step-2", "step-3"}[i], "logging.googleapis.com/trace": "projects/test-project/traces/" + traceID,
		} {
			if lines[i][k] != want {
				t.Errorf("the engine fault line of %s has %s = %v, want %v: %v", route, k, lines[i][k], want, lines[i])
			}
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	faults := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "sandbox.engine.faults" {
				for _, p := range d.DataPoints {
					faults[attrs(p.Attributes)] += p.Value
				}
			}
		}
	}
	if want := map[string]int64{"{route=/v1/evaluations}": 1, "{route=/v1/sandbox/evaluate}": 1, "{route=/v1/evaluations:batch}": 1}; len(faults) != len(want) ||
		faults["{route=/v1/evaluations}"] != 1 || faults["{route=/v1/sandbox/evaluate}"] != 1 || faults["{route=/v1/evaluations:batch}"] != 1 {
		t.Errorf("sandbox.engine.faults = %v, want %v", faults, want)
	}
}
