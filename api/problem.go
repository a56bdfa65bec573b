package api

import (
	"strconv"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

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
