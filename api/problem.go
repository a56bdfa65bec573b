package api

import (
	"strconv"

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
	ProblemInputTooLarge        ProblemType = "input-too-large"
	ProblemScriptTooLarge       ProblemType = "script-too-large"
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

// Title is t's fixed, human-readable summary; "" for a type that is not
// one of the service's.
func (t ProblemType) Title() string {
	for _, p := range problemTypes() {
		if p.Type == t {
			return p.Title
		}
	}
	return ""
}

// problemTypes lists every problem type with its title.
func problemTypes() []struct {
	Type  ProblemType
	Title string
} {
	return []struct {
		Type  ProblemType
		Title string
	}{
		{ProblemUnsupportedMediaType, "Unsupported media type"},
		{ProblemUnsupportedEncoding, "Unsupported content encoding"},
		{ProblemRequestTooLarge, "Request body too large"},
		{ProblemHeaderTooLarge, "Request header fields too large"},
		{ProblemInputTooLarge, "Input too large"},
		{ProblemScriptTooLarge, "Script too large"},
		{ProblemMalformedJSON, "Malformed JSON"},
		{ProblemUnknownField, "Unknown field"},
		{ProblemDuplicateKey, "Duplicate key"},
		{ProblemInvalidRequest, "Invalid request"},
		{ProblemInvalidLimits, "Invalid limits"},
		{ProblemBadReference, "Bad script reference"},
		{ProblemBadShapeHash, "Bad shape hash"},
		{ProblemUnauthenticated, "Unauthenticated"},
		{ProblemForbidden, "Forbidden"},
		{ProblemNotFound, "Not found"},
		{ProblemScriptNotFound, "Script not found"},
		{ProblemMethodNotAllowed, "Method not allowed"},
		{ProblemBusy, "Busy"},
		{ProblemInternal, "Internal error"},
		{ProblemScriptIntegrity, "Script integrity mismatch"},
		{ProblemStoreFailed, "Script store failed"},
		{ProblemMalformedOutcome, "Malformed outcome"},
		{ProblemBackendFailed, "Backend failed"},
		{ProblemNoScriptStore, "No script store configured"},
		{ProblemStoreUnavailable, "Script store unavailable"},
		{ProblemBackendUnavailable, "Backend unavailable"},
		{ProblemBackendDidNotSettle, "Backend did not settle"},
		{ProblemAuthUnavailable, "Authentication unavailable"},
		{ProblemNotReady, "Not ready"},
		{ProblemRequestTimeout, "Request timeout"},
		{ProblemBodyTimeout, "Body timeout"},
	}
}

// Problem is an application/problem+json document (RFC 9457) with the
// service's extension members: retryable (always written), the limit that
// applied and its value, and where in the body a decoding problem is.
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
}

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
