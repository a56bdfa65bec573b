package handler_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// One log line per evaluation, in Cloud Logging's shape and correlated with
// the caller's trace, with the reference, the outcome, durations and byte
// counts, and never the input, the value, the logs or the script.
func TestEvaluationLogLine(t *testing.T) {
	logs := &syncBuffer{}
	v := newEnv(t, withConfig(func(c *handler.Config) { c.Logger = telemetry.NewLogger(logs, slog.LevelInfo, "test-project") }))
	const secret = "s3cr3t-marker"
	script := `console.log("` + secret + `-log"); input.x + "` + secret + `-value" /* ` + secret + `-script */`
	ref := v.put(script)
	traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
	hdr := map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}

	r := v.mustDo(http.MethodPost, "/v1/evaluations", map[string]any{"scriptRef": ref, "input": map[string]any{"x": secret + "-input"}, "captureLogs": true}, hdr)
	if r.status != 200 {
		t.Fatalf("evaluation: %s", r)
	}
	r = v.mustDo(http.MethodPost, "/v1/sandbox/evaluate", map[string]any{"script": script, "inputJson": `{"x":"` + secret + `-input"}`}, hdr)
	if r.status != 200 {
		t.Fatalf("SPI: %s", r)
	}
	r = v.mustDo(http.MethodPost, "/v1/sandbox/evaluate", map[string]any{"script": "throw new Error('" + secret + "-thrown')", "inputJson": "null"}, nil)
	if r.status != 200 {
		t.Fatalf("SPI threw: %s", r)
	}
	wantProblem(t, v.post("/v1/evaluations", `{"scriptRef":1}`), 400, "invalid-request", false)

	if strings.Contains(logs.String(), secret) {
		t.Fatalf("the log carries script, input, value or logs text:\n%s", logs)
	}
	lines := logs.lines(t, "evaluation")
	if len(lines) != 4 {
		t.Fatalf("%d evaluation lines, want 4:\n%s", len(lines), logs)
	}
	effectLine, spiLine, threwLine, badLine := lines[0], lines[1], lines[2], lines[3]
	for k, want := range map[string]any{
		"severity": "INFO", "route": "/v1/evaluations", "status": 200.0, "outcome": "ok", "script": ref,
		"logging.googleapis.com/trace": "projects/test-project/traces/" + traceID,
	} {
		if effectLine[k] != want {
			t.Errorf("effect line %s = %v, want %v", k, effectLine[k], want)
		}
	}
	for _, k := range []string{"fetchMs", "evaluateMs", "totalMs", "inputBytes", "outputBytes"} {
		if _, ok := effectLine[k].(float64); !ok {
			t.Errorf("effect line has no %s: %v", k, effectLine)
		}
	}
	if effectLine["inputBytes"].(float64) == 0 || effectLine["outputBytes"].(float64) == 0 || effectLine["evaluateMs"].(float64) <= 0 {
		t.Errorf("effect line counts: %v", effectLine)
	}
	if spiLine["route"] != "/v1/sandbox/evaluate" || spiLine["script"] != "inline" ||
		spiLine["scriptSha256"] != contentref.RefOf([]byte(script)).String() || spiLine["outcome"] != "ok" {
		t.Errorf("SPI line: %v", spiLine)
	}
	if threwLine["outcome"] != "threw" {
		t.Errorf("threw line: %v", threwLine)
	}
	if badLine["outcome"] != "invalid-request" || badLine["status"] != 400.0 || badLine["problem"] != "invalid-request" {
		t.Errorf("problem line: %v", badLine)
	}
}

