package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Busy retries (WithRetryBusy). The service answers 429 while its one
// evaluation slot is taken, and Retry-After can only say whole seconds,
// while most runs end within milliseconds: waiting the whole Retry-After
// would stall every contended call by a second. So the client backs off
// from a few milliseconds, doubling, and takes Retry-After as the ceiling
// of each wait rather than as the wait.
const (
	// busyFirstWait is the wait before the first retry of a 429; it also
	// keeps a server that answers "Retry-After: 0" from being hammered.
	busyFirstWait = 16 * time.Millisecond
	// defaultBusyWait is the ceiling of each wait after a 429 without a
	// usable Retry-After.
	defaultBusyWait = time.Second
	// maxBusyWaitTotal bounds the total wait when the context has no
	// deadline.
	maxBusyWaitTotal = time.Minute
)

// sleep waits d, or until ctx ends, and returns ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Error is a failed HTTP exchange: the service did not give a usable answer.
// Test for it with errors.As.
type Error struct {
	// Op is the request, for example "POST /v1/evaluations".
	Op string
	// StatusCode is the HTTP status, or 0 when no response arrived.
	StatusCode int
	// Problem is the service's problem document (RFC 9457), when it sent one.
	Problem *Problem
	// RetryAfter is the Retry-After of a 429 (zero when it had none).
	RetryAfter time.Duration
	// Reason says what went wrong, bounded; it never holds the ID token.
	Reason string
	// RequestID is the service's id for the request (the answer's
	// X-Request-Id, when well formed), to quote when reporting the failure;
	// empty when no answer arrived.
	RequestID     string
	retryable     bool
	hasRetryAfter bool
}

// Problem is an application/problem+json document (RFC 9457) with the
// service's extension members. Its text is the service's, bounded, with the
// ID token redacted.
type Problem = api.Problem

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("sandbox service: ")
	b.WriteString(e.Op)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if p := e.Problem; p != nil {
		for _, s := range []string{p.Title, p.Detail} {
			if s != "" {
				b.WriteString(": ")
				b.WriteString(s)
			}
		}
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	return spi.BoundText(b.String(), maxMessageUnits)
}

// Retryable reports whether the same request may succeed later: the problem
// document's "retryable" member when it has one; otherwise true for a busy
// service, a gateway or availability status (502, 503, 504) and a request
// that got no response, false for anything else.
func (e *Error) Retryable() bool { return e.retryable }

// response is a fully read answer with status 200.
type response struct {
	header http.Header
	body   []byte
}

