package handler_test

import (
	"os"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

// Keys are compared as JSON.parse compares them, as UTF-16 code units: the
// lone surrogates "\ud800" and "\ud801" are two keys, on both routes, and
// the script sees both; a key written twice is still refused.
func TestLoneSurrogateKeysAreDistinct(t *testing.T) {
	v := newEnv(t)
	const script = `Object.keys(input).map(k => k.charCodeAt(0))`
	ref := v.put(script)
	const distinct = `{"\ud800":1,"\ud801":2}`
	const twice = `{"\ud800":1,"\uD800":2}`

	wantBody(t, v.post("/v1/evaluations", `{"scriptRef":"`+ref+`","input":`+distinct+`}`), 200, `{"ok":true,"value":[55296,55297]}`)
	wantBody(t, v.post("/v1/sandbox/evaluate", `{"script":"`+script+`","inputJson":"{\"\\ud800\":1,\"\\ud801\":2}"}`), 200, `{"ok":true,"value":[55296,55297]}`)

	// The problem is api/testdata's golden document, byte for byte: the key
	// is named with its escape, at the second key's offset, and the
	// instance is the request's id.
	golden, err := os.ReadFile("../api/testdata/problem/duplicate-key.json")
	if err != nil {
		t.Fatal(err)
	}
	r := v.mustDo("POST", "/v1/evaluations", `{"scriptRef":"`+ref+`","input":`+twice+`}`, map[string]string{"X-Request-Id": "req-1"})
	if r.status != 400 || string(r.body) != string(golden) {
		t.Errorf("got %s\nwant %s", r, golden)
	}
	wantProblem(t, v.post("/v1/sandbox/evaluate", `{"script":"1","inputJson":"{\"\\ud800\":1,\"\\uD800\":2}"}`), 400, "duplicate-key", false, "inputJson", "twice")
}

// A backend's value is held to the same JSON policy on both routes: a key
// twice is a malformed outcome, not a value passed on.
func TestOutcomeValueHasNoDuplicateKeys(t *testing.T) {
	v := newEnv(t)
	wantProblem(t, v.post("/v1/sandbox/evaluate", map[string]any{"script": scriptDuplicateKeys, "inputJson": "null"}), 500, "malformed-outcome", false, "not JSON text")
	wantProblem(t, v.post("/v1/evaluations", map[string]any{"scriptRef": v.put(scriptDuplicateKeys)}), 500, "malformed-outcome", false)
}

// A script sent by value runs exactly as sent: a lone surrogate written as a
// JSON escape reaches the engine as that code unit (WTF-8), not as U+FFFD,
// and the logged hash is of the text that ran.
func TestScriptByValueRunsAsSent(t *testing.T) {
	v := newEnv(t)
	for _, tc := range []struct{ script, value string }{
		{`'\ud800'.charCodeAt(0)`, `55296`},
		{`'\udc00\ud800'.length`, `2`},
		{`'\ud83d\ude00'.codePointAt(0)`, `128512`},
		{`JSON.stringify('\ud800')`, `"\"\\ud800\""`},
	} {
		wantBody(t, v.post("/v1/sandbox/evaluate", `{"script":"`+tc.script+`","inputJson":"null"}`), 200, `{"ok":true,"value":`+tc.value+`}`)
	}
	// The hash in the log line is of the script's WTF-8 text, the bytes run.
	sent := "'\xed\xa0\x80'.charCodeAt(0)"
	want := contentref.RefOf([]byte(sent)).String()
	found := false
	for _, l := range v.logs.lines(t, "evaluation") {
		if l["scriptSha256"] == want {
			found = true
		}
	}
	if !found {
		t.Errorf("no log line names the script by %s, the hash of the text that ran", want)
	}
}
