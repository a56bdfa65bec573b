package quickjs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// JSON.stringify copies a JSON.rawJSON text as it is, so a result can hold
// text no ordinary value gives: a lone surrogate as a character (not UTF-8),
// a number a double does not hold as written, escapes JSON.stringify never
// writes. The engine's value is the text JSON.stringify writes for the
// ordinary value JSON.parse makes of the raw text, wherever the raw text is
// (the result, an element, a member, a toJSON's return, a promise's value):
// the outcome of JSON.rawJSON(t) is that of JSON.parse(t).
func TestRawJSONResultIsTheOrdinaryValue(t *testing.T) {
	e := shared()
	for _, tc := range []struct {
		name, text string // text: a JavaScript expression for the raw JSON text
		want       string
	}{
		{"lone high surrogate", `'"\ud800"'`, `"\ud800"`},
		{"lone low surrogate amid text", `'"a\udc00b"'`, `"a\udc00b"`},
		{"lone surrogates, low then high", `'"\udc00\ud800"'`, `"\udc00\ud800"`},
		{"raw high, escaped low: one character", `'"\ud83d\\ude00"'`, "\"\U0001F600\""},
		{"escaped high, raw low: one character", `'"\\ud83d\ude00"'`, "\"\U0001F600\""},
		{"escapes JSON.stringify does not write", `'"\\u0041\\/\\u00e9\\uD800"'`, `"A/é\ud800"`},
		{"past the largest double", `'1e1000'`, `null`},
		{"past the largest double, negative", `'-1E400'`, `null`},
		{"below the smallest double", `'0.1e-400'`, `0`},
		{"negative zero", `'-0'`, `0`},
		{"more digits than a double holds", `'1.0000000000000000001'`, `1`},
		{"a trailing zero", `'1.50'`, `1.5`},
		{"an exponent Number::toString writes out", `'1e2'`, `100`},
		{"an integer Number::toString writes with an exponent", `'100000000000000000000000'`, `1e+23`},
		{"a million digits past the largest double", `'1' + '0'.repeat(1e6)`, `null`},
		{"a million digits", `'0.' + '1'.repeat(1e6)`, `0.1111111111111111`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, wrap := range []struct{ script, want string }{
				{`%s`, tc.want},
				{`[1, %s, "x"]`, `[1,` + tc.want + `,"x"]`},
				{`({a: %s})`, `{"a":` + tc.want + `}`},
				{`({toJSON() { return %s }})`, tc.want},
				{`Promise.resolve(%s)`, tc.want},
				{`({then(f) { f([%s]) }})`, `[` + tc.want + `]`},
			} {
				raw := eval(t, e, fmt.Sprintf(wrap.script, "JSON.rawJSON("+tc.text+")"), "null", limits)
				if want := spi.OK([]byte(wrap.want)); !sameOutcome(raw, want) {
					t.Errorf("%s: got %s\nwant %s", wrap.script, describe(raw), describe(want))
				}
				parsed := eval(t, e, fmt.Sprintf(wrap.script, "JSON.parse("+tc.text+")"), "null", limits)
				if !sameOutcome(raw, parsed) {
					t.Errorf("%s: JSON.rawJSON gives %s, JSON.parse %s", wrap.script, describe(raw), describe(parsed))
				}
			}
		})
	}
}

// What JSON.rawJSON refuses, and what the result cannot hold, stays the
// script's own typed outcome.
func TestRawJSONRefusals(t *testing.T) {
	e := shared()
	invalid := spi.Threw(str("SyntaxError"), "invalid rawJSON string")
	deep := spi.Threw(str("RangeError"), "the result nests deeper than 9999 levels: the answer around it would be deeper than the 10000 levels JSON readers accept")
	for _, tc := range []struct {
		name, script string
		want         spi.Outcome
	}{
		// Only a primitive's text is raw JSON, so raw text brings no object,
		// no array, no key twice and no nesting.
		{"an object", `JSON.rawJSON('{"a":1,"a":2}')`, invalid},
		{"an array", `JSON.rawJSON('[1]')`, invalid},
		{"whitespace around", `JSON.rawJSON(' 1')`, invalid},
		{"a number JSON does not have", `JSON.rawJSON('+1')`, invalid},
		{"a control character", `JSON.rawJSON('"\u0001"')`, invalid},
		{"a key twice through a proxy", `new Proxy({}, {ownKeys: () => ['a', 'a'], getOwnPropertyDescriptor: () => ({value: 1, enumerable: true, configurable: true})})`,
			spi.Threw(str("TypeError"), "proxy: duplicate property")},
		{"raw leaves at the depth limit", `let v = JSON.rawJSON('"\ud800"'); for (let i = 0; i < 9999; i++) v = [v]; v`,
			spi.OK([]byte(strings.Repeat("[", 9999) + `"\ud800"` + strings.Repeat("]", 9999)))},
		{"raw leaves over the depth limit", `let v = JSON.rawJSON('"\ud800"'); for (let i = 0; i < 10000; i++) v = [v]; v`, deep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, e, tc.script, "null", limits); !sameOutcome(got, tc.want) {
				t.Fatalf("got  %s\nwant %s", describe(got), describe(tc.want))
			}
		})
	}
}

// The ordinary value's text can be longer than the raw text (1e20 is 21
// bytes where "1e20" is 4): longer than the run's memory, it is the memory
// limit, as JSON.stringify running out of memory writing the ordinary value
// is, and so never more than a run can make (spi.MaxValueBytes). An array
// whose elements a proxy makes on demand holds one raw value many times.
func TestRawJSONValueOverTheMemory(t *testing.T) {
	e := shared()
	l := spi.Limits{WallClock: limits.WallClock, MemoryBytes: 4 << 20}
	lazy := `new Proxy([], {get: (t, k) => k === 'length' ? %d : %s})`
	for _, tc := range []struct {
		n    int
		want spi.Outcome
	}{
		{100000, spi.OK([]byte("[" + strings.TrimSuffix(strings.Repeat("100000000000000000000,", 100000), ",") + "]"))},
		{300000, spi.LimitHit(spi.LimitMemory)},
	} {
		raw := eval(t, e, fmt.Sprintf(lazy, tc.n, `JSON.rawJSON('1e20')`), "null", l)
		if !sameOutcome(raw, tc.want) {
			t.Errorf("%d raw values: got %s\nwant %s", tc.n, describe(raw), describe(tc.want))
		}
		if ordinary := eval(t, e, fmt.Sprintf(lazy, tc.n, `1e20`), "null", l); !sameOutcome(ordinary, tc.want) {
			t.Errorf("%d ordinary values: got %s\nwant %s", tc.n, describe(ordinary), describe(tc.want))
		}
	}
}
