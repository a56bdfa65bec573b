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

// Busy retries (WithRetryBusy).
const (
	// defaultBusyWait is the wait after a 429 without a usable Retry-After.
	defaultBusyWait = time.Second
	// minBusyWait keeps a server that answers "Retry-After: 0" from being
	// hammered.
	minBusyWait = 100 * time.Millisecond
	// maxBusyWaitTotal bounds the total wait when the context has no
	// deadline.
	maxBusyWaitTotal = time.Minute
)

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
	Reason        string
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
	var waited time.Duration
	for {
		resp, err := c.once(ctx, method, path, body, limit)
		var e *Error
		if !errors.As(err, &e) || e.StatusCode != http.StatusTooManyRequests || !c.cfg.retryBusy {
			return resp, err
		}
		wait, reason := busyWait(ctx, e, waited)
		if reason != "" {
			e.Reason = reason
			return nil, e
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		waited += wait
	}
}

// once makes one attempt: a 200 response, the context's error, or an *Error.
func (c *Client) once(ctx context.Context, method, path string, body []byte, limit int64) (*response, error) {
	op := method + " " + path
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, &Error{Op: op, Reason: spi.BoundText(err.Error(), maxMessageUnits)}
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	token := ""
	if c.cfg.idToken != nil {
		if token, err = c.cfg.idToken(ctx, c.cfg.audience); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &Error{Op: op, Reason: "ID token: " + spi.BoundText(err.Error(), maxMessageUnits), retryable: true}
		}
		if !validToken(token) {
			return nil, &Error{Op: op, Reason: "ID token: the hook returned an empty or malformed token"}
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
			return nil, ctx.Err()
		}
		return nil, &Error{Op: op, Reason: redact(err.Error()), retryable: true}
	}
	defer res.Body.Close()

	if res.StatusCode != http.StatusOK {
		e := &Error{Op: op, StatusCode: res.StatusCode, Problem: readProblem(res, redact)}
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
			return nil, ctx.Err()
		}
		return nil, e
	}

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

// busyWait returns how long to wait before retrying the 429 e, or why the
// client gives up instead: the wait would outlast the context, or, without a
// deadline, the total wait would pass maxBusyWaitTotal.
func busyWait(ctx context.Context, e *Error, waited time.Duration) (time.Duration, string) {
	wait := defaultBusyWait
	if e.hasRetryAfter {
		wait = e.RetryAfter
	}
	wait = max(wait, minBusyWait)
	if deadline, has := ctx.Deadline(); has {
		if left := time.Until(deadline); wait >= left {
			return 0, fmt.Sprintf("busy: Retry-After %v outlasts the context's deadline (%v left)", wait, left.Round(time.Millisecond))
		}
		return wait, ""
	}
	if waited+wait > maxBusyWaitTotal {
		return 0, fmt.Sprintf("busy: waited %v and Retry-After asks for %v more, beyond the client's %v without a deadline", waited, wait, maxBusyWaitTotal)
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
