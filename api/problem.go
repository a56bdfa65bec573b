package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// ProblemType is the type of a problem document: the slug of its section in
// docs/problems.md, which the document's type URI names and logs and metrics
// use as the outcome label.
type ProblemType string

// The problem types, each documented in docs/problems.md.
const (
	ProblemUnsupportedMediaType ProblemType = "unsupported-media-type"
	ProblemUnsupportedEncoding  ProblemType = "unsupported-content-encoding"
	ProblemRequestTooLarge      ProblemType = "request-too-large"
	ProblemHeaderTooLarge       ProblemType = "header-too-large"
	ProblemScriptTooLarge       ProblemType = "script-too-large"
	ProblemTooManyInputs        ProblemType = "too-many-inputs"
	ProblemMalformedJSON        ProblemType = "malformed-json"
	ProblemUnknownField         ProblemType = "unknown-field"
	ProblemDuplicateKey         ProblemType = "duplicate-key"
	ProblemInvalidRequest       ProblemType = "invalid-request"
	ProblemInvalidLimits        ProblemType = "invalid-limits"
	ProblemBadReference         ProblemType = "bad-reference"
	ProblemBadShapeHash         ProblemType = "bad-shape-hash"
	ProblemUnauthenticated      ProblemType = "unauthenticated"
	ProblemForbidden            ProblemType = "forbidden"
	ProblemNotFound             ProblemType = "not-found"
	ProblemScriptNotFound       ProblemType = "script-not-found"
	ProblemMethodNotAllowed     ProblemType = "method-not-allowed"
	ProblemBusy                 ProblemType = "busy"
	ProblemInternal             ProblemType = "internal"
	ProblemScriptIntegrity      ProblemType = "script-integrity"
	ProblemStoreFailed          ProblemType = "store-failed"
	ProblemMalformedOutcome     ProblemType = "malformed-outcome"
	ProblemBackendFailed        ProblemType = "backend-failed"
	ProblemNoScriptStore        ProblemType = "no-script-store"
	ProblemStoreUnavailable     ProblemType = "store-unavailable"
	ProblemBackendUnavailable   ProblemType = "backend-unavailable"
	ProblemBackendDidNotSettle  ProblemType = "backend-did-not-settle"
	ProblemAuthUnavailable      ProblemType = "auth-unavailable"
	ProblemNotReady             ProblemType = "not-ready"
	ProblemRequestTimeout       ProblemType = "request-timeout"
	ProblemBodyTimeout          ProblemType = "body-timeout"
)

// problemBase is where the problem types are documented; a type's URI is
// this and the type's slug (docs/problems.md has a heading per slug).
const problemBase = "https://github.com/loom-plugins/sandbox-cloudrun/blob/main/docs/problems.md#"

// URI is the document's "type" member for t.
func (t ProblemType) URI() string { return problemBase + string(t) }

// ProblemSpec is what a problem type fixes for every document of its type.
type ProblemSpec struct {
	Status int
	Title  string
	// Retryable is the document's "retryable": whether sending the same
	// request again can help.
	Retryable bool
	// RetryAfter is the Retry-After header's delay in seconds; 0 for none.
	RetryAfter int
}

