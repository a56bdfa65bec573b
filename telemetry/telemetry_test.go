package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

func TestLoggerCloudLoggingShape(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelDebug, "my-project")
	ctx := WithTrace(context.Background(), Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Sampled: true})
	log.WarnContext(ctx, "hello", "k", 1)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	want := map[string]any{
		"severity": "WARNING", "message": "hello", "k": float64(1),
		"logging.googleapis.com/trace":         "projects/my-project/traces/4bf92f3577b34da6a3ce929d0e0e4736",
		"logging.googleapis.com/spanId":        "00f067aa0ba902b7",
		"logging.googleapis.com/trace_sampled": true,
	}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, line[k], v, buf.Bytes())
		}
	}
	if _, ok := line["time"]; !ok {
		t.Error("no time")
	}
	buf.Reset()
	log.Info("no trace")
	if bytes.Contains(buf.Bytes(), []byte("logging.googleapis.com/trace")) {
		t.Errorf("trace without a request: %s", buf.Bytes())
	}
	buf.Reset()
	log.Info("durations", "after", 58792248*time.Nanosecond, slog.Group("g", slog.Duration("took", 1500*time.Millisecond)))
	if !bytes.Contains(buf.Bytes(), []byte(`"after":"58.792248ms"`)) || !bytes.Contains(buf.Bytes(), []byte(`"g":{"took":"1.5s"}`)) {
		t.Errorf("durations without their unit: %s", buf.Bytes())
	}
	buf.Reset()
	log.Debug("d")
	log.Error("e")
	if !bytes.Contains(buf.Bytes(), []byte(`"severity":"DEBUG"`)) || !bytes.Contains(buf.Bytes(), []byte(`"severity":"ERROR"`)) {
		t.Errorf("severities: %s", buf.Bytes())
	}
}

func TestTraceFromHeaders(t *testing.T) {
	cases := []struct {
		name   string
		header map[string]string
		want   Trace
		ok     bool
	}{
		{"traceparent", map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
			Trace{"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true}, true},
		{"traceparent unsampled", map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"},
			Trace{"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", false}, true},
		{"cloud trace", map[string]string{"X-Cloud-Trace-Context": "105445AA7843BC8BF206B12000100000/1;o=1"},
			Trace{"105445aa7843bc8bf206b12000100000", "0000000000000001", true}, true},
		{"cloud trace without span", map[string]string{"X-Cloud-Trace-Context": "105445aa7843bc8bf206b12000100000"},
			Trace{"105445aa7843bc8bf206b12000100000", "", false}, true},
		{"traceparent wins", map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "X-Cloud-Trace-Context": "105445aa7843bc8bf206b12000100000/1;o=1"},
			Trace{"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true}, true},
		{"bad traceparent falls back", map[string]string{"traceparent": "garbage", "X-Cloud-Trace-Context": "105445aa7843bc8bf206b12000100000/18446744073709551615;o=0"},
			Trace{"105445aa7843bc8bf206b12000100000", "ffffffffffffffff", false}, true},
		{"zero trace id", map[string]string{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, Trace{}, false},
		{"bad cloud trace", map[string]string{"X-Cloud-Trace-Context": "xyz/1"}, Trace{}, false},
		{"none", nil, Trace{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok := TraceFromHeaders(h)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestSetup(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	for _, e := range []string{"none", "stdout"} {
		p, err := Setup(ctx, e, "svc", "v", &buf)
		if err != nil {
			t.Fatal(err)
		}
		_, span := p.Tracer.Tracer("t").Start(ctx, "s")
		span.End()
		if err := p.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"Name":"s"`)) {
		t.Errorf("stdout exporter wrote no span: %.300s", buf.Bytes())
	}
	if _, err := Setup(ctx, "zipkin", "svc", "v", &buf); err == nil {
		t.Error("unknown exporter accepted")
	}
}
