package handler

import (
	"net/http"
	"strconv"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// problem is an RFC 9457 problem document with this service's extension
// members: retryable (always), the limit that applied and its value, and where
// in the body a decoding problem is.
type problem struct {
	slug      api.ProblemType
	status    int
	detail    string
	retryable bool

	limit      string // name of the limit that applied, as in /v1/capabilities
	limitValue int64
	field      string // the body member at fault, dotted: "limits.wallClockMs"
	offset     int64  // byte offset in the body (or in inputJson), -1 when unknown
	line, col  int

	retryAfter     string // Retry-After header
	allow          string // Allow header
	acceptEncoding string // Accept-Encoding header
	cause          error  // logged, never sent
}

func newProblem(slug api.ProblemType, status int, detail string) *problem {
	return &problem{slug: slug, status: status, detail: detail, offset: -1}
}

func (p *problem) withLimit(name string, value int64) *problem {
	p.limit, p.limitValue = name, value
	return p
}

func (p *problem) withField(field string) *problem {
	p.field = field
	return p
}

func (p *problem) withCause(err error) *problem {
	p.cause = err
	return p
}

func (p *problem) retry() *problem {
	p.retryable = true
	return p
}

// MarshalJSON writes the document as api.AppendProblem does.
func (p *problem) MarshalJSON() ([]byte, error) {
	doc := api.Problem{
		Type: p.slug.URI(), Title: p.slug.Title(), Status: p.status,
		Detail: p.detail, Retryable: &p.retryable, Limit: p.limit, LimitValue: p.limitValue, Field: p.field,
	}
	if p.offset >= 0 {
		doc.Offset = &p.offset
		doc.Line, doc.Column = p.line, p.col
	}
	return api.AppendProblem(nil, doc), nil
}

// writeProblem sends p and notes its type for the request's log line.
func writeProblem(w http.ResponseWriter, r *http.Request, p *problem) {
	if rec := recordFrom(r.Context()); rec != nil {
		rec.setProblem(p)
	}
	body, err := p.MarshalJSON()
	if err != nil { // cannot happen: every member is a string, number or bool
		body = []byte(`{"type":"` + api.ProblemInternal.URI() + `","title":"Internal error","status":500,"detail":"internal error","retryable":false}`)
		p.status = http.StatusInternalServerError
	}
	h := w.Header()
	if p.retryAfter != "" {
		h.Set("Retry-After", p.retryAfter)
	}
	if p.allow != "" {
		h.Set("Allow", p.allow)
	}
	if p.acceptEncoding != "" {
		h.Set("Accept-Encoding", p.acceptEncoding)
	}
	if p.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", "Bearer")
	}
	writeBody(w, p.status, problemType, append(body, '\n'))
}

// problemType is the media type of a problem document (RFC 9457).
const problemType = "application/problem+json"

// writeBody sends a complete body with its length.
func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	setBodyHeaders(w.Header(), contentType, len(body))
	w.WriteHeader(status)
	_, _ = w.Write(body)
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