// problemSpecs is the one place a problem type's status, title,
// retryability and Retry-After are written: a problem is built from its type
// and its detail (NewProblem), never from a status. docs/problems.md and
// api/openapi.yaml state the same for their readers, and
// TestProblemSpecsAreDocumented fails when either disagrees with this table.
var problemSpecs = map[ProblemType]ProblemSpec{
	ProblemUnsupportedMediaType: {Status: http.StatusUnsupportedMediaType, Title: "Unsupported media type"},
	ProblemUnsupportedEncoding:  {Status: http.StatusUnsupportedMediaType, Title: "Unsupported content encoding"},
	ProblemRequestTooLarge:      {Status: http.StatusRequestEntityTooLarge, Title: "Request body too large"},
	ProblemHeaderTooLarge:       {Status: http.StatusRequestHeaderFieldsTooLarge, Title: "Request header fields too large"},
	ProblemScriptTooLarge:       {Status: http.StatusRequestEntityTooLarge, Title: "Script too large"},
	ProblemTooManyInputs:        {Status: http.StatusRequestEntityTooLarge, Title: "Too many inputs"},
	ProblemMalformedJSON:        {Status: http.StatusBadRequest, Title: "Malformed JSON"},
	ProblemUnknownField:         {Status: http.StatusBadRequest, Title: "Unknown field"},
	ProblemDuplicateKey:         {Status: http.StatusBadRequest, Title: "Duplicate key"},
	ProblemInvalidRequest:       {Status: http.StatusBadRequest, Title: "Invalid request"},
	ProblemInvalidLimits:        {Status: http.StatusBadRequest, Title: "Invalid limits"},
	ProblemBadReference:         {Status: http.StatusBadRequest, Title: "Bad script reference"},
	ProblemBadShapeHash:         {Status: http.StatusBadRequest, Title: "Bad shape hash"},
	ProblemUnauthenticated:      {Status: http.StatusUnauthorized, Title: "Unauthenticated"},
	ProblemForbidden:            {Status: http.StatusForbidden, Title: "Forbidden"},
	ProblemNotFound:             {Status: http.StatusNotFound, Title: "Not found"},
	ProblemScriptNotFound:       {Status: http.StatusNotFound, Title: "Script not found"},
	ProblemMethodNotAllowed:     {Status: http.StatusMethodNotAllowed, Title: "Method not allowed"},
	ProblemBodyTimeout:          {Status: http.StatusRequestTimeout, Title: "Body timeout", Retryable: true},
	ProblemBusy:                 {Status: http.StatusTooManyRequests, Title: "Busy", Retryable: true, RetryAfter: 1},
	ProblemInternal:             {Status: http.StatusInternalServerError, Title: "Internal error"},
	ProblemScriptIntegrity:      {Status: http.StatusInternalServerError, Title: "Script integrity mismatch"},
	ProblemStoreFailed:          {Status: http.StatusInternalServerError, Title: "Script store failed"},
	ProblemMalformedOutcome:     {Status: http.StatusInternalServerError, Title: "Malformed outcome"},
	ProblemBackendFailed:        {Status: http.StatusInternalServerError, Title: "Backend failed"},
	ProblemNoScriptStore:        {Status: http.StatusServiceUnavailable, Title: "No script store configured"},
	ProblemStoreUnavailable:     {Status: http.StatusServiceUnavailable, Title: "Script store unavailable", Retryable: true, RetryAfter: 1},
	ProblemBackendUnavailable:   {Status: http.StatusServiceUnavailable, Title: "Backend unavailable", Retryable: true},
	ProblemBackendDidNotSettle:  {Status: http.StatusServiceUnavailable, Title: "Backend did not settle", Retryable: true},
	ProblemAuthUnavailable:      {Status: http.StatusServiceUnavailable, Title: "Authentication unavailable", Retryable: true, RetryAfter: 1},
	ProblemNotReady:             {Status: http.StatusServiceUnavailable, Title: "Not ready", Retryable: true, RetryAfter: 1},
	ProblemRequestTimeout:       {Status: http.StatusGatewayTimeout, Title: "Request timeout"},
}

// Spec is what t fixes for every document of its type, and whether t is
// one of the service's.
func (t ProblemType) Spec() (ProblemSpec, bool) {
	s, ok := problemSpecs[t]
	return s, ok
}

// Title is t's fixed, human-readable summary; "" for a type that is not
// one of the service's.
func (t ProblemType) Title() string { return problemSpecs[t].Title }

// Problem is an application/problem+json document (RFC 9457) with the
// service's extension members: retryable (always written), the limit that
// applied and its value, and where in the body a decoding problem is. It is
// what the service sends (built by NewProblem), what a decoder refuses a
// request body with (an error), and what a client reads (DecodeProblem).
type Problem struct {
	Type      string
	Title     string
	Status    int
	Detail    string
	Retryable *bool // a decoded document may lack it
	// Limit names the limit that applied, as in GET /v1/capabilities, and
	// LimitValue is its value; both are written only when Limit is set.
	Limit      string
	LimitValue int64
	// Field is the body member at fault, dotted: "limits.wallClockMs".
	Field string
	// Offset, when not nil, is the byte offset in the body (or in inputJson)
	// of the problem, at Line and Column (both from 1, columns count bytes).
	Offset       *int64
	Line, Column int
	// Instance names this occurrence: the request's id (its X-Request-Id),
	// a relative URI reference.
	Instance string

	cause error // for the server's log line; never sent
}

