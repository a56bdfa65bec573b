package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
)

// The document is strict enough to catch drift: the validator that checks
// every test's traffic (see validating) refuses answers outside the contract.
// Each case is a hand-made exchange; want says whether the document accepts
// it.
func TestOpenAPIDocumentIsStrict(t *testing.T) {
	router, err := apiDoc()
	if err != nil {
		t.Fatal(err)
	}
	const ref = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	problem := func(slug string, status string) string {
		return `{"type":"https://github.com/loom-plugins/sandbox-cloudrun/blob/main/docs/problems.md#` + slug + `","title":"T","status":` + status + `,"detail":"d","retryable":false}`
	}
	cases := []struct {
		name        string
		path, req   string
		status      int
		header      map[string]string
		body        string
		wantRequest bool // whether the document accepts the request
		want        bool // whether it accepts the response
	}{
		{"SPI ok", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1"}`, 200, nil, `{"ok":true,"value":1}`, true, true},
		{"SPI ok null value", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"null"}`, 200, nil, `{"ok":true,"value":null}`, true, true},
		{"SPI outcome with an extra member", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1"}`, 200, nil, `{"ok":true,"value":1,"extra":""}`, true, false},
		{"SPI output limit (a backend never reports it)", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1"}`, 200, nil, `{"ok":false,"kind":"limit","limit":"output"}`, true, false},
		{"SPI threw without message", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1"}`, 200, nil, `{"ok":false,"kind":"threw","name":"Error"}`, true, false},
		{"SPI channel instead of kind", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1"}`, 200, nil, `{"ok":false,"failure":{"channel":"scriptError","message":"m"}}`, true, false},
		{"SPI both script and scriptRef", "/v1/sandbox/evaluate", `{"script":"1","scriptRef":"` + ref + `","inputJson":"1"}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"SPI no inputJson", "/v1/sandbox/evaluate", `{"script":"1"}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"effect typed failure", "/v1/evaluations", `{"scriptRef":"` + ref + `"}`, 200, nil, `{"ok":false,"failure":{"channel":"limitExceeded","kind":"output"}}`, true, true},
		{"effect failure without its fields", "/v1/evaluations", `{"scriptRef":"` + ref + `"}`, 200, nil, `{"ok":false,"failure":{"channel":"scriptError"}}`, true, false},
		{"effect failure with an unknown channel", "/v1/evaluations", `{"scriptRef":"` + ref + `"}`, 200, nil, `{"ok":false,"failure":{"channel":"oops"}}`, true, false},
		{"effect ok with logs", "/v1/evaluations", `{"scriptRef":"` + ref + `","captureLogs":true}`, 200, nil, `{"ok":true,"value":[1],"logs":"x\n"}`, true, true},
		{"effect limit not an integer", "/v1/evaluations", `{"scriptRef":"` + ref + `","limits":{"wallClockMs":1.5}}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"SPI replayable run", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1","determinism":{"seed":"flow-42/step-3","now":"2026-12-02T07:16:17.5+01:00"}}`, 200, nil, `{"ok":true,"value":1}`, true, true},
		{"SPI replayable run with the defaults", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1","determinism":{}}`, 200, nil, `{"ok":true,"value":1}`, true, true},
		{"effect replayable run, the seed at its longest", "/v1/evaluations", `{"scriptRef":"` + ref + `","determinism":{"seed":"` + strings.Repeat("s", 128) + `"}}`, 200, nil, `{"ok":true,"value":1}`, true, true},
		{"effect replayable run at the last instant", "/v1/evaluations", `{"scriptRef":"` + ref + `","determinism":{"now":"2262-04-11T23:47:16Z"}}`, 200, nil, `{"ok":true,"value":1}`, true, true},
		{"determinism not an object", "/v1/evaluations", `{"scriptRef":"` + ref + `","determinism":true}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"determinism with an unknown member", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1","determinism":{"seed":"s","clock":"frozen"}}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"determinism with an empty seed", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1","determinism":{"seed":""}}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"determinism with a seed too long", "/v1/evaluations", `{"scriptRef":"` + ref + `","determinism":{"seed":"` + strings.Repeat("s", 129) + `"}}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"determinism with a control character in the seed", "/v1/evaluations", `{"scriptRef":"` + ref + `","determinism":{"seed":"a
b"}}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"determinism with DEL in the seed", "/v1/evaluations", `{"scriptRef":"` + ref + `","determinism":{"seed":"ab"}}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"determinism with a number for a seed", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1","determinism":{"seed":42}}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"determinism with an instant that is not RFC 3339", "/v1/sandbox/evaluate", `{"script":"1","inputJson":"1","determinism":{"now":"2026-12-02 07:16:17"}}`, 200, nil, `{"ok":true,"value":1}`, false, true},
		{"capabilities without determinism", "/v1/capabilities", "", 200, nil, capabilitiesWithout("determinism"), true, false},
		{"busy with Retry-After", "/v1/evaluations", `{"scriptRef":"` + ref + `"}`, 429, map[string]string{"Retry-After": "1"}, problem("busy", "429"), true, true},
		{"busy without Retry-After", "/v1/evaluations", `{"scriptRef":"` + ref + `"}`, 429, nil, problem("busy", "429"), true, false},
		{"problem without retryable", "/v1/evaluations", `{"scriptRef":"` + ref + `"}`, 400, nil, strings.Replace(problem("x", "400"), `,"retryable":false`, "", 1), true, false},
		{"undocumented status", "/v1/evaluations", `{"scriptRef":"` + ref + `"}`, 418, nil, problem("x", "418"), true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.req))
			req.Header.Set("Content-Type", "application/json")
			if tc.req == "" {
				req = httptest.NewRequest(http.MethodGet, tc.path, nil)
			}
			route, params, err := router.FindRoute(req)
			if err != nil {
				t.Fatal(err)
			}
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
			if err := openapi3filter.ValidateRequest(context.Background(), in); (err == nil) != tc.wantRequest {
				t.Errorf("request accepted = %v, want %v (%v)", err == nil, tc.wantRequest, err)
			}
			h := http.Header{}
			h.Set("Content-Type", "application/json")
			if tc.status != 200 {
				h.Set("Content-Type", "application/problem+json")
			}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: tc.status, Header: h,
				Body: io.NopCloser(bytes.NewReader([]byte(tc.body))), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
			if err := openapi3filter.ValidateResponse(context.Background(), out); (err == nil) != tc.want {
				t.Errorf("response accepted = %v, want %v (%v)", err == nil, tc.want, err)
			}
		})
	}
}

// capabilitiesWithout is the capabilities document as the service writes it
// (api/testdata's golden file) without the member name.
func capabilitiesWithout(name string) string {
	b, err := os.ReadFile("../api/testdata/capabilities/service.json")
	if err != nil {
		panic(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		panic(err)
	}
	if _, ok := doc[name]; !ok {
		panic("the capabilities document has no member " + name)
	}
	delete(doc, name)
	out, _ := json.Marshal(doc)
	return string(out)
}
