package handler_test

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// The console reaches loom's route as it reaches the effect's: with
// captureLogs the SPI answer carries logs beside the outcome's members,
// without it none; and both routes say what the run used, in the answer
// and in Server-Timing.
func TestAnswersCarryLogsAndUsage(t *testing.T) {
	v := newEnv(t)
	const script = `console.log("hello", input.n); input.n * 2`
	ref := v.put(script)
	// a store that takes a millisecond, so that the fetch the usage reports
	// is the store's read: a memory store answers within the microsecond the
	// answer counts in
	v.store.set(ref, func() ([]byte, error) { time.Sleep(time.Millisecond); return []byte(script), nil })
	limits := map[string]any{"wallClockMs": 2000, "memoryBytes": 8 << 20}

	r := v.post("/v1/sandbox/evaluate", map[string]any{"script": script, "inputJson": `{"n":21}`, "limits": limits, "captureLogs": true})
	wantBody(t, r, 200, `{"ok":true,"value":42,"logs":"hello 21\n"}`)
	r = v.post("/v1/sandbox/evaluate", map[string]any{"script": script, "inputJson": `{"n":21}`, "limits": limits})
	wantBody(t, r, 200, `{"ok":true,"value":42}`)
	r = v.post("/v1/evaluations", map[string]any{"scriptRef": ref, "input": map[string]any{"n": 21}, "limits": limits, "captureLogs": true})
	wantBody(t, r, 200, `{"ok":true,"value":42,"logs":"hello 21\n"}`)
	u := r.usage
	// the check of a short script's bytes may take under the answer's microsecond
	if u.Fetch < time.Millisecond || u.Verify < 0 || u.Setup <= 0 || u.Run <= 0 || u.Serialise <= 0 || u.CPU <= 0 ||
		u.CPUBudgetUsed == 0 || u.CPUBudget == 0 || u.PeakMemoryBytes <= 0 || u.MemoryLimitBytes != 8<<20 {
		t.Errorf("usage of a run by reference: %+v", u)
	}
	timing := regexp.MustCompile(`^fetch;dur=[0-9.]+, verify;dur=[0-9.]+, setup;dur=[0-9.]+, compile;dur=[0-9.]+, run;dur=[0-9.]+, serialise;dur=[0-9.]+, cpu;dur=[0-9.]+$`)
	if st := r.header.Get("Server-Timing"); !timing.MatchString(st) {
		t.Errorf("Server-Timing %q", st)
	}
	// a typed failure carries them too
	r = v.post("/v1/sandbox/evaluate", map[string]any{"script": `console.log("before"); null.x`, "inputJson": "null", "captureLogs": true})
	wantBody(t, r, 200, `{"ok":false,"kind":"threw","name":"TypeError","message":"cannot read property 'x' of null","logs":"before\n"}`)
	if r.usage.Run <= 0 || r.usage.Serialise != 0 {
		t.Errorf("usage of a throw: %+v", r.usage)
	}
}

// Every answer carries the request's id: the caller's when it is well
// formed, else a new one; a problem names it as its instance, the log line
// carries it, and an answer in a trace says which.
func TestRequestID(t *testing.T) {
	logs := &syncBuffer{}
	v := newEnv(t, withConfig(func(c *handler.Config) { c.Logger = telemetry.NewLogger(logs, slog.LevelInfo, "") }))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := v.mustDo(http.MethodPost, "/v1/sandbox/evaluate", map[string]any{"script": "1", "inputJson": "null"},
		map[string]string{"X-Request-Id": "loom-step-42", "traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"})
	if r.status != 200 || r.header.Get("X-Request-Id") != "loom-step-42" ||
		!strings.HasPrefix(r.header.Get("Traceresponse"), "00-"+traceID+"-") {
		t.Errorf("answer %s, headers %v", r, r.header)
	}
	for _, bad := range []string{"", "a b", "x\"y", strings.Repeat("a", 129), "..", "naïve"} {
		r := v.mustDo(http.MethodPost, "/v1/evaluations", `{"scriptRef":1}`, map[string]string{"X-Request-Id": bad})
		id := r.header.Get("X-Request-Id")
		p := wantProblem(t, r, 400, "invalid-request", false)
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) || p["instance"] != id {
			t.Errorf("X-Request-Id %q: answered with id %q and instance %v", bad, id, p["instance"])
		}
	}
	lines := logs.lines(t, "evaluation")
	if len(lines) == 0 || lines[0]["requestId"] != "loom-step-42" {
		t.Errorf("the log line does not carry the caller's id: %v", lines)
	}
}

// The evaluation's log line says what the run used, and a body refused
// before it was read claims no input size.
func TestLogLineUsage(t *testing.T) {
	logs := &syncBuffer{}
	v := newEnv(t, withConfig(func(c *handler.Config) { c.Logger = telemetry.NewLogger(logs, slog.LevelInfo, "") }))
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "[1,2,3]", "inputJson": "null"}), 200, `{"ok":true,"value":[1,2,3]}`)
	wantProblem(t, v.post("/v1/sandbox/evaluate", `{"script":"1","inputJson":"{"}`), 400, "malformed-json", false)
	lines := logs.lines(t, "evaluation")
	if len(lines) != 2 {
		t.Fatalf("lines: %v", lines)
	}
	ok, refused := lines[0], lines[1]
	for _, k := range []string{"setupMs", "runMs", "serialiseMs", "cpuMs", "cpuBudgetUsed", "peakMemoryBytes", "memoryLimitBytes"} {
		if n, _ := ok[k].(float64); n <= 0 {
			t.Errorf("the line of a run has %s = %v: %v", k, ok[k], ok)
		}
	}
	if _, has := refused["inputBytes"]; has {
		t.Errorf("a refused body claims an input size: %v", refused)
	}
}

// Each run's usage is recorded as histograms: the phases, the CPU time,
// the peak heap and the fractions of the limits.
func TestUsageMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	v := newEnv(t, withConfig(func(c *handler.Config) { c.Meter = mp }))
	for range 2 {
		wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "1", "inputJson": "null"}), 200, `{"ok":true,"value":1}`)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					counts[m.Name+attrs(p.Attributes)] += p.Count
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					counts[m.Name+attrs(p.Attributes)] += p.Count
				}
			}
		}
	}
	for _, key := range []string{
		"sandbox.run.phase.duration{phase=run,route=/v1/sandbox/evaluate}",
		"sandbox.run.phase.duration{phase=setup,route=/v1/sandbox/evaluate}",
		"sandbox.run.cpu{route=/v1/sandbox/evaluate}",
		"sandbox.run.memory.peak{route=/v1/sandbox/evaluate}",
		"sandbox.run.memory.utilization{route=/v1/sandbox/evaluate}",
		"sandbox.run.cpu_budget.utilization{route=/v1/sandbox/evaluate}",
	} {
		if counts[key] != 2 {
			t.Errorf("%s has %d points, want 2 (all: %v)", key, counts[key], counts)
		}
	}
}