// Errors behind a 5xx are logged for the operator (bounded), never sent.
func TestServerErrorsAreLogged(t *testing.T) {
	v := newEnv(t)
	down := contentref.RefOf([]byte("down")).String()
	v.store.set(down, func() ([]byte, error) { return nil, contentref.ErrUnavailable })
	wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": down}), 503, "store-unavailable", true)
	wantProblem(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": scriptPanic, "inputJson": "null"}), 500, "internal", false)
	lines := v.logs.lines(t, "evaluation")
	if len(lines) != 2 || lines[0]["level"] != "ERROR" || !strings.Contains(lines[0]["error"].(string), "store unavailable") {
		t.Fatalf("lines: %v", lines)
	}
	// the engine's panic is recovered by the effect's call, which logs it
	// with its stack; the request's line carries its text
	panics := v.logs.lines(t, "sandbox backend panicked")
	if len(panics) != 1 || !strings.Contains(panics[0]["panic"].(string), "secret panic detail") || panics[0]["stack"] == "" {
		t.Fatalf("panic lines: %v", panics)
	}
	if !strings.Contains(lines[1]["error"].(string), "secret panic detail") {
		t.Errorf("the SPI request's line does not carry the panic: %v", lines[1])
	}
}

func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	v := newEnv(t, withConfig(func(c *handler.Config) {
		c.Meter = mp
		c.CompiledScriptStats = func() (hits, misses, evictions uint64) { return 41, 7, 3 }
	}))
	ref := v.put("input")
	for range 3 {
		wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": ref, "input": 1}), 200, `{"ok":true,"value":1}`)
	}
	wantBody(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": "while (true) {}", "inputJson": "null", "limits": map[string]any{"wallClockMs": 50}}), 200,
		`{"ok":false,"kind":"limit","limit":"wallClock"}`)
	done := startRunaway(t, v, context.Background(), "/v1/sandbox/evaluate", 300)
	wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": ref}), 429, "busy", true)
	<-done

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	var histCount uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sums[m.Name+attrs(p.Attributes)] += p.Value
				}
			case metricdata.Histogram[float64]:
				if m.Name == "sandbox.evaluation.duration" {
					for _, p := range d.DataPoints {
						histCount += p.Count
					}
				}
			}
		}
	}
	for key, want := range map[string]int64{
		"sandbox.evaluations{outcome=ok,route=/v1/evaluations}":                         3,
		"sandbox.evaluations{limit=wallClock,outcome=limit,route=/v1/sandbox/evaluate}": 2,
		"sandbox.evaluations{outcome=busy,route=/v1/evaluations}":                       1,
		"sandbox.busy_rejections{route=/v1/evaluations}":                                1,
		"sandbox.script_cache.hits{}":                                                   2,
		"sandbox.script_cache.misses{}":                                                 1,
		"sandbox.compiled_scripts.hits{}":                                               41,
		"sandbox.compiled_scripts.misses{}":                                             7,
		"sandbox.compiled_scripts.evictions{}":                                          3,
	} {
		if sums[key] != want {
			t.Errorf("%s = %d, want %d (all: %v)", key, sums[key], want, sums)
		}
	}
	if histCount != 6 {
		t.Errorf("duration histogram has %d points, want 6", histCount)
	}
}

func attrs(s attribute.Set) string {
	var b strings.Builder
	b.WriteString("{")
	for i, kv := range s.ToSlice() {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(string(kv.Key) + "=" + kv.Value.String())
	}
	return b.String() + "}"
}

// Server spans continue the caller's trace, and each evaluation has child
// spans for fetch, verify and evaluate.
func TestTraces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	v := newEnv(t, withConfig(func(c *handler.Config) { c.Tracer = tp }))
	traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
	hdr := map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}
	ref := v.put("input")
	for _, tc := range []struct {
		route string
		body  any
		want  []string
	}{
		{"/v1/evaluations", map[string]any{"scriptRef": ref}, []string{"fetch", "verify", "evaluate"}},
		{"/v1/sandbox/evaluate", map[string]any{"scriptRef": ref, "inputJson": "1"}, []string{"fetch", "verify", "evaluate"}},
		{"/v1/sandbox/evaluate", map[string]any{"script": "1", "inputJson": "1"}, []string{"evaluate"}},
	} {
		t.Run(tc.route, func(t *testing.T) {
			before := len(rec.Ended())
			if r := v.mustDo(http.MethodPost, tc.route, tc.body, hdr); r.status != 200 {
				t.Fatalf("%s", r)
			}
			// The server span ends after the response is written.
			var spans []sdktrace.ReadOnlySpan
			for start := time.Now(); time.Since(start) < time.Second; time.Sleep(5 * time.Millisecond) {
				if spans = rec.Ended()[before:]; len(spans) == len(tc.want)+1 {
					break
				}
			}
			var server sdktrace.ReadOnlySpan
			children := map[string]sdktrace.ReadOnlySpan{}
			for _, s := range spans {
				if s.Name() == "POST "+tc.route {
					server = s
				} else {
					children[s.Name()] = s
				}
			}
			if server == nil {
				t.Fatalf("no server span named %q among %d spans", "POST "+tc.route, len(spans))
			}
			if server.SpanContext().TraceID().String() != traceID || server.Parent().SpanID().String() != "00f067aa0ba902b7" {
				t.Fatalf("the server span does not continue the caller's trace: %v parent %v", server.SpanContext().TraceID(), server.Parent().SpanID())
			}
			if len(children) != len(tc.want) {
				t.Fatalf("child spans %v, want %v", keys(children), tc.want)
			}
			for _, name := range tc.want {
				c := children[name]
				if c == nil || c.Parent().SpanID() != server.SpanContext().SpanID() {
					t.Fatalf("span %q is missing or not a child of the server span (%v)", name, keys(children))
				}
			}
		})
	}
}

