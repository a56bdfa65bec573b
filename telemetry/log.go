// Package telemetry provides the service's observability: structured logs in
// Cloud Logging's JSON shape, correlated with the request's trace, and the
// OpenTelemetry tracer and meter providers chosen by configuration.
package telemetry

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Cloud Logging's special fields for trace correlation.
const (
	traceKey   = "logging.googleapis.com/trace"
	spanKey    = "logging.googleapis.com/spanId"
	sampledKey = "logging.googleapis.com/trace_sampled"
)

// NewLogger returns a JSON logger whose lines Cloud Logging parses:
// "severity", "message" and "time", plus the trace and span of the request
// in the context (see WithTrace), named for projectID when it is known. A
// time.Duration value is written as its string, with its unit ("1.5s").
func NewLogger(w io.Writer, level slog.Leveler, projectID string) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				// slog's JSON writes a duration as nanoseconds without a
				// unit; a line is read by people: 58.792248ms
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.MessageKey:
				a.Key = "message"
			case slog.LevelKey:
				a.Key = "severity"
				a.Value = slog.StringValue(Severity(a.Value.Any().(slog.Level)))
			}
			return a
		},
	})
	return slog.New(&traceHandler{Handler: h, project: projectID})
}

// Severity is the severity Cloud Logging reads in a line written at l.
func Severity(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARNING"
	case l >= slog.LevelInfo:
		return "INFO"
	}
	return "DEBUG"
}

// traceHandler adds the request's trace and id to every record logged with
// its context.
type traceHandler struct {
	slog.Handler
	project string
}

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if t, ok := TraceFrom(ctx); ok {
		id := t.TraceID
		if h.project != "" {
			id = "projects/" + h.project + "/traces/" + t.TraceID
		}
		r.AddAttrs(slog.String(traceKey, id))
		if t.SpanID != "" {
			r.AddAttrs(slog.String(spanKey, t.SpanID))
		}
		r.AddAttrs(slog.Bool(sampledKey, t.Sampled))
	}
	if id := RequestIDFrom(ctx); id != "" {
		r.AddAttrs(slog.String("requestId", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &traceHandler{Handler: h.Handler.WithAttrs(as), project: h.project}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	return &traceHandler{Handler: h.Handler.WithGroup(name), project: h.project}
}

// Trace identifies the trace and span a request belongs to.
type Trace struct {
	TraceID string // 32 lowercase hex digits
	SpanID  string // 16 lowercase hex digits, or empty
	Sampled bool
}

type traceKeyType struct{}

// WithTrace returns ctx carrying t.
func WithTrace(ctx context.Context, t Trace) context.Context {
	return context.WithValue(ctx, traceKeyType{}, t)
}

// TraceFrom returns the trace of ctx: the OpenTelemetry span's when one is
// recording or remote, else the one WithTrace stored.
func TraceFrom(ctx context.Context) (Trace, bool) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return Trace{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), Sampled: sc.IsSampled()}, true
	}
	t, ok := ctx.Value(traceKeyType{}).(Trace)
	return t, ok
}

// TraceFromHeaders reads W3C traceparent, else Cloud Run's
// X-Cloud-Trace-Context ("TRACE_ID/SPAN_ID;o=1", span id in decimal).
func TraceFromHeaders(h http.Header) (Trace, bool) {
	if tp := h.Get("traceparent"); tp != "" {
		// version-traceid-spanid-flags
		p := strings.Split(tp, "-")
		if len(p) == 4 && len(p[0]) == 2 && isHex(p[1], 32) && isHex(p[2], 16) && len(p[3]) == 2 &&
			p[1] != strings.Repeat("0", 32) {
			flags, err := hex.DecodeString(p[3])
			return Trace{TraceID: p[1], SpanID: p[2], Sampled: err == nil && flags[0]&1 == 1}, true
		}
	}
	if xc := h.Get("X-Cloud-Trace-Context"); xc != "" {
		id, rest, _ := strings.Cut(xc, "/")
		id = strings.ToLower(id)
		if !isHex(id, 32) {
			return Trace{}, false
		}
		t := Trace{TraceID: id}
		span, opts, _ := strings.Cut(rest, ";")
		if n, ok := parseUint64(span); ok && n != 0 {
			t.SpanID = hexUint64(n)
		}
		t.Sampled = opts == "o=1"
		return t, true
	}
	return Trace{}, false
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func parseUint64(s string) (uint64, bool) {
	if s == "" || len(s) > 20 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

func hexUint64(n uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[n&0xf]
		n >>= 4
	}
	return string(b[:])
}
