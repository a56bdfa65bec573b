package handler

import (
	"net/http"
	"strconv"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// problemBase is where the problem types are documented; a type is this plus
// the type's slug (docs/problems.md has a heading per slug).
const problemBase = "https://github.com/loom-plugins/sandbox-cloudrun/blob/main/docs/problems.md#"

// Problem types: the slug names the docs/problems.md section and is the
// outcome label in logs and metrics.
const (
	pUnsupportedMediaType = "unsupported-media-type"
	pRequestTooLarge      = "request-too-large"
	pInputTooLarge        = "input-too-large"
	pScriptTooLarge       = "script-too-large"
	pMalformedJSON        = "malformed-json"
	pUnknownField         = "unknown-field"
	pDuplicateKey         = "duplicate-key"
	pInvalidRequest       = "invalid-request"
	pInvalidLimits        = "invalid-limits"
	pBadReference         = "bad-reference"
	pBadShapeHash         = "bad-shape-hash"
	pUnauthenticated      = "unauthenticated"
	pForbidden            = "forbidden"
	pNotFound             = "not-found"
	pScriptNotFound       = "script-not-found"
	pMethodNotAllowed     = "method-not-allowed"
	pBusy                 = "busy"
	pInternal             = "internal"
	pScriptIntegrity      = "script-integrity"
	pStoreFailed          = "store-failed"
	pMalformedOutcome     = "malformed-outcome"
	pBackendFailed        = "backend-failed"
	pNoScriptStore        = "no-script-store"
	pStoreUnavailable     = "store-unavailable"
	pBackendUnavailable   = "backend-unavailable"
	pBackendDidNotSettle  = "backend-did-not-settle"
	pAuthUnavailable      = "auth-unavailable"
	pNotReady             = "not-ready"
	pRequestTimeout       = "request-timeout"
	pBodyTimeout          = "body-timeout"
)

// problemTitles are the fixed, human-readable summaries of each type.
var problemTitles = map[string]string{
	pUnsupportedMediaType: "Unsupported media type",
	pRequestTooLarge:      "Request body too large",
	pInputTooLarge:        "Input too large",
	pScriptTooLarge:       "Script too large",
	pMalformedJSON:        "Malformed JSON",
	pUnknownField:         "Unknown field",
	pDuplicateKey:         "Duplicate key",
	pInvalidRequest:       "Invalid request",
	pInvalidLimits:        "Invalid limits",
	pBadReference:         "Bad script reference",
	pBadShapeHash:         "Bad shape hash",
	pUnauthenticated:      "Unauthenticated",
	pForbidden:            "Forbidden",
	pNotFound:             "Not found",
	pScriptNotFound:       "Script not found",
	pMethodNotAllowed:     "Method not allowed",
	pBusy:                 "Busy",
	pInternal:             "Internal error",
	pScriptIntegrity:      "Script integrity mismatch",
	pStoreFailed:          "Script store failed",
	pMalformedOutcome:     "Malformed outcome",
	pBackendFailed:        "Backend failed",
	pNoScriptStore:        "No script store configured",
	pStoreUnavailable:     "Script store unavailable",
	pBackendUnavailable:   "Backend unavailable",
	pBackendDidNotSettle:  "Backend did not settle",
	pAuthUnavailable:      "Authentication unavailable",
	pNotReady:             "Not ready",
	pRequestTimeout:       "Request timeout",
	pBodyTimeout:          "Body timeout",
}

// problem is an RFC 9457 problem document with this service's extension
// members: retryable (always), the limit that applied and its value, and where
// in the body a decoding problem is.
type problem struct {
	slug      string
	status    int
	detail    string
	retryable bool

	limit      string // name of the limit that applied, as in /v1/capabilities
	limitValue int64
	field      string // the body member at fault, dotted: "limits.wallClockMs"
	offset     int64  // byte offset in the body (or in inputJson), -1 when unknown
	line, col  int

	retryAfter string // Retry-After header
	allow      string // Allow header
	cause      error  // logged, never sent
}

func newProblem(slug string, status int, detail string) *problem {
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

// at records a byte offset in data, with its line and column (both from 1;
// the column counts bytes).
func (p *problem) at(data []byte, offset int) *problem {
	offset = min(max(offset, 0), len(data))
	p.offset = int64(offset)
	p.line, p.col = 1, 1
	for _, c := range data[:offset] {
		if c == '\n' {
			p.line++
			p.col = 1
		} else {
			p.col++
		}
	}
	return p
}

// where says where an offset is, for a detail.
func (p *problem) where() string {
	if p.offset < 0 {
		return ""
	}
	return " at byte offset " + strconv.FormatInt(p.offset, 10) +
		" (line " + strconv.Itoa(p.line) + ", column " + strconv.Itoa(p.col) + ")"
}

// MarshalJSON writes the document as api.AppendProblem does.
func (p *problem) MarshalJSON() ([]byte, error) {
	doc := api.Problem{
		Type: problemBase + p.slug, Title: problemTitles[p.slug], Status: p.status,
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
		body = []byte(`{"type":"` + problemBase + pInternal + `","title":"Internal error","status":500,"detail":"internal error","retryable":false}`)
		p.status = http.StatusInternalServerError
	}
	h := w.Header()
	if p.retryAfter != "" {
		h.Set("Retry-After", p.retryAfter)
	}
	if p.allow != "" {
		h.Set("Allow", p.allow)
	}
	if p.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", "Bearer")
	}
	writeBody(w, p.status, "application/problem+json", append(body, '\n'))
}

// writeBody sends a complete body with its length.
func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// quoteField quotes a member name for a detail, cut to a readable length.
func quoteField(s string) string { return jsontext.QuoteShort(s) }
