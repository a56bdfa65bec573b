package security

import (
	"fmt"
	"strings"
	"testing"
)

// pollute changes everything a script can change in its realm, with the
// run's input as a marker, and leaves traps that would fire in a later run
// that shared the realm: getters that loop, a JSON.stringify that throws, a
// then that never settles.
const pollute = `
  const mark = input;
  globalThis.__mark = mark;
  Object.prototype.__polluted = mark;
  Object.defineProperty(Object.prototype, "toJSON", { get() { for (;;) {} }, configurable: true });
  Array.prototype.__polluted = mark;
  Array.prototype.push = function () { throw new Error("push polluted " + mark) };
  Function.prototype.call = function () { throw new Error("call polluted") };
  String.prototype.toString = () => "polluted";
  JSON.parse = () => mark;
  JSON.stringify = () => { throw new Error("stringify polluted") };
  Promise.prototype.then = function () { for (;;) {} };
  Error.prototype.toString = () => "polluted";
  RegExp.prototype.exec = () => null;
  Math.random = () => 4;
  Date.now = () => 0;
  console.log = () => { throw new Error("console polluted") };
  Symbol.for("__registry");
  Object.freeze(Object.prototype);
  Object.freeze(globalThis);
  "polluted " + mark`

// probe reports what of an earlier run it can see.
const probe = `
  const seen = [];
  if ("__mark" in globalThis) seen.push("global");
  if (Object.prototype.hasOwnProperty("__polluted")) seen.push("Object.prototype");
  if (Object.getOwnPropertyDescriptor(Object.prototype, "toJSON")) seen.push("toJSON getter");
  if ([].__polluted !== undefined) seen.push("Array.prototype");
  if (Array.prototype.push.toString().indexOf("native code") < 0) seen.push("push");
  if (Function.prototype.call.toString().indexOf("native code") < 0) seen.push("call");
  if (JSON.parse("1") !== 1) seen.push("JSON.parse");
  if (JSON.stringify.toString().indexOf("native code") < 0) seen.push("JSON.stringify");
  if (Promise.prototype.then.toString().indexOf("native code") < 0) seen.push("then");
  if (String(new Error("e")) !== "Error: e") seen.push("Error.prototype.toString");
  if (!/a/.test("a")) seen.push("RegExp");
  if (Math.random() === 4) seen.push("Math.random");
  if (Date.now() === 0) seen.push("Date.now");
  if (Object.isFrozen(Object.prototype)) seen.push("frozen Object.prototype");
  if (Object.isFrozen(globalThis)) seen.push("frozen global");
  if (Symbol.keyFor(Symbol.for("__registry")) !== "__registry") seen.push("symbol registry");
  console.log("probe ran");
  [seen, input]`

// Prototype pollution, frozen intrinsics and replaced built-ins in one run
// are invisible in the next: many runs, alternating routes, each polluting
// run followed by a probe.
func TestPollutionInvisibleInTheNextRun(t *testing.T) {
	s := shared(t)
	const rounds = 20
	for i := 0; i < rounds; i++ {
		rt := spiRoute
		if i%2 == 1 {
			rt = evaluations
		}
		q := req{script: pollute, input: fmt.Sprintf(`"secret-%d"`, i), wall: generous}
		check(t, q, s.do(t, rt, q), want{class: "ok", value: fmt.Sprintf(`"polluted secret-%d"`, i)})
		// the probe on the other route, then on the same one
		for _, prt := range []route{evaluations, spiRoute} {
			if i%2 == 1 {
				prt = map[route]route{spiRoute: evaluations, evaluations: spiRoute}[prt]
			}
			q := req{script: probe, wall: generous}
			check(t, q, s.do(t, prt, q), want{class: "ok", value: `[[],null]`})
		}
	}
}

// A run's input and console output never reach another run: the next run's
// input is its own, and its captured logs hold only what it printed.
func TestInputAndLogsDoNotCarryOver(t *testing.T) {
	s := shared(t)
	for i := 0; i < 8; i++ {
		secret := fmt.Sprintf("secret-input-%d", i)
		q := req{script: `console.log("printed " + input.s); for (let i = 0; i < 5000; i++) console.log("x".repeat(20)); input.s`,
			input: fmt.Sprintf(`{"s":%q}`, secret), logs: true, wall: generous}
		r := s.do(t, evaluations, q)
		check(t, q, r, want{class: "ok", value: fmt.Sprintf("%q", secret)})
		if r.logs == nil || !strings.HasPrefix(*r.logs, "printed "+secret) || !strings.HasSuffix(*r.logs, "[console output truncated at 64 KiB]\n") {
			t.Fatalf("logs of the printing run: %v", r)
		}
		q = req{script: `console.log("only this"); [input, typeof __mark]`, logs: true, wall: generous}
		r = s.do(t, evaluations, q)
		check(t, q, r, want{class: "ok", value: `[null,"undefined"]`})
		if r.logs == nil || *r.logs != "only this\n" {
			t.Fatalf("the next run's logs carry something over: %v", r)
		}
	}
}

// A script's runs after its first start from what its compile left, not
// from anything a run did: the same script, which looks for what an
// earlier run left and then pollutes everything it can, sees nothing of
// its own earlier runs, on both routes, however many times it runs.
func TestPollutionInvisibleToTheSameScriptsNextRun(t *testing.T) {
	s := shared(t)
	script := "const __probed = (() => {" + strings.Replace(probe, "[seen, input]", "return seen", 1) + "})();\n" +
		strings.Replace(pollute, `"polluted " + mark`, "", 1) +
		"\n(__probed.join() || \"nothing\") + \" seen by \" + mark" // a string: no toJSON is looked up
	for i := 0; i < 12; i++ {
		rt := spiRoute
		if i%2 == 1 {
			rt = evaluations
		}
		q := req{script: script, input: fmt.Sprintf(`"secret-%d"`, i), wall: generous}
		check(t, q, s.do(t, rt, q), want{class: "ok", value: fmt.Sprintf(`"nothing seen by secret-%d"`, i)})
	}
}