// Cloud Run's own header continues the platform's trace when there is no
// traceparent.
func TestCloudTraceContext(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	v := newEnv(t, withConfig(func(c *handler.Config) { c.Tracer = tp }))
	const traceID = "105445aa7843bc8bf206b12000100000"
	r := v.mustDo(http.MethodGet, "/v1/capabilities", nil, map[string]string{"X-Cloud-Trace-Context": traceID + "/1;o=1"})
	if r.status != 200 {
		t.Fatal(r)
	}
	var server sdktrace.ReadOnlySpan
	for start := time.Now(); server == nil && time.Since(start) < time.Second; time.Sleep(5 * time.Millisecond) {
		for _, s := range rec.Ended() {
			if s.Name() == "GET /v1/capabilities" {
				server = s
			}
		}
	}
	if server == nil {
		t.Fatal("no server span")
	}
	if server.SpanContext().TraceID().String() != traceID || server.Parent().SpanID().String() != "0000000000000001" {
		t.Fatalf("trace %v parent %v", server.SpanContext().TraceID(), server.Parent().SpanID())
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The description of the handler's lines (handler.LogLines, and
// answer.LogLines for those it writes with package answer, which the
// Terraform module's filters are held to) is what it writes: every field of
// every line it writes, as JSON in Cloud Logging's shape, is one its
// description names, and every field the description names is written by
// one of these requests, at no lower level than the description says.
func TestLogLinesDescribeWhatTheHandlerWrites(t *testing.T) {
	logs := &syncBuffer{}
	engine := newEngine(quickjs.WithTrapForTests(func(script string) bool { return strings.HasPrefix(script, faultMarker) }))
	t.Cleanup(func() { _ = engine.Close(context.Background()) })
	v := newEnv(t, withEngine(engine), withConfig(func(c *handler.Config) {
		c.Logger = telemetry.NewLogger(logs, slog.LevelDebug, "test-project")
		c.Auth = func(*http.Request) (string, error) { return "caller@example.com", nil }
		c.Ready = func(context.Context) error { return errors.New("the store is down") }
	}))
	down := contentref.RefOf([]byte("down")).String()
	v.store.set(down, func() ([]byte, error) { return nil, contentref.ErrUnavailable })
	hdr := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/v1/evaluations", map[string]any{"scriptRef": v.put("input"), "input": 1}},
		{http.MethodPost, "/v1/sandbox/evaluate", map[string]any{"script": "while (true) {}", "inputJson": "1", "limits": map[string]any{"wallClockMs": 20}}},
		{http.MethodPost, "/v1/sandbox/evaluate", map[string]any{"script": faultMarker + " 1", "inputJson": "1"}},
		{http.MethodPost, "/v1/evaluations", map[string]any{"scriptRef": down}},
		{http.MethodPost, "/v1/evaluations:batch", map[string]any{"scriptRef": v.put("input"), "inputs": []int{1, 2}}},
		{http.MethodPost, "/v1/nowhere", nil},
		{http.MethodGet, "/v1/capabilities", nil},
		{http.MethodGet, "/readyz", nil},
		{http.MethodGet, "/healthz", nil},
	} {
		v.mustDo(req.method, req.path, req.body, hdr)
	}

	// what every line of a request carries besides its own fields
	common := map[string]bool{"time": true, "severity": true, "message": true, "requestId": true,
		"logging.googleapis.com/trace": true, "logging.googleapis.com/spanId": true, "logging.googleapis.com/trace_sampled": true}
	severity := map[string]slog.Level{"DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo, "WARNING": slog.LevelWarn, "ERROR": slog.LevelError}
	for _, l := range append(handler.LogLines(), answer.LogLines()...) {
		lines := logs.lines(t, l.Message)
		if len(lines) == 0 {
			t.Errorf("no %q line was written", l.Message)
			continue
		}
		written := map[string]bool{}
		for _, line := range lines {
			for k := range line {
				written[k] = true
				if !common[k] && !slices.Contains(l.Fields, k) {
					t.Errorf("a %q line writes %s, which its description does not name: %v", l.Message, k, line)
				}
			}
			if lv := severity[line["severity"].(string)]; lv < l.Level {
				t.Errorf("a %q line is written at %s, below the level its description gives it, %v", l.Message, line["severity"], l.Level)
			}
		}
		for _, f := range l.Fields {
			// where an input was read, which only the verbs that read
			// inputs write (their tests hold it)
			if f == "source" && l.Message == answer.EvaluationMessage {
				continue
			}
			if !written[f] {
				t.Errorf("the description names the field %s of the %q line, which none of its lines wrote:\n%s", f, l.Message, logs)
			}
		}
	}
}