// NewProblem is a problem of type t that says detail, with the status,
// title and retryability problemSpecs gives t. A type missing from the
// table is a bug (TestEveryProblemTypeHasASpec), and NewProblem panics on
// it rather than send a document with no status.
func NewProblem(t ProblemType, detail string) *Problem {
	s, ok := problemSpecs[t]
	if !ok {
		panic("api: problem type " + strconv.Quote(string(t)) + " is not in problemSpecs")
	}
	return &Problem{Type: t.URI(), Title: s.Title, Status: s.Status, Detail: detail, Retryable: &s.Retryable}
}

// WithLimit names the limit that applied and its value.
func (p *Problem) WithLimit(name string, value int64) *Problem {
	p.Limit, p.LimitValue = name, value
	return p
}

// WithField names the body member at fault.
func (p *Problem) WithField(field string) *Problem {
	p.Field = field
	return p
}

// WithCause records the error behind p, which Unwrap returns: the server
// logs it, and never sends it.
func (p *Problem) WithCause(err error) *Problem {
	p.cause = err
	return p
}

// ProblemType is the type p's "type" member names, or "" when that is not
// a section of docs/problems.md.
func (p *Problem) ProblemType() ProblemType {
	t, ok := strings.CutPrefix(p.Type, problemBase)
	if !ok {
		return ""
	}
	return ProblemType(t)
}

func (p *Problem) Error() string { return p.Detail }

// Unwrap returns the error behind p (WithCause), nil for none.
func (p *Problem) Unwrap() error { return p.cause }

// AppendProblem writes p after dst, its members in a fixed order.
func AppendProblem(dst []byte, p Problem) []byte {
	str := func(name, v string) {
		dst = jsontext.AppendQuote(append(append(append(dst, ',', '"'), name...), `":`...), v)
	}
	num := func(name string, v int64) {
		dst = strconv.AppendInt(append(append(append(dst, ',', '"'), name...), `":`...), v, 10)
	}
	dst = jsontext.AppendQuote(append(dst, `{"type":`...), p.Type)
	str("title", p.Title)
	num("status", int64(p.Status))
	str("detail", p.Detail)
	dst = strconv.AppendBool(append(dst, `,"retryable":`...), p.Retryable != nil && *p.Retryable)
	if p.Limit != "" {
		str("limit", p.Limit)
		num("limitValue", p.LimitValue)
	}
	if p.Field != "" {
		str("field", p.Field)
	}
	if p.Offset != nil {
		num("offset", *p.Offset)
		num("line", int64(p.Line))
		num("column", int64(p.Column))
	}
	if p.Instance != "" {
		str("instance", p.Instance)
	}
	return append(dst, '}')
}

// DecodeProblem reads a problem document. Members it does not know are
// allowed (a proxy may add some); a known member of the wrong type is not.
func DecodeProblem(data []byte) (Problem, error) {
	o, err := jsontext.ParseObject("", data)
	if err != nil {
		return Problem{}, err
	}
	var p Problem
	p.Type, _ = o.Str("type", false)
	p.Title, _ = o.Str("title", false)
	status, _ := o.Count("status", false)
	p.Status = int(min(status, 999))
	p.Detail, _ = o.Str("detail", false)
	if r, ok := o.Bool("retryable", false); ok {
		p.Retryable = &r
	}
	p.Limit, _ = o.Str("limit", false)
	p.LimitValue, _ = o.Count("limitValue", false)
	p.Field, _ = o.Str("field", false)
	p.Instance, _ = o.Str("instance", false)
	if off, ok := o.Count("offset", false); ok {
		p.Offset = &off
	}
	line, _ := o.Count("line", false)
	col, _ := o.Count("column", false)
	p.Line, p.Column = int(min(line, 1<<31-1)), int(min(col, 1<<31-1))
	o.Skip()
	if err := o.Done(); err != nil {
		return Problem{}, err
	}
	return p, nil
}
