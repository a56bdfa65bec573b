package handler_test

import (
	"fmt"
	"testing"
)

// A script's own value is never a failure of the service. A result may hold
// raw JSON text (JSON.rawJSON) that no ordinary value gives: a lone surrogate
// as a character, which is not UTF-8, or a number a double does not hold as
// written. Both routes answer the same typed outcome for it, the value being
// the text JSON.stringify writes for the ordinary value JSON.parse makes of
// the raw text (docs/spi.md, "Outcomes"), never a 500 malformed-outcome that
// a caller would retry as a broken service.
func TestScriptValueIsTypedOnBothRoutes(t *testing.T) {
	v := newEnv(t)
	threw := func(name, message string) [2]string {
		return [2]string{
			fmt.Sprintf(`{"ok":false,"kind":"threw","name":%q,"message":%q}`, name, message),
			fmt.Sprintf(`{"ok":false,"failure":{"channel":"scriptError","name":%q,"message":%q}}`, name, message),
		}
	}
	lazy := func(n int, element string) string {
		return fmt.Sprintf(`new Proxy([], {get: (t, k) => k === 'length' ? %d : %s})`, n, element)
	}
	for _, tc := range []struct {
		name, script string
		memoryBytes  int
		value        string    // the value on both routes, or "" for a failure
		failure      [2]string // the failure on each route: the SPI's, the effect's
	}{
		{name: "a lone surrogate as the result", script: `JSON.rawJSON('"\ud800"')`, value: `"\ud800"`},
		{name: "a lone surrogate in an element", script: `[1, JSON.rawJSON('"a\udc00b"')]`, value: `[1,"a\udc00b"]`},
		{name: "a lone surrogate in a member", script: `({'\ud800': JSON.rawJSON('"\udfff"')})`, value: `{"\ud800":"\udfff"}`},
		{name: "a lone surrogate through toJSON", script: `({toJSON() { return JSON.rawJSON('"\ud800"') }})`, value: `"\ud800"`},
		{name: "a lone surrogate through a replacer", script: `JSON.rawJSON(JSON.stringify([0], (k, x) => k === '0' ? JSON.rawJSON('"\ud800"') : x).slice(1, -1))`, value: `"\ud800"`},
		{name: "a lone surrogate as a promise's value", script: `Promise.resolve(JSON.rawJSON('"\ud800"'))`, value: `"\ud800"`},
		{name: "a pair split between a raw and an escaped half", script: `JSON.rawJSON('"\ud83d\\ude00"')`, value: "\"\U0001F600\""},
		{name: "escapes JSON.stringify does not write", script: `JSON.rawJSON('"\\u0041\\/"')`, value: `"A/"`},
		{name: "a number past the largest double", script: `JSON.rawJSON('1e1000')`, value: `null`},
		{name: "an exponent past the largest double", script: `[JSON.rawJSON('1E400'), JSON.rawJSON('-1e1000')]`, value: `[null,null]`},
		{name: "a number below the smallest double", script: `JSON.rawJSON('0.1e-400')`, value: `0`},
		{name: "negative zero", script: `JSON.rawJSON('-0')`, value: `0`},
		{name: "more digits than a double holds", script: `JSON.rawJSON('1.0000000000000000001')`, value: `1`},
		{name: "an integer past 21 digits", script: `JSON.rawJSON('100000000000000000000000')`, value: `1e+23`},
		{name: "a million digits past the largest double", script: `JSON.rawJSON('1' + '0'.repeat(1e6))`, value: `null`},
		{name: "a million digits", script: `JSON.rawJSON('0.' + '1'.repeat(1e6))`, value: `0.1111111111111111`},
		{name: "raw text of an object", script: `JSON.rawJSON('{"a":1,"a":2}')`, failure: threw("SyntaxError", "invalid rawJSON string")},
		{name: "a key twice through a proxy", script: `new Proxy({}, {ownKeys: () => ['a', 'a'], getOwnPropertyDescriptor: () => ({value: 1, enumerable: true, configurable: true})})`,
			failure: threw("TypeError", "proxy: duplicate property")},
		{name: "raw leaves nested past the depth bound", script: `let v = JSON.rawJSON('"\ud800"'); for (let i = 0; i < 10000; i++) v = [v]; v`,
			failure: threw("RangeError", "the result nests deeper than 9999 levels: the answer around it would be deeper than the 10000 levels JSON readers accept")},
		// 300,000 × "1e20" is 1.5 MB of raw text and 6.6 MB as the ordinary
		// value writes it: more than the run's memory, as JSON.stringify of
		// 300,000 ordinary 1e20s is.
		{name: "an ordinary value longer than the memory", script: lazy(300000, `JSON.rawJSON('1e20')`), memoryBytes: 4 << 20,
			failure: [2]string{`{"ok":false,"kind":"limit","limit":"memory"}`, `{"ok":false,"failure":{"channel":"limitExceeded","kind":"memory"}}`}},
		{name: "the same with ordinary numbers", script: lazy(300000, `1e20`), memoryBytes: 4 << 20,
			failure: [2]string{`{"ok":false,"kind":"limit","limit":"memory"}`, `{"ok":false,"failure":{"channel":"limitExceeded","kind":"memory"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sandbox := map[string]any{"script": tc.script, "inputJson": "null"}
			evaluation := map[string]any{"scriptRef": v.put(tc.script)}
			if tc.memoryBytes != 0 {
				sandbox["limits"] = map[string]any{"memoryBytes": tc.memoryBytes}
				evaluation["limits"] = map[string]any{"memoryBytes": tc.memoryBytes}
			}
			want := tc.failure
			if tc.value != "" {
				want = [2]string{`{"ok":true,"value":` + tc.value + `}`, `{"ok":true,"value":` + tc.value + `}`}
			}
			wantBody(t, v.post("/v1/sandbox/evaluate", sandbox), 200, want[0])
			wantBody(t, v.post("/v1/evaluations", evaluation), 200, want[1])
		})
	}
}
