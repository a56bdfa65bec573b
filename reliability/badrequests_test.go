package reliability

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
)

// limits reads the limits of GET /v1/capabilities.
func (c *child) limits() api.Limits {
	c.t.Helper()
	r := c.do(http.MethodGet, routeCaps, nil, nil)
	info, err := api.DecodeInfo(r.body)
	if r.status != 200 || err != nil {
		c.t.Fatalf("capabilities: %s (%v)", r, err)
	}
	return info.Limits
}

// chunked hides a body's length so that the client sends it chunked.
type chunked struct{ io.Reader }

// scriptOfSize is a script of exactly n bytes whose value is 1.
func scriptOfSize(n int64) string {
	return "/*" + strings.Repeat("x", int(n)-5) + "*/1"
}

func deepArray(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func deepObject(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }

// badCase is one hand-written request and what the service must answer.
type badCase struct {
	name   string
	method string // POST when empty
	route  string
	body   any // string, []byte or io.Reader (chunked{} to send it chunked)
	header map[string]string

	status int
	slug   string // the problem; "" means a 200 outcome
	retry  bool
	detail []string
	// limit and limitValue members, when a limit applied (limitValue -1:
	// not checked)
	limit      string
	limitValue int64
	field      string
	ok         string // the exact 200 body, when slug is ""
	okPrefix   string // or its start
}

// Every kind of bad request, end to end through the binary with the default
// limits: every request gets its specific problem document (status, type,
// retryable, a detail that names the limit where one applied), never a 5xx;
// bodies at and one byte over every size cap; invalid UTF-8; duplicate keys;
// numbers beyond float64; nesting at and past the decoder's limit. Every
// response is also checked against api/openapi.yaml.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	c := startChild(t, startOpts{env: []string{"STORE_URL=" + store}})
	lim := c.limits()
	if lim.MaxRequestBytes != 16<<20 || lim.MaxInputBytes != 1<<20 || lim.MaxScriptBytes != 1<<20 || lim.MaxOutputBytes != 1<<20 {
		t.Fatalf("these cases assume the default limits; capabilities say %+v", lim)
	}
	refs := putScripts(t, store, 8<<20,
		"input",                        // 0 echo
		"JSON.stringify(input).length", // 1 length of the input's JSON
		`"x".repeat(input)`,            // 2 a value of input+2 bytes of JSON
		scriptOfSize(lim.MaxScriptBytes),
		scriptOfSize(lim.MaxScriptBytes+1),
	)
	echo, length, repeat, atCap, overCap := refs[0], refs[1], refs[2], refs[3], refs[4]

	reqCap, inCap, scCap, outCap := lim.MaxRequestBytes, lim.MaxInputBytes, lim.MaxScriptBytes, lim.MaxOutputBytes
	pad := func(prefix string, n int64) string { return prefix + strings.Repeat(" ", int(n)-len(prefix)) }
	small := `{"script":"1","inputJson":"null"}`
	smallEval := `{"scriptRef":"` + echo + `","input":1}`
	// a string input whose JSON text is exactly n bytes
	inputOf := func(n int64) string { return `"` + strings.Repeat("x", int(n)-2) + `"` }
	evalWithInput := func(in string) string { return `{"scriptRef":"` + length + `","input":` + in + `}` }
	evalWithInputWithin := func(in string, wallClockMs int) string {
		return `{"scriptRef":"` + length + `","input":` + in + `,"limits":{"wallClockMs":` + strconv.Itoa(wallClockMs) + `}}`
	}
	// an SPI request whose inputJson text is exactly n bytes
	spiWithInput := func(n int64) string {
		return `{"script":"input.length","inputJson":"\"` + strings.Repeat("x", int(n)-2) + `\""}`
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(small))
	zw.Close()

	cases := []badCase{
		// ---- capabilities and routing
		{name: "capabilities by POST", route: routeCaps, body: "{}", status: 405, slug: "method-not-allowed", detail: []string{"GET"}},
		{name: "capabilities by HEAD", method: http.MethodHead, route: routeCaps, status: 405, slug: "method-not-allowed"},
		{name: "capabilities by DELETE", method: http.MethodDelete, route: routeCaps, status: 405, slug: "method-not-allowed"},
		{name: "capabilities with a trailing slash", method: http.MethodGet, route: routeCaps + "/", status: 404, slug: "not-found", detail: []string{routeCaps}},
		{name: "capabilities in upper case", method: http.MethodGet, route: "/V1/CAPABILITIES", status: 404, slug: "not-found"},
		{name: "dot segments are not cleaned", method: http.MethodGet, route: "/v1/../v1/capabilities", status: 404, slug: "not-found"},
		{name: "evaluations by GET", method: http.MethodGet, route: routeEvaluations, status: 405, slug: "method-not-allowed", detail: []string{"POST"}},
		{name: "sandbox by PUT", method: http.MethodPut, route: routeSandbox, body: small, status: 405, slug: "method-not-allowed"},
		{name: "sandbox by OPTIONS", method: http.MethodOptions, route: routeSandbox, status: 405, slug: "method-not-allowed"},
		{name: "unknown route", route: "/v1/evaluate", body: small, status: 404, slug: "not-found", detail: []string{`"/v1/evaluate"`}},

		// ---- content type
		{name: "no content type", route: routeEvaluations, body: smallEval, header: map[string]string{"Content-Type": ""}, status: 415, slug: "unsupported-media-type", detail: []string{"no Content-Type"}},
		{name: "text/plain", route: routeSandbox, body: small, header: map[string]string{"Content-Type": "text/plain"}, status: 415, slug: "unsupported-media-type", detail: []string{`"text/plain"`}},
		{name: "charset utf-16", route: routeSandbox, body: small, header: map[string]string{"Content-Type": "application/json; charset=utf-16"}, status: 415, slug: "unsupported-media-type"},
		{name: "unparseable content type", route: routeEvaluations, body: smallEval, header: map[string]string{"Content-Type": "application/json; charset"}, status: 415, slug: "unsupported-media-type"},
		{name: "json suffix type", route: routeSandbox, body: small, header: map[string]string{"Content-Type": "application/merge-patch+json"}, status: 415, slug: "unsupported-media-type"},
		{name: "content type in upper case is JSON", route: routeSandbox, body: small, header: map[string]string{"Content-Type": "APPLICATION/JSON; charset=\"UTF-8\""}, ok: `{"ok":true,"value":1}`},
		{name: "gzip content encoding is refused, not decoded", route: routeSandbox, body: gz.Bytes(), header: map[string]string{"Content-Encoding": "gzip"},
			status: 415, slug: "unsupported-content-encoding", detail: []string{`Content-Encoding "gzip" is not accepted`, "identity"}},

		// ---- the request cap, declared and chunked, on both routes
		{name: "sandbox body at maxRequestBytes", route: routeSandbox, body: pad(small, reqCap), ok: `{"ok":true,"value":1}`},
		{name: "sandbox body one over maxRequestBytes", route: routeSandbox, body: pad(small, reqCap+1), status: 413, slug: "request-too-large",
			detail: []string{strconv.FormatInt(reqCap, 10)}, limit: "maxRequestBytes", limitValue: reqCap},
		{name: "chunked body at maxRequestBytes", route: routeSandbox, body: chunked{strings.NewReader(pad(small, reqCap))}, ok: `{"ok":true,"value":1}`},
		{name: "chunked body one over maxRequestBytes", route: routeSandbox, body: chunked{strings.NewReader(pad(small, reqCap+1))}, status: 413, slug: "request-too-large",
			detail: []string{strconv.FormatInt(reqCap, 10)}, limit: "maxRequestBytes", limitValue: reqCap},
		{name: "evaluations body at maxRequestBytes", route: routeEvaluations, body: pad(smallEval, reqCap), ok: `{"ok":true,"value":1}`},
		{name: "evaluations body one over maxRequestBytes", route: routeEvaluations, body: pad(smallEval, reqCap+1), status: 413, slug: "request-too-large",
			limit: "maxRequestBytes", limitValue: reqCap},
		{name: "evaluations chunked one over maxRequestBytes", route: routeEvaluations, body: chunked{strings.NewReader(pad(smallEval, reqCap+1))}, status: 413, slug: "request-too-large",
			limit: "maxRequestBytes", limitValue: reqCap},

		// ---- the input cap: the typed inputTooLarge on either route
		{name: "evaluations input at maxInputBytes", route: routeEvaluations, body: evalWithInput(inputOf(inCap)), ok: fmt.Sprintf(`{"ok":true,"value":%d}`, inCap)},
		{name: "evaluations input one over maxInputBytes", route: routeEvaluations, body: evalWithInput(inputOf(inCap + 1)),
			ok: fmt.Sprintf(`{"ok":false,"failure":{"channel":"inputTooLarge","limitBytes":%d}}`, inCap)},
		{name: "sandbox inputJson at maxInputBytes", route: routeSandbox, body: spiWithInput(inCap), ok: fmt.Sprintf(`{"ok":true,"value":%d}`, inCap-2)},
		{name: "sandbox inputJson one over maxInputBytes", route: routeSandbox, body: spiWithInput(inCap + 1), ok: `{"ok":false,"kind":"inputTooLarge"}`},

		// ---- the script cap, by value and stored
		{name: "inline script at maxScriptBytes", route: routeSandbox, body: `{"script":` + jsonString(scriptOfSize(scCap)) + `,"inputJson":"null"}`, ok: `{"ok":true,"value":1}`},
		{name: "inline script one over maxScriptBytes is its RangeError", route: routeSandbox, body: `{"script":` + jsonString(scriptOfSize(scCap+1)) + `,"inputJson":"null"}`,
			ok: fmt.Sprintf(`{"ok":false,"kind":"threw","name":"RangeError","message":"the script is %d bytes, over the service's maxScriptBytes of %d"}`, scCap+1, scCap)},
		{name: "inline script at maxScriptBytes, half of it written as escapes", route: routeSandbox,
			body: `{"script":"` + strings.Repeat(`\u0020`, int(scCap)/2) + strings.Repeat(" ", int(scCap)/2-1) + `1","inputJson":"null"}`, ok: `{"ok":true,"value":1}`},
		// MaxRequestBytes holds a script and an input at their bounds with
		// every byte escaped (api.MinRequestBytes): how a client writes them
		// never makes a request too large.
		{name: "inline script at maxScriptBytes, all of it written as escapes", route: routeSandbox,
			body: `{"script":"` + strings.Repeat(`\u0020`, int(scCap)-1) + `1","inputJson":"null"}`, ok: `{"ok":true,"value":1}`},
		{name: "inline script and inputJson at their bounds, all of both written as escapes", route: routeSandbox,
			body: `{"script":"` + strings.Repeat(`\u0020`, int(scCap)-len("input.length")) + `\u0069nput.length","inputJson":"\u0022` + strings.Repeat(`\u0069`, int(inCap)-2) + `\u0022"}`,
			ok:   fmt.Sprintf(`{"ok":true,"value":%d}`, inCap-2)},
		{name: "stored script at maxScriptBytes by reference", route: routeEvaluations, body: `{"scriptRef":"` + atCap + `"}`, ok: `{"ok":true,"value":1}`},
		{name: "stored script at maxScriptBytes on the SPI", route: routeSandbox, body: `{"scriptRef":"` + atCap + `","inputJson":"null"}`, ok: `{"ok":true,"value":1}`},
		{name: "stored script one over maxScriptBytes by reference", route: routeEvaluations, body: `{"scriptRef":"` + overCap + `"}`,
			status: 413, slug: "script-too-large", detail: []string{strconv.FormatInt(scCap+1, 10) + " bytes"}, limit: "maxScriptBytes", limitValue: scCap, field: "scriptRef"},
		{name: "stored script one over maxScriptBytes on the SPI", route: routeSandbox, body: `{"scriptRef":"` + overCap + `","inputJson":"null"}`,
			status: 413, slug: "script-too-large", detail: []string{strconv.FormatInt(scCap+1, 10) + " bytes"}, limit: "maxScriptBytes", limitValue: scCap, field: "scriptRef"},

		// ---- the output cap (applied by the effect; the SPI returns the value whole)
		{name: "output at maxOutputBytes", route: routeEvaluations, body: fmt.Sprintf(`{"scriptRef":"%s","input":%d}`, repeat, outCap-2), okPrefix: `{"ok":true,"value":"xxxx`},
		{name: "output one over maxOutputBytes", route: routeEvaluations, body: fmt.Sprintf(`{"scriptRef":"%s","input":%d}`, repeat, outCap-1),
			ok: `{"ok":false,"failure":{"channel":"limitExceeded","kind":"output"}}`},
		{name: "output over maxOutputBytes on the SPI is the caller's to bound", route: routeSandbox, body: fmt.Sprintf(`{"scriptRef":"%s","inputJson":"%d"}`, repeat, outCap), okPrefix: `{"ok":true,"value":"xxxx`},

		// ---- malformed JSON
		{name: "empty body", route: routeEvaluations, body: "", status: 400, slug: "malformed-json", detail: []string{"empty"}},
		{name: "white space only", route: routeSandbox, body: " \r\n\t ", status: 400, slug: "malformed-json", detail: []string{"empty"}},
		{name: "truncated object", route: routeSandbox, body: `{"script":"1",`, status: 400, slug: "malformed-json", detail: []string{"byte offset"}},
		{name: "a byte-order mark", route: routeEvaluations, body: "\ufeff" + smallEval, status: 400, slug: "malformed-json", detail: []string{"byte offset 0"}},
		{name: "data after the value", route: routeEvaluations, body: smallEval + "{}", status: 400, slug: "malformed-json", detail: []string{"after the JSON value"}},
		{name: "a raw control character in a string", route: routeSandbox, body: "{\"script\":\"1\x00\",\"inputJson\":\"null\"}", status: 400, slug: "malformed-json", detail: []string{"control character 0x00"}},
		{name: "a bad escape", route: routeSandbox, body: `{"script":"\x41","inputJson":"null"}`, status: 400, slug: "malformed-json", detail: []string{"escape"}},
		{name: "a leading zero in a limit", route: routeSandbox, body: `{"script":"1","inputJson":"null","limits":{"wallClockMs":0100}}`, status: 400, slug: "malformed-json"},
		{name: "NaN", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","input":NaN}`, status: 400, slug: "malformed-json"},
		{name: "single quotes", route: routeEvaluations, body: `{'scriptRef':'` + echo + `'}`, status: 400, slug: "malformed-json"},
		{name: "inputJson not JSON", route: routeSandbox, body: `{"script":"1","inputJson":"{\"a\":}"}`, status: 400, slug: "malformed-json", detail: []string{"inputJson", "byte offset 5"}, field: "inputJson"},
		{name: "inputJson empty", route: routeSandbox, body: `{"script":"1","inputJson":""}`, status: 400, slug: "malformed-json", detail: []string{"inputJson", "empty"}, field: "inputJson"},

		// ---- invalid UTF-8, anywhere
		{name: "invalid byte in a value", route: routeEvaluations, body: "{\"scriptRef\":\"\xff\"}", status: 400, slug: "malformed-json", detail: []string{"UTF-8", "byte offset 14"}},
		{name: "invalid byte in a key", route: routeSandbox, body: "{\"scr\xfeipt\":\"1\",\"inputJson\":\"null\"}", status: 400, slug: "malformed-json", detail: []string{"UTF-8", "byte offset 5"}},
		{name: "overlong encoding", route: routeSandbox, body: "{\"script\":\"\xc0\xaf\",\"inputJson\":\"null\"}", status: 400, slug: "malformed-json", detail: []string{"UTF-8"}},
		{name: "encoded surrogate half", route: routeSandbox, body: "{\"script\":\"\xed\xa0\x80\",\"inputJson\":\"null\"}", status: 400, slug: "malformed-json", detail: []string{"UTF-8"}},
		{name: "truncated sequence at the end", route: routeEvaluations, body: "{\"scriptRef\":\"" + echo + "\",\"input\":\"\xe2\x82\"}", status: 400, slug: "malformed-json", detail: []string{"UTF-8"}},
		{name: "invalid UTF-8 inside inputJson", route: routeSandbox, body: "{\"script\":\"1\",\"inputJson\":\"\\\"\xff\\\"\"}", status: 400, slug: "malformed-json", detail: []string{"UTF-8"}},
		{name: "lone surrogate escapes are valid JSON and reach the script", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","input":"\ud800x\udfff"}`, ok: `{"ok":true,"value":"\ud800x\udfff"}`},
		{name: "lone surrogate keys are two keys", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","input":{"\ud800":1,"\ud801":2}}`, ok: `{"ok":true,"value":{"\ud800":1,"\ud801":2}}`},
		{name: "a lone surrogate escape in a script by value runs as sent", route: routeSandbox, body: `{"script":"'\ud800'.charCodeAt(0)","inputJson":"null"}`, ok: `{"ok":true,"value":55296}`},
		{name: "a lone surrogate escape in inputJson's own string is refused", route: routeSandbox, body: `{"script":"input","inputJson":"\"\ud800\""}`, status: 400, slug: "malformed-json", detail: []string{"inputJson", "lone surrogate U+D800", `escape \ud800`, "byte offset 1"}, field: "inputJson"},
		{name: "a lone surrogate escaped inside inputJson reaches the script", route: routeSandbox, body: `{"script":"input.charCodeAt(0)","inputJson":"\"\\ud800\""}`, ok: `{"ok":true,"value":55296}`},

		// ---- duplicate keys, anywhere
		{name: "duplicate top-level key", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","scriptRef":"` + length + `"}`, status: 400, slug: "duplicate-key", detail: []string{`"scriptRef"`, "twice"}, field: "scriptRef"},
		{name: "duplicate key by escape", route: routeSandbox, body: `{"script":"1","\u0073cript":"2","inputJson":"null"}`, status: 400, slug: "duplicate-key", field: "script"},
		{name: "duplicate limit", route: routeSandbox, body: `{"script":"1","inputJson":"null","limits":{"wallClockMs":10,"wallClockMs":20}}`, status: 400, slug: "duplicate-key", field: "limits.wallClockMs"},
		{name: "duplicate key deep in the input", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","input":{"a":{"b":[{"c":1,"c":1}]}}}`, status: 400, slug: "duplicate-key", detail: []string{"twice"}},
		{name: "duplicate key in inputJson", route: routeSandbox, body: `{"script":"1","inputJson":"{\"a\":1,\"\\u0061\":2}"}`, status: 400, slug: "duplicate-key", field: "inputJson"},
		{name: "keys differing in case are not merged", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","ScriptRef":"` + length + `"}`, status: 400, slug: "unknown-field", field: "ScriptRef"},

		// ---- unknown fields and wrong types
		{name: "unknown top-level field", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","timeout":5}`, status: 400, slug: "unknown-field", detail: []string{`"timeout"`, "scriptRef, input, limits"}, field: "timeout"},
		{name: "SPI field on the effect route", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","inputJson":"1"}`, status: 400, slug: "unknown-field", field: "inputJson"},
		{name: "effect field on the SPI route", route: routeSandbox, body: `{"script":"1","inputJson":"null","expectedOutputShapeHash":"sha256:00"}`, status: 400, slug: "unknown-field", field: "expectedOutputShapeHash"},
		{name: "unknown limit", route: routeSandbox, body: `{"script":"1","inputJson":"null","limits":{"cpuMs":5}}`, status: 400, slug: "unknown-field", detail: []string{"wallClockMs, memoryBytes"}, field: "limits.cpuMs"},
		{name: "body is an array", route: routeEvaluations, body: `[]`, status: 400, slug: "invalid-request", detail: []string{"JSON object"}},
		{name: "body is null", route: routeSandbox, body: `null`, status: 400, slug: "invalid-request", detail: []string{"JSON object"}},
		{name: "no scriptRef", route: routeEvaluations, body: `{"input":1}`, status: 400, slug: "invalid-request", detail: []string{"scriptRef"}, field: "scriptRef"},
		{name: "null scriptRef is absent", route: routeEvaluations, body: `{"scriptRef":null}`, status: 400, slug: "invalid-request", field: "scriptRef"},
		{name: "scriptRef a number", route: routeEvaluations, body: `{"scriptRef":7}`, status: 400, slug: "invalid-request", detail: []string{"must be a string"}, field: "scriptRef"},
		{name: "captureLogs a string", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","captureLogs":"yes"}`, status: 400, slug: "invalid-request", detail: []string{"boolean"}},
		{name: "limits an array", route: routeSandbox, body: `{"script":"1","inputJson":"null","limits":[]}`, status: 400, slug: "invalid-request", detail: []string{"object"}},
		{name: "inputJson an object", route: routeSandbox, body: `{"script":"1","inputJson":{}}`, status: 400, slug: "invalid-request", detail: []string{`"inputJson" must be a string`}},
		{name: "no inputJson", route: routeSandbox, body: `{"script":"1"}`, status: 400, slug: "invalid-request", field: "inputJson"},
		{name: "script and scriptRef", route: routeSandbox, body: `{"script":"1","scriptRef":"` + echo + `","inputJson":"null"}`, status: 400, slug: "invalid-request", detail: []string{"not both"}},
		{name: "neither script nor scriptRef", route: routeSandbox, body: `{"inputJson":"null"}`, status: 400, slug: "invalid-request", detail: []string{"exactly one"}},

		// ---- references and shape hashes
		{name: "reference in upper case", route: routeEvaluations, body: `{"scriptRef":"` + strings.ToUpper(echo) + `"}`, status: 400, slug: "bad-reference", detail: []string{"lowercase"}, field: "scriptRef"},
		{name: "reference too short", route: routeSandbox, body: `{"scriptRef":"sha256:abc","inputJson":"null"}`, status: 400, slug: "bad-reference", detail: []string{"got 3 characters"}},
		{name: "reference with a newline", route: routeEvaluations, body: `{"scriptRef":"` + echo + `\n"}`, status: 400, slug: "bad-reference", detail: []string{"white space"}},
		{name: "another algorithm", route: routeEvaluations, body: `{"scriptRef":"sha512:` + strings.Repeat("a", 128) + `"}`, status: 400, slug: "bad-reference", detail: []string{`"sha512"`}},
		{name: "a 100 KB reference is quoted bounded", route: routeEvaluations, body: `{"scriptRef":"` + strings.Repeat("z", 100_000) + `"}`, status: 400, slug: "bad-reference"},
		{name: "bad shape hash", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","expectedOutputShapeHash":"sha256:nope"}`, status: 400, slug: "bad-shape-hash", field: "expectedOutputShapeHash"},
		{name: "missing script on the SPI", route: routeSandbox, body: `{"scriptRef":"` + missingRef + `","inputJson":"null"}`, status: 404, slug: "script-not-found", detail: []string{missingRef}},
		{name: "missing script on the effect route is typed", route: routeEvaluations, body: `{"scriptRef":"` + missingRef + `"}`,
			ok: `{"ok":false,"failure":{"channel":"scriptMissing","scriptRef":"` + missingRef + `"}}`},

		// ---- limits: positive integers in digits, run at most at the maximum; numbers beyond float64
		{name: "wall clock at the maximum", route: routeSandbox, body: fmt.Sprintf(`{"script":"1","inputJson":"null","limits":{"wallClockMs":%d}}`, lim.MaxWallClock.Milliseconds()), ok: `{"ok":true,"value":1}`},
		{name: "wall clock one over the maximum runs at it", route: routeSandbox, body: fmt.Sprintf(`{"script":"1","inputJson":"null","limits":{"wallClockMs":%d}}`, lim.MaxWallClock.Milliseconds()+1),
			ok: `{"ok":true,"value":1}`},
		{name: "memory at the maximum", route: routeEvaluations, body: fmt.Sprintf(`{"scriptRef":"%s","limits":{"memoryBytes":%d}}`, echo, lim.MaxMemoryBytes), ok: `{"ok":true,"value":null}`},
		{name: "memory one over the maximum runs at it", route: routeEvaluations, body: fmt.Sprintf(`{"scriptRef":"%s","limits":{"memoryBytes":%d}}`, echo, lim.MaxMemoryBytes+1),
			ok: `{"ok":true,"value":null}`},
		{name: "memory at the minimum", route: routeSandbox, body: fmt.Sprintf(`{"script":"input","inputJson":"{\"a\":1}","limits":{"memoryBytes":%d}}`, lim.MinMemoryBytes), ok: `{"ok":true,"value":{"a":1}}`},
		{name: "memory one under the minimum is the memory limit", route: routeEvaluations, body: fmt.Sprintf(`{"scriptRef":"%s","input":{"a":1},"limits":{"memoryBytes":%d}}`, echo, lim.MinMemoryBytes-1),
			ok: `{"ok":false,"failure":{"channel":"limitExceeded","kind":"memory"}}`},
		{name: "memory one under the minimum on the SPI", route: routeSandbox, body: fmt.Sprintf(`{"script":"1","inputJson":"null","limits":{"memoryBytes":%d}}`, lim.MinMemoryBytes-1),
			ok: `{"ok":false,"kind":"limit","limit":"memory"}`},
		{name: "limit 1e400", route: routeSandbox, body: `{"script":"1","inputJson":"null","limits":{"wallClockMs":1e400}}`,
			status: 400, slug: "invalid-limits", detail: []string{"not an integer written in digits", "maxWallClockMs of 30000"}, field: "limits.wallClockMs"},
		{name: "limit beyond int64 and float64 precision runs at the maximum", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","limits":{"memoryBytes":` + strings.Repeat("9", 400) + `}}`,
			ok: `{"ok":true,"value":null}`},
		{name: "limit 2^63 runs at the maximum", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","limits":{"wallClockMs":9223372036854775808}}`,
			ok: `{"ok":true,"value":null}`},
		{name: "limit -0", route: routeSandbox, body: `{"script":"1","inputJson":"null","limits":{"memoryBytes":-0}}`, status: 400, slug: "invalid-limits", detail: []string{"negative"}, field: "limits.memoryBytes"},
		{name: "limit 0", route: routeSandbox, body: `{"script":"1","inputJson":"null","limits":{"wallClockMs":0}}`, status: 400, slug: "invalid-limits", detail: []string{"zero"}},
		{name: "limit 100.0", route: routeSandbox, body: `{"script":"1","inputJson":"null","limits":{"wallClockMs":100.0}}`, status: 400, slug: "invalid-limits", detail: []string{"integer"}},
		{name: "limit as a string", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","limits":{"wallClockMs":"100"}}`, status: 400, slug: "invalid-limits", detail: []string{"not a number"}},
		{name: "limit as true", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","limits":{"wallClockMs":true}}`, status: 400, slug: "invalid-limits", detail: []string{"not a number"}},
		{name: "null limits take the defaults", route: routeSandbox, body: `{"script":"1","inputJson":"null","limits":{"wallClockMs":null,"memoryBytes":null}}`, ok: `{"ok":true,"value":1}`},
		// An input number beyond float64 is what ECMAScript's JSON.parse makes
		// of it (Infinity, whose JSON is null; an underflow is 0): documented
		// in effect/internal/jsontext, not a bad request.
		{name: "input 1e400 is Infinity to the script", route: routeEvaluations, body: `{"scriptRef":"` + echo + `","input":[1e400,-1e400,1e-400,123456789012345678901234567890,9007199254740993]}`,
			ok: `{"ok":true,"value":[null,null,0,1.2345678901234568e+29,9007199254740992]}`},
		{name: "inputJson 1e400 is Infinity to the script", route: routeSandbox, body: `{"script":"[input === Infinity, input]","inputJson":"1e400"}`, ok: `{"ok":true,"value":[true,null]}`},

		// ---- nesting: the body and inputJson may nest 10000 levels, no more
		// a 30 s wall clock: parsing 10,000 levels takes seconds under the
		// race detector on a busy machine, and the case is about depth
		{name: "input nested 9999 deep (body 10000)", route: routeEvaluations, body: evalWithInputWithin(deepArray(9999), 30000), ok: `{"ok":true,"value":19998}`},
		{name: "input nested 10000 deep (body 10001)", route: routeEvaluations, body: evalWithInput(deepArray(10000)), status: 400, slug: "malformed-json", detail: []string{"nested more than 10000 levels deep", "byte offset"}},
		{name: "input objects nested 10001 deep", route: routeEvaluations, body: evalWithInput(deepObject(10001)), status: 400, slug: "malformed-json", detail: []string{"10000 levels"}},
		{name: "input nested 1,000,000 deep", route: routeEvaluations, body: evalWithInput(deepArray(1_000_000)), status: 400, slug: "malformed-json", detail: []string{"10000 levels"}},
		{name: "unclosed nesting to the request cap", route: routeEvaluations, body: `{"input":` + strings.Repeat("[", int(reqCap)-9), status: 400, slug: "malformed-json", detail: []string{"10000 levels"}},
		{name: "limits nested past the limit", route: routeSandbox, body: `{"script":"1","inputJson":"null","limits":{"wallClockMs":` + deepArray(10001) + `}}`, status: 400, slug: "malformed-json", detail: []string{"10000 levels"}},
		{name: "inputJson nested 10000 deep", route: routeSandbox, body: `{"script":"JSON.stringify(input).length","inputJson":"` + deepArray(10000) + `"}`, ok: `{"ok":true,"value":20000}`},
		{name: "inputJson nested 10001 deep", route: routeSandbox, body: `{"script":"1","inputJson":"` + deepArray(10001) + `"}`, status: 400, slug: "malformed-json", detail: []string{"inputJson", "10000 levels"}, field: "inputJson"},
		{name: "inputJson nested 500,000 deep", route: routeSandbox, body: `{"script":"1","inputJson":"` + deepArray(500_000) + `"}`, status: 400, slug: "malformed-json", detail: []string{"10000 levels"}, field: "inputJson"},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			r := c.do(method, tc.route, tc.body, tc.header)
			checkCase(t, tc, method, r)
		})
	}
	// The instance still serves after all of that.
	wantJSON(t, c.post(routeSandbox, `{"script":"input.a","inputJson":"{\"a\":42}"}`), `{"ok":true,"value":42}`)
	for _, l := range c.Logs.Lines("") {
		if st, ok := l["status"].(float64); ok && st >= 500 {
			t.Errorf("a bad request was logged with status %v: %v", st, l)
		}
	}
}

func checkCase(t *testing.T, tc badCase, method string, r response) {
	t.Helper()
	if r.status >= 500 {
		t.Fatalf("a 5xx for a bad request: %s", r)
	}
	if method == http.MethodHead {
		// no body; the status and Allow say it
		if r.status != tc.status || r.header.Get("Allow") != "GET" || len(r.body) != 0 {
			t.Fatalf("HEAD: %s Allow %q, want %d with Allow GET", r, r.header.Get("Allow"), tc.status)
		}
		return
	}
	if err := validResponse(method, tc.route, r); err != nil {
		t.Error(err)
	}
	if tc.slug == "" {
		switch {
		case tc.ok != "":
			wantJSON(t, r, tc.ok)
		case tc.okPrefix != "":
			if r.status != 200 || !bytes.HasPrefix(r.body, []byte(tc.okPrefix)) {
				t.Fatalf("got %s, want 200 starting %s", r, tc.okPrefix)
			}
		}
		return
	}
	p := wantProblem(t, r, tc.status, tc.slug, tc.retry, tc.detail...)
	if tc.limit != "" {
		if p["limit"] != tc.limit || p["limitValue"] != float64(tc.limitValue) {
			t.Fatalf("limit %v=%v, want %s=%d; %s", p["limit"], p["limitValue"], tc.limit, tc.limitValue, r)
		}
		if !strings.Contains(p.detail(), strconv.FormatInt(tc.limitValue, 10)) {
			t.Fatalf("detail %q does not name the limit's value %d", p.detail(), tc.limitValue)
		}
	}
	if tc.field != "" && p["field"] != tc.field {
		t.Fatalf("field %v, want %s; %s", p["field"], tc.field, r)
	}
	if len(p.detail()) > 4096 {
		t.Fatalf("detail of %d bytes: details must stay bounded", len(p.detail()))
	}
}

// Requests that are wrong at the HTTP level, sent on a raw connection.
// net/http answers some of them itself, before the service's handler: those
// answers are plain text, not problem documents, and never 5xx; but for a
// header block over the cap, whose 431 the service's listener turns into a
// problem document.
func TestBadHTTP(t *testing.T) {
	t.Parallel()
	c := startChild(t, startOpts{env: []string{"STORE_URL=none"}})
	addr := strings.TrimPrefix(c.URL, "http://")
	raw := func(t *testing.T, req string, closeWrite bool) response {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		if closeWrite {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{status: resp.StatusCode, header: resp.Header, body: b}
	}
	head := "POST /v1/sandbox/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"

	// (a body shorter than its Content-Length followed by a half-close:
	// TestHalfClosedClientNeverGetsEmpty200)
	t.Run("Content-Length over the cap with Expect: 100-continue is refused unread", func(t *testing.T) {
		r := raw(t, head+"Expect: 100-continue\r\nContent-Length: 999999999\r\n\r\n", false)
		wantProblem(t, r, 413, "request-too-large", false, "16777216")
	})
	t.Run("unparseable Content-Length (net/http)", func(t *testing.T) {
		r := raw(t, head+"Content-Length: abc\r\n\r\n{}", false)
		if r.status != 400 {
			t.Fatalf("got %s, want net/http's 400", r)
		}
	})
	t.Run("headers over MAX_HEADER_BYTES (net/http, answered as a problem)", func(t *testing.T) {
		for _, n := range []int{40 << 10, 1<<20 + 4096} {
			r := raw(t, head+"X-Big: "+strings.Repeat("a", n)+"\r\nContent-Length: 2\r\n\r\n{}", false)
			p := wantProblem(t, r, http.StatusRequestHeaderFieldsTooLarge, "header-too-large", false, "maxHeaderBytes of 32768 bytes")
			if p["limit"] != "maxHeaderBytes" || p["limitValue"] != float64(32768) {
				t.Fatalf("limit %v=%v; %s", p["limit"], p["limitValue"], r)
			}
		}
	})
	t.Run("HTTP/1.0 without Host", func(t *testing.T) {
		body := `{"script":"1","inputJson":"null"}`
		r := raw(t, fmt.Sprintf("POST /v1/sandbox/evaluate HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body), false)
		rest, _, err := servicetest.SplitUsage("/v1/sandbox/evaluate", r.body)
		if err != nil {
			t.Fatal(err)
		}
		r.body = rest
		wantJSON(t, r, `{"ok":true,"value":1}`)
	})
	t.Run("a request target that is not a path (net/http)", func(t *testing.T) {
		r := raw(t, "GET * HTTP/1.1\r\nHost: x\r\n\r\n", false)
		if r.status >= 500 {
			t.Fatalf("got %s", r)
		}
	})
	wantJSON(t, c.post(routeSandbox, `{"script":"'still serving'","inputJson":"null"}`), `{"ok":true,"value":"still serving"}`)
}
