package handler

import (
	"net/http"
	"strconv"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// writeProblem sends p, with the Retry-After its type carries, and notes it
// for the request's log line. A header only one answer carries (Allow,
// Accept-Encoding, WWW-Authenticate) is set by that answer's caller.
func writeProblem(w http.ResponseWriter, r *http.Request, p *api.Problem) {
	if rec := recordFrom(r.Context()); rec != nil {
		rec.setProblem(p)
	}
	p.Instance = telemetry.RequestIDFrom(r.Context())
	if s, _ := p.ProblemType().Spec(); s.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(s.RetryAfter))
	}
	writeBody(w, p.Status, problemType, append(api.AppendProblem(nil, *p), '\n'))
}

// problemType is the media type of a problem document (RFC 9457).
const problemType = "application/problem+json"

// writeBody sends a complete body with its length.
func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	setBodyHeaders(w.Header(), contentType, len(body))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// setServerTiming says where an evaluation's time went, in the standard
// Server-Timing header (milliseconds): the phases of its usage and its CPU
// time, which browsers' and proxies' tools show as they are.
func setServerTiming(h http.Header, u spi.Usage) {
	b := make([]byte, 0, 160)
	metric := func(name string, d time.Duration) {
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendFloat(append(append(b, name...), ";dur="...), answer.Milliseconds(d), 'f', -1, 64)
	}
	for _, p := range u.Phases() {
		metric(p.Name, *p.D)
	}
	metric("cpu", u.CPU)
	h.Set("Server-Timing", string(b))
}

// setBodyHeaders sets the headers of every answer with a body: its type
// and length, never stored by a cache, never sniffed for another type.
func setBodyHeaders(h http.Header, contentType string, n int) {
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(n))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

// quoteField quotes a member name for a detail, cut to a readable length.
func quoteField(s string) string { return jsontext.QuoteShort(s) }
