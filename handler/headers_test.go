package handler_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// A header block over the server's MaxHeaderBytes is refused by net/http
// before any handler runs; through HeaderLimitListener the answer is the
// service's problem document, on every route and on a connection that
// already served a request, and the connection is closed. A request under
// the cap is served as before.
func TestHeaderTooLargeIsAProblem(t *testing.T) {
	const max = 4096
	v := newEnv(t)
	srv := httptest.NewUnstartedServer(v.srv.Config.Handler)
	srv.Config.MaxHeaderBytes = max
	logs := &syncBuffer{}
	log := telemetry.NewLogger(logs, slog.LevelDebug, "")
	srv.Listener = handler.HeaderLimitListener(srv.Listener, max, log)
	srv.Start()
	t.Cleanup(srv.Close)

	get := func(path string, pad int) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("X-Padding", strings.Repeat("p", pad))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s with %d bytes of header: %v", path, pad, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	if resp, body := get("/healthz", max/2); resp.StatusCode != 200 {
		t.Fatalf("under the cap: %d %s", resp.StatusCode, body)
	}
	ids := map[string]bool{}
	for _, path := range []string{"/healthz", "/v1/capabilities", "/v1/evaluations", "/no/such/route"} {
		for _, pad := range []int{40 << 10, 900 << 10} {
			resp, body := get(path, pad)
			wantHeaderTooLarge(t, resp.StatusCode, resp.Header, body, max)
			ids[resp.Header.Get(api.RequestIDHeader)] = true
		}
	}
	// Each names its own request, and its log line says it under that id,
	// as every request's does.
	logged := map[string]bool{}
	for _, l := range logs.lines(t, handler.RequestMessage) {
		if l["status"] == float64(431) && l["problem"] == "header-too-large" && l["route"] == "unmatched" && l["retryable"] == false {
			logged[l["requestId"].(string)] = true
		}
	}
	if len(ids) != 8 || !maps.Equal(ids, logged) {
		t.Errorf("the 431s named requests %v; the log has 431 request lines of %v:\n%s", ids, logged, logs)
	}

	// After a request the connection served, and on the wire as it is.
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: "+strings.Repeat("p", 40<<10)+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	wantHeaderTooLarge(t, resp.StatusCode, resp.Header, body, max)
	if !resp.Close {
		t.Errorf("the connection is kept open after a 431")
	}
	if n, err := r.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("the connection carried more after the 431: %d bytes, %v", n, err)
	}
}

// wantHeaderTooLarge checks a 431 answer: the problem document the
// contract describes, naming the limit that applied.
func wantHeaderTooLarge(t *testing.T, status int, h http.Header, body []byte, max int64) {
	t.Helper()
	if status != http.StatusRequestHeaderFieldsTooLarge || h.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("got %d %q %q, want a 431 problem", status, h.Get("Content-Type"), body)
	}
	if h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Errorf("the 431's headers are not those of every answer: %v", h)
	}
	p, err := api.DecodeProblem(body)
	if err != nil {
		t.Fatalf("%q: %v", body, err)
	}
	if id := h.Get(api.RequestIDHeader); !api.ValidRequestID(id) || p.Instance != id {
		t.Errorf("the 431 names request %q in X-Request-Id and %q as its instance", id, p.Instance)
	}
	if p.Type != api.ProblemHeaderTooLarge.URI() || p.Title != "Request header fields too large" || p.Status != 431 ||
		p.Retryable == nil || *p.Retryable || p.Limit != "maxHeaderBytes" || p.LimitValue != max ||
		!strings.Contains(p.Detail, "over the server's maxHeaderBytes of 4096 bytes") {
		t.Errorf("problem %+v", p)
	}
	// and the document says so, on a route of each kind
	router, err := apiDoc()
	if err != nil {
		t.Fatal(err)
	}
	for _, route := range []struct{ method, path string }{{http.MethodPost, "/v1/evaluations"}, {http.MethodPost, "/v1/sandbox/evaluate"},
		{http.MethodGet, "/v1/capabilities"}, {http.MethodGet, "/healthz"}, {http.MethodGet, "/readyz"}} {
		req := httptest.NewRequest(route.method, route.path, nil)
		rt, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: rt,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: h,
			Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s %s: the 431 does not match api/openapi.yaml: %v", route.method, route.path, err)
		}
	}
}