// do sends the request and reads the answer, retrying a 429 when the client
// is configured to. It returns a 200 response, the context's error when ctx
// ended, or an *Error.
func (c *Client) do(ctx context.Context, method, path string, body []byte, limit int64) (*response, error) {
	op := method + " " + path
	res, redact, err := c.open(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.ContentLength > limit {
		return nil, &Error{Op: op, StatusCode: res.StatusCode,
			Reason: fmt.Sprintf("response body of %d bytes exceeds the client's limit of %d bytes", res.ContentLength, limit)}
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &Error{Op: op, StatusCode: res.StatusCode, Reason: "reading the response: " + redact(err.Error()), retryable: true}
	}
	if int64(len(data)) > limit {
		return nil, &Error{Op: op, StatusCode: res.StatusCode,
			Reason: fmt.Sprintf("response body exceeds the client's limit of %d bytes", limit)}
	}
	return &response{header: res.Header, body: data}, nil
}

// open sends the request, retrying a 429 when the client is configured
// to, and returns a 200 answer with its body still to be read (the
// caller closes it) and the redaction of the request's token from any
// text, or the context's error when ctx ended, or an *Error.
func (c *Client) open(ctx context.Context, method, path string, body []byte) (*http.Response, func(string) string, error) {
	var waited time.Duration
	for retry := 0; ; retry++ {
		res, redact, err := c.once(ctx, method, path, body)
		var e *Error
		if !errors.As(err, &e) || e.StatusCode != http.StatusTooManyRequests || !c.cfg.retryBusy {
			return res, redact, err
		}
		wait, reason := busyWait(ctx, e, retry, waited)
		if reason != "" {
			e.Reason = reason
			return nil, nil, e
		}
		if err := c.cfg.sleep(ctx, wait); err != nil {
			return nil, nil, err
		}
		waited += wait
	}
}

// once makes one attempt: a 200 answer with its body open, the context's
// error, or an *Error.
func (c *Client) once(ctx context.Context, method, path string, body []byte) (*http.Response, func(string) string, error) {
	op := method + " " + path
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, nil, &Error{Op: op, Reason: spi.BoundText(err.Error(), maxMessageUnits)}
	}
	accept := "application/json, application/problem+json"
	if path == batchPath {
		accept = api.BatchContentType + ", application/problem+json"
	}
	req.Header.Set("Accept", accept)
	if id, ok := ctx.Value(requestIDKey{}).(string); ok && ValidRequestID(id) {
		req.Header.Set(api.RequestIDHeader, id)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	token := ""
	if c.cfg.idToken != nil {
		if token, err = c.cfg.idToken(ctx, c.cfg.audience); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, &Error{Op: op, Reason: "ID token: " + spi.BoundText(err.Error(), maxMessageUnits), retryable: true}
		}
		if !validToken(token) {
			return nil, nil, &Error{Op: op, Reason: "ID token: the hook returned an empty or malformed token"}
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	redact := func(s string) string {
		if token != "" {
			s = strings.ReplaceAll(s, token, "[token]")
		}
		return spi.BoundText(s, maxMessageUnits)
	}

	res, err := c.cfg.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, &Error{Op: op, Reason: redact(err.Error()), retryable: true}
	}
	if res.StatusCode != http.StatusOK {
		defer res.Body.Close()
		e := &Error{Op: op, StatusCode: res.StatusCode, Problem: readProblem(res, redact), RequestID: requestIDOf(res.Header)}
		switch {
		case e.Problem != nil && e.Problem.Retryable != nil:
			e.retryable = *e.Problem.Retryable
		case res.StatusCode == http.StatusTooManyRequests, res.StatusCode == http.StatusBadGateway,
			res.StatusCode == http.StatusServiceUnavailable, res.StatusCode == http.StatusGatewayTimeout:
			e.retryable = true
		}
		if res.StatusCode == http.StatusTooManyRequests {
			e.RetryAfter, e.hasRetryAfter = retryAfter(res.Header, time.Now())
		}
		if res.StatusCode >= 300 && res.StatusCode < 400 {
			e.Reason = "redirects are not followed"
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, e
	}

	return res, redact, nil
}

type requestIDKey struct{}

// ContextWithRequestID returns ctx carrying id, which every request the
// client sends with it (Run, Evaluate, RunRef, EvaluateRef, Evaluations)
// carries as its X-Request-Id, so that a caller's own id (loom's step id)
// names the request in the service's logs, its problem documents and the
// answer's RequestID. An id that is not ValidRequestID is not sent: the
// service then makes one, which the answer reports.
func ContextWithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// ValidRequestID reports whether the service takes id as a request's id:
// 1 to 128 of the characters a URI holds unescaped (letters, digits, "-",
// ".", "_", "~"), and neither "." nor ".." (api.ValidRequestID, the
// service's own rule).
func ValidRequestID(id string) bool { return api.ValidRequestID(id) }

// requestIDOf is the request id an answer names, or "" when it names none
// the service could have made: an id is quoted in the caller's logs, so a
// malformed one (a proxy's, a hostile server's) is dropped.
func requestIDOf(h http.Header) string {
	if id := h.Get(api.RequestIDHeader); api.ValidRequestID(id) {
		return id
	}
	return ""
}

// validToken accepts an RFC 6750 b64token: a JWT, or any opaque token of the
// same alphabet, so that a hook cannot smuggle a header through it.
func validToken(t string) bool {
	if t == "" || len(t) > 16<<10 {
		return false
	}
	for i := 0; i < len(t); i++ {
		ch := t[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9':
		case strings.IndexByte("-._~+/=", ch) >= 0:
		default:
			return false
		}
	}
	return true
}

// readProblem reads a problem document from a non-200 answer, or returns nil
// when the body is not one (another media type, too long, not an object of
// the expected kinds). Its text is redacted and bounded.
func readProblem(res *http.Response, redact func(string) string) *Problem {
	mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if err != nil || (mt != "application/problem+json" && mt != "application/json") {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxProblemBytes+1))
	if err != nil || len(data) > maxProblemBytes || !utf8.Valid(data) {
		return nil
	}
	p, err := api.DecodeProblem(data)
	if err != nil {
		return nil
	}
	p.Type, p.Title, p.Detail = redact(p.Type), redact(p.Title), redact(p.Detail)
	return &p
}

// busyWait returns how long to wait before retry number retry (from 0) of
// the 429 e, after waiting waited in all: busyFirstWait doubled at each
// retry, at most e's Retry-After (defaultBusyWait without one). Or it says
// why the client gives up instead: the wait would outlast the context, or,
// without a deadline, the total wait would pass maxBusyWaitTotal.
func busyWait(ctx context.Context, e *Error, retry int, waited time.Duration) (time.Duration, string) {
	ceiling := defaultBusyWait
	if e.hasRetryAfter {
		ceiling = max(e.RetryAfter, busyFirstWait)
	}
	wait := min(busyFirstWait<<min(retry, 16), ceiling)
	if deadline, has := ctx.Deadline(); has {
		if left := time.Until(deadline); wait >= left {
			return 0, fmt.Sprintf("busy: waited %v over %d attempts, and the next retry in %v outlasts the context's deadline (%v left)",
				waited, retry+1, wait, left.Round(time.Millisecond))
		}
		return wait, ""
	}
	if waited+wait > maxBusyWaitTotal {
		return 0, fmt.Sprintf("busy: waited %v over %d attempts, beyond the client's %v without a deadline", waited, retry+1, maxBusyWaitTotal)
	}
	return wait, ""
}

// retryAfter reads Retry-After as delay-seconds or an HTTP-date (RFC 9110
// 10.2.3).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// requireJSON refuses a 200 answer that is not application/json.
func requireJSON(r *response) error {
	ct := r.header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("response Content-Type is %q, want application/json", spi.BoundText(ct, 64))
	}
	if !utf8.Valid(r.body) {
		return fmt.Errorf("response body is not valid UTF-8")
	}
	return nil
}
