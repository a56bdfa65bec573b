package handler_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Every request problem, on both evaluation routes where it applies: status,
// type, retryable, the detail's specifics and the extension members.
func TestRequestProblems(t *testing.T) {
	v := newEnv(t)
	ref := v.put("input")
	type ext map[string]any
	cases := []struct {
		name, route, body string
		header            map[string]string
		status            int
		slug              string
		detail            []string
		members           ext
		headers           map[string]string // of the answer
	}{
		// 415
		{name: "no content type", route: "/v1/evaluations", body: `{}`, header: map[string]string{"Content-Type": ""},
			status: 415, slug: "unsupported-media-type", detail: []string{"application/json", "no Content-Type"}},
		{name: "text/plain", route: "/v1/sandbox/evaluate", body: `{}`, header: map[string]string{"Content-Type": "text/plain"},
			status: 415, slug: "unsupported-media-type", detail: []string{`"text/plain"`}},
		{name: "not UTF-8", route: "/v1/evaluations", body: `{}`, header: map[string]string{"Content-Type": "application/json; charset=latin1"},
			status: 415, slug: "unsupported-media-type"},
		{name: "gzip", route: "/v1/sandbox/evaluate", body: gzipped(`{"script":"1","inputJson":"1"}`), header: map[string]string{"Content-Encoding": "gzip"},
			status: 415, slug: "unsupported-content-encoding", detail: []string{`Content-Encoding "gzip" is not accepted`, "no Content-Encoding (or identity)"},
			headers: map[string]string{"Accept-Encoding": "identity"}},
		{name: "gzip after identity", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `"}`, header: map[string]string{"Content-Encoding": "identity, gzip"},
			status: 415, slug: "unsupported-content-encoding", detail: []string{`"identity, gzip"`}, headers: map[string]string{"Accept-Encoding": "identity"}},
		{name: "br", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `"}`, header: map[string]string{"Content-Encoding": "br"},
			status: 415, slug: "unsupported-content-encoding", detail: []string{`"br"`}},
		// 400 malformed JSON, with where
		{name: "syntax error", route: "/v1/evaluations", body: "{\n  \"scriptRef\": \n}", status: 400, slug: "malformed-json",
			detail: []string{"byte offset 18", "line 3, column 1"}, members: ext{"offset": 18.0, "line": 3.0, "column": 1.0}},
		{name: "empty body", route: "/v1/evaluations", body: "", status: 400, slug: "malformed-json", detail: []string{"empty"}},
		{name: "trailing data", route: "/v1/sandbox/evaluate", body: `{"script":"1","inputJson":"1"} {}`, status: 400, slug: "malformed-json",
			detail: []string{"after the JSON value", "byte offset 31"}},
		{name: "invalid UTF-8", route: "/v1/evaluations", body: "{\"scriptRef\":\"\xff\"}", status: 400, slug: "malformed-json",
			detail: []string{"UTF-8", "byte offset 14"}},
		{name: "unterminated string", route: "/v1/evaluations", body: `{"scriptRef":"sha`, status: 400, slug: "malformed-json", detail: []string{"inside a string"}},
		{name: "too deep", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","input":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
			status: 400, slug: "malformed-json", detail: []string{"10000 levels"}},
		// 400 unknown fields and duplicate keys
		{name: "unknown field", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","scirptRef":1}`, status: 400, slug: "unknown-field",
			detail: []string{`"scirptRef"`, "scriptRef, input, limits, expectedOutputShapeHash, captureLogs"}, members: ext{"field": "scirptRef"}},
		{name: "unknown limit", route: "/v1/sandbox/evaluate", body: `{"script":"1","inputJson":"1","limits":{"cpu":5}}`, status: 400, slug: "unknown-field",
			detail: []string{`"limits.cpu"`, "wallClockMs, memoryBytes"}, members: ext{"field": "limits.cpu"}},
		{name: "SPI field on the effect route", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","inputJson":"1"}`, status: 400, slug: "unknown-field"},
		{name: "duplicate key", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","captureLogs":true,"captureLogs":false}`, status: 400, slug: "duplicate-key",
			detail: []string{`"captureLogs"`, "twice"}, members: ext{"field": "captureLogs", "offset": 106.0}},
		{name: "duplicate key by escape", route: "/v1/sandbox/evaluate", body: `{"script":"1","\u0073cript":"2","inputJson":"1"}`, status: 400, slug: "duplicate-key"},
		{name: "duplicate key inside input", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","input":{"a":1,"a":2}}`, status: 400, slug: "duplicate-key",
			members: ext{"field": "input.a"}},
		// 400 invalid request shape
		{name: "not an object", route: "/v1/evaluations", body: `[]`, status: 400, slug: "invalid-request", detail: []string{"JSON object"}},
		{name: "missing scriptRef", route: "/v1/evaluations", body: `{"input":1}`, status: 400, slug: "invalid-request", detail: []string{"scriptRef"}},
		{name: "scriptRef of the wrong type", route: "/v1/evaluations", body: `{"scriptRef":5}`, status: 400, slug: "invalid-request",
			detail: []string{`"scriptRef" must be a string`, "number"}, members: ext{"field": "scriptRef"}},
		{name: "captureLogs of the wrong type", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","captureLogs":"yes"}`, status: 400, slug: "invalid-request",
			detail: []string{"boolean"}},
		{name: "limits of the wrong type", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","limits":[]}`, status: 400, slug: "invalid-request",
			detail: []string{"object"}},
		{name: "both script and scriptRef", route: "/v1/sandbox/evaluate", body: `{"script":"1","scriptRef":"` + ref + `","inputJson":"1"}`, status: 400, slug: "invalid-request",
			detail: []string{"exactly one", "not both"}},
		{name: "neither script nor scriptRef", route: "/v1/sandbox/evaluate", body: `{"inputJson":"1"}`, status: 400, slug: "invalid-request", detail: []string{"exactly one"}},
		{name: "no inputJson", route: "/v1/sandbox/evaluate", body: `{"script":"1"}`, status: 400, slug: "invalid-request", detail: []string{"inputJson"}},
		{name: "inputJson not a string", route: "/v1/sandbox/evaluate", body: `{"script":"1","inputJson":{"a":1}}`, status: 400, slug: "invalid-request",
			detail: []string{`"inputJson" must be a string`}},
		{name: "inputJson not JSON", route: "/v1/sandbox/evaluate", body: `{"script":"1","inputJson":"{\"a\":}"}`, status: 400, slug: "malformed-json",
			detail: []string{"inputJson", "byte offset 5"}, members: ext{"field": "inputJson", "offset": 5.0}},
		{name: "inputJson with a duplicate key", route: "/v1/sandbox/evaluate", body: `{"script":"1","inputJson":"{\"a\":1,\"a\":2}"}`, status: 400, slug: "duplicate-key",
			members: ext{"field": "inputJson"}},
		// 400 limits
		{name: "zero", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","limits":{"wallClockMs":0}}`, status: 400, slug: "invalid-limits", detail: []string{"positive whole number", "zero"}},
		{name: "negative", route: "/v1/sandbox/evaluate", body: `{"script":"1","inputJson":"1","limits":{"memoryBytes":-1}}`, status: 400, slug: "invalid-limits", detail: []string{"negative"}},
		{name: "fraction", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","limits":{"wallClockMs":1.5}}`, status: 400, slug: "invalid-limits", detail: []string{"integer"}},
		{name: "exponent", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","limits":{"wallClockMs":1e3}}`, status: 400, slug: "invalid-limits", detail: []string{"integer"}},
		{name: "string", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","limits":{"wallClockMs":"100"}}`, status: 400, slug: "invalid-limits", detail: []string{`got the string "100": not a number`}},
		{name: "object", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","limits":{"wallClockMs":{"ms":1}}}`, status: 400, slug: "invalid-limits", detail: []string{`got an object: not a number`}},
		// 400 determinism
		{name: "seed too long", route: "/v1/sandbox/evaluate", body: `{"script":"Math.random()","inputJson":"1","determinism":{"seed":"` + strings.Repeat("s", 129) + `"}}`,
			status: 400, slug: "invalid-request", detail: []string{"determinism.seed is 129 bytes, over the 128 a seed may have"},
			members: ext{"field": "determinism.seed"}},
		{name: "now before 1970", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","determinism":{"now":"1969-07-20T20:17:40Z"}}`,
			status: 400, slug: "invalid-request", detail: []string{"determinism.now 1969-07-20T20:17:40Z is outside 1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z"},
			members: ext{"field": "determinism.now"}},
		{name: "unknown determinism member", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","determinism":{"clock":"frozen"}}`,
			status: 400, slug: "unknown-field", detail: []string{`"determinism.clock"`, "seed, now"}, members: ext{"field": "determinism.clock"}},
		// 400 references and shape hashes
		{name: "uppercase reference", route: "/v1/evaluations", body: `{"scriptRef":"` + strings.ToUpper(ref) + `"}`, status: 400, slug: "bad-reference",
			detail: []string{"sha256", "lowercase"}},
		{name: "short reference", route: "/v1/sandbox/evaluate", body: `{"scriptRef":"sha256:abc","inputJson":"1"}`, status: 400, slug: "bad-reference",
			detail: []string{"64 hex digits, got 3 characters"}},
		{name: "other algorithm", route: "/v1/evaluations", body: `{"scriptRef":"md5:abc"}`, status: 400, slug: "bad-reference", detail: []string{`unsupported algorithm "md5"`}},
		{name: "bad shape hash", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","expectedOutputShapeHash":"sha256:xyz"}`, status: 400, slug: "bad-shape-hash",
			detail: []string{"64 lowercase hex"}},
		// 413
		{name: "body over maxRequestBytes", route: "/v1/evaluations", body: `{"scriptRef":"` + ref + `","input":"` + strings.Repeat("x", 16<<20) + `"}`,
			status: 413, slug: "request-too-large", detail: []string{"maxRequestBytes of 16777216"}, members: ext{"limit": "maxRequestBytes", "limitValue": 16777216.0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := v.mustDo(http.MethodPost, tc.route, tc.body, tc.header)
			p := wantProblem(t, r, tc.status, tc.slug, false, tc.detail...)
			for k, want := range tc.members {
				if p[k] != want {
					t.Errorf("member %s = %#v, want %#v; problem %s", k, p[k], want, r.body)
				}
			}
			for k, want := range tc.headers {
				if got := r.header.Get(k); got != want {
					t.Errorf("header %s: %q, want %q", k, got, want)
				}
			}
		})
	}
}

// A body sent as it is, with Content-Encoding identity, is read as any
// other.
func TestIdentityEncodingIsAccepted(t *testing.T) {
	v := newEnv(t)
	r := v.mustDo(http.MethodPost, "/v1/sandbox/evaluate", `{"script":"input + 1","inputJson":"1"}`, map[string]string{"Content-Encoding": "identity"})
	wantBody(t, r, 200, `{"ok":true,"value":2}`)
}

func gzipped(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.String()
}

// A chunked body (no Content-Length) over the cap fails while it is read,
// with the same problem.
func TestChunkedBodyOverCap(t *testing.T) {
	v := newEnv(t)
	body := io.MultiReader(strings.NewReader(`{"scriptRef":"`+contentref.RefOf(nil).String()+`","input":"`), strings.NewReader(strings.Repeat("y", 17<<20)), strings.NewReader(`"}`))
	r := v.mustDo(http.MethodPost, "/v1/evaluations", body, nil)
	wantProblem(t, r, 413, "request-too-large", false, "16777216")
}

func TestRoutingProblems(t *testing.T) {
	v := newEnv(t)
	t.Run("unknown route", func(t *testing.T) {
		r := v.mustDo(http.MethodGet, "/v2/nothing", nil, nil)
		wantProblem(t, r, 404, "not-found", false, `"/v2/nothing"`, "/v1/evaluations")
	})
	// A path is its unescaped self, which the 404 names: the batch route
	// with its colon escaped, as url.PathEscape and encodeURIComponent
	// write it, is the batch route, with the same answer, and the same 405
	// for another method.
	t.Run("escapes", func(t *testing.T) {
		body := `{"scriptRef":"` + v.put("[input]") + `","inputs":[1,"x",null]}`
		want := answerLines(t, v.mustDo(http.MethodPost, "/v1/evaluations:batch", body, nil))
		for _, path := range []string{"/v1/evaluations%3Abatch", "/v1/evaluations%3abatch", "/v1%2Fevaluations%3Abatch"} {
			if got := answerLines(t, v.mustDo(http.MethodPost, path, body, nil)); got != want {
				t.Errorf("POST %s answered\n%s\nwant the batch route's\n%s", path, got, want)
			}
		}
		r := v.mustDo(http.MethodGet, "/v1/evaluations%3Abatch", nil, nil)
		wantProblem(t, r, 405, "method-not-allowed", false, "/v1/evaluations:batch", "POST")
		r = v.mustDo(http.MethodPost, "/v1/evaluations%3Abatches", body, nil)
		wantProblem(t, r, 404, "not-found", false, `no route "/v1/evaluations:batches"`, "POST /v1/evaluations:batch")
	})
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodGet, "/v1/evaluations", "POST"},
		{http.MethodPut, "/v1/sandbox/evaluate", "POST"},
		{http.MethodPost, "/v1/capabilities", "GET"},
		{http.MethodDelete, "/healthz", "GET, HEAD"},
		{http.MethodPost, "/readyz", "GET, HEAD"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := v.mustDo(tc.method, tc.path, nil, nil)
			wantProblem(t, r, 405, "method-not-allowed", false, tc.method, tc.allow)
			if got := r.header.Get("Allow"); got != tc.allow {
				t.Fatalf("Allow %q, want %q", got, tc.allow)
			}
		})
	}
}

// answerLines is a 200 batch answer's lines, each read as a batch line and
// written again without its usage, which varies from run to run.
func answerLines(t *testing.T, r response) string {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.status, r)
	}
	var out []byte
	for raw := range bytes.Lines(r.body) {
		l, err := api.DecodeBatchLine(bytes.TrimSuffix(raw, []byte("\n")))
		if err != nil {
			t.Fatalf("line %s: %v", raw, err)
		}
		if l.Answer != nil {
			l.Answer.Usage = nil
		}
		if l.Summary != nil {
			l.Summary.Usage = spi.Usage{}
		}
		if out, err = api.AppendBatchLine(out, l); err != nil {
			t.Fatal(err)
		}
	}
	return string(out)
}
