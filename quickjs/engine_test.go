package quickjs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// limits are the runs' of the cases that end by themselves, by a throw or
// by memory: their wall clock only catches a hang, long enough that a busy
// machine (the race detector, other tests, CPU hogs) never meets it. A case
// about the wall clock sets its own.
var limits = spi.Limits{WallClock: 30 * time.Second, MemoryBytes: 32 << 20}

func newEngine(t testing.TB, opts ...quickjs.Option) *quickjs.Engine {
	t.Helper()
	e, err := quickjs.New(context.Background(), quickjs.CachedForTests(opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	if err := e.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// shared is one warm engine for the tests that need no special options.
var shared = sync.OnceValue(func() *quickjs.Engine {
	e, err := quickjs.New(context.Background(), quickjs.CachedForTests()...)
	if err != nil {
		panic(err)
	}
	if err := e.Warm(context.Background()); err != nil {
		panic(err)
	}
	return e
})

func eval(t testing.TB, e *quickjs.Engine, script, input string, l spi.Limits) spi.Outcome {
	t.Helper()
	out, err := e.Evaluate(context.Background(), spi.Request{Script: script, InputJSON: input, Limits: l})
	if err != nil {
		t.Fatalf("Evaluate(%.60q): %v", script, err)
	}
	return out
}

func str(s string) *string { return &s }

func describe(o spi.Outcome) string {
	name := "<none>"
	if o.Name != nil {
		name = fmt.Sprintf("%q", *o.Name)
	}
	return fmt.Sprintf("{ok:%v value:%.200s kind:%q limit:%q name:%s message:%.200q}", o.OK, o.Value, o.Kind, o.Limit, name, o.Message)
}

// The embedded engine is the one its record names: sandbox.wasm, or with
// the build tag checkedengine, sandbox-checked.wasm.
func TestEmbeddedWasmMatchesRecord(t *testing.T) {
	name := "sandbox.wasm"
	if quickjs.CheckedHeap {
		name = "sandbox-checked.wasm"
	}
	rec, err := os.ReadFile(name + ".sha256")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(rec))
	if len(f) != 2 || f[1] != name {
		t.Fatalf("%s.sha256 = %q, want '<hex>  %s'", name, rec, name)
	}
	if got := quickjs.WasmSHA256(); got != f[0] {
		t.Fatalf("embedded wasm sha256 %s, record says %s", got, f[0])
	}
	// the version the service reports is the one build.sh builds
	if want := pinned(t, "QUICKJS_VERSION"); quickjs.EngineVersion != want {
		t.Fatalf("EngineVersion = %q, quickjs.pin says %q", quickjs.EngineVersion, want)
	}
}

func TestCapabilities(t *testing.T) {
	got := shared().Capabilities()
	want := spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockSoft, Memory: true, CPU: true, FreshPerRun: true}
	if got != want {
		t.Fatalf("Capabilities() = %+v, want %+v", got, want)
	}
	// The wall clock is hard only when a run stuck in native code is stopped.
	for _, o := range []quickjs.Option{quickjs.WithProcessKill(true), quickjs.WithHardKill(quickjs.HardKillForTests, time.Second)} {
		e, err := quickjs.New(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if c := e.Capabilities(); c.WallClock != spi.WallClockHard {
			t.Errorf("wall clock %q, want hard", c.WallClock)
		}
		_ = e.Close(context.Background())
	}
	if e, _ := quickjs.New(context.Background(), quickjs.WithCPUBudget(0)); e.Capabilities().CPU {
		t.Error("cpu declared without a budget")
	}
}

func TestOutcomes(t *testing.T) {
	e := shared()
	cases := []struct {
		name, script, input string
		want                spi.Outcome
	}{
		{"echo", "input", `{"a":[1,"x",null]}`, spi.OK([]byte(`{"a":[1,"x",null]}`))},
		{"reshape", "input.items.filter(i => i.ok).map(i => i.id)", `{"items":[{"id":1,"ok":true},{"id":2,"ok":false}]}`, spi.OK([]byte(`[1]`))},
		{"undefined is null", "undefined", "1", spi.OK([]byte(`null`))},
		{"empty script is null", "", "1", spi.OK([]byte(`null`))},
		{"function is null", "(function(){})", "1", spi.OK([]byte(`null`))},
		{"null input", "input === null", "null", spi.OK([]byte(`true`))},
		{"throw Error", "throw new Error('boom')", "null", spi.Threw(str("Error"), "boom")},
		{"throw TypeError", "null.x", "null", spi.Threw(str("TypeError"), "cannot read property 'x' of null")},
		{"throw 42", "throw 42", "null", spi.Threw(nil, "42")},
		{"throw null", "throw null", "null", spi.Threw(nil, "null")},
		{"throw string", "throw 'plain'", "null", spi.Threw(nil, "plain")},
		{"throw object", "throw {code: 7}", "null", spi.Threw(nil, "[object Object]")},
		{"throw object with message", "throw {name: 'Custom', message: 'm'}", "null", spi.Threw(str("Custom"), "m")},
		{"non-string name", "throw {name: 5, message: 'm'}", "null", spi.Threw(nil, "m")},
		{"throwing getters", "throw {get name() { throw 1 }, get message() { throw 2 }, toString() { return 'ts' }}", "null", spi.Threw(nil, "ts")},
		{"throwing everything", "throw {get name() { throw 1 }, get message() { throw 2 }, toString() { throw 3 }}", "null",
			spi.Threw(nil, "thrown value could not be converted to a string")},
		{"throw symbol", "throw Symbol('s')", "null", spi.Threw(nil, "Symbol(s)")},
		{"syntax error", "let = ;", "null", spi.Threw(str("SyntaxError"), "unexpected token in expression: ';'")},
		{"reference error", "fetch('http://example.com')", "null", spi.Threw(str("ReferenceError"), "'fetch' is not defined")},
		{"BigInt result", "1n", "null", spi.Threw(str("TypeError"), "Do not know how to serialize a BigInt")},
		{"cyclic result", "const o = {}; o.o = o; o", "null", spi.Threw(str("TypeError"), "circular reference")},
		{"stack overflow", "function f() { return f() + 1 } f()", "null", spi.Threw(str("InternalError"), "stack overflow")},
		{"nested parse", `JSON.parse("[".repeat(100000))`, "null", spi.Threw(str("SyntaxError"), "stack overflow")},
		// JSON.stringify is iterative in QuickJS: deep nesting is slow (quadratic), not an overflow.
		{"nested stringify", `let a = []; for (let i = 0; i < 5000; i++) a = [a]; JSON.stringify(a).length`, "null", spi.OK([]byte("10002"))},
		{"nested result", `let a = []; for (let i = 0; i < 5000; i++) a = [a]; a`, "null", spi.OK([]byte(strings.Repeat("[", 5001) + strings.Repeat("]", 5001)))},
		{"result at the depth limit", `let a = 1; for (let i = 0; i < 9999; i++) a = [a]; a`, "null",
			spi.OK([]byte(strings.Repeat("[", 9999) + "1" + strings.Repeat("]", 9999)))},
		{"result over the depth limit", `let a = 1; for (let i = 0; i < 10000; i++) a = [a]; a`, "null",
			spi.Threw(str("RangeError"), "the result nests deeper than 9999 levels: the answer around it would be deeper than the 10000 levels JSON readers accept")},
		{"strings do not count as nesting", `"[".repeat(20000)`, "null", spi.OK([]byte(`"` + strings.Repeat("[", 20000) + `"`))},
		{"nested regexp", `new RegExp("(?:".repeat(100000) + ")".repeat(100000)).test("")`, "null", spi.Threw(str("SyntaxError"), "stack overflow")},
		{"forged out of memory", "throw new InternalError('out of memory')", "null", spi.LimitHit(spi.LimitMemory)},
		{"forged elsewhere is a script error", "throw new Error('out of memory')", "null", spi.Threw(str("Error"), "out of memory")},
		{"forged lookalike object", "throw {name: 'InternalError', message: 'out of memory'}", "null", spi.Threw(str("InternalError"), "out of memory")},
		{"interrupted text is a script error", "throw new InternalError('interrupted')", "null", spi.Threw(str("InternalError"), "interrupted")},
		{"allocation bomb", "const a = []; while (true) a.push('x'.repeat(1000) + a.length)", "null", spi.LimitHit(spi.LimitMemory)},
		{"bomb caught and rethrown", "try { const a = []; while (true) a.push({x: a.length}) } catch (e) { throw e }", "null", spi.LimitHit(spi.LimitMemory)},
		{"bomb caught, other error", "try { const a = []; while (true) a.push({x: a.length}) } catch (e) { throw new Error('caught ' + e.message) }", "null", spi.LimitHit(spi.LimitMemory)},
		{"typed array over the cap", "new Uint8Array(64 << 20).length", "null", spi.LimitHit(spi.LimitMemory)},
		{"string repeat over the cap", "'x'.repeat(40 << 20).length", "null", spi.LimitHit(spi.LimitMemory)},
		{"array size near the limit", "new Array(2 ** 32 - 1).fill(0).length", "null", spi.LimitHit(spi.LimitMemory)},
		{"input too large", "input.length", "[" + strings.Repeat("{},", 2<<20) + "{}]", spi.InputTooLarge()},
		{"input longer than the limit", "1", `"` + strings.Repeat("ab", 17<<20) + `"`, spi.InputTooLarge()},
		{"input nested too deep", "1", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), spi.InputTooLarge()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, e, tc.script, tc.input, limits); !sameOutcome(got, tc.want) {
				t.Fatalf("got  %s\nwant %s", describe(got), describe(tc.want))
			}
		})
	}
}

func sameOutcome(got, want spi.Outcome) bool {
	return got.OK == want.OK && string(got.Value) == string(want.Value) && got.Kind == want.Kind && got.Limit == want.Limit &&
		got.Message == want.Message && (got.Name == nil) == (want.Name == nil) && (got.Name == nil || *got.Name == *want.Name)
}

// Describing a thrown value runs script code (the name and message getters,
// toString, Symbol.toPrimitive, proxy traps, Symbol.prototype.description),
// and so does serialising the completion value (toJSON, getters). That code
// runs under the run's limits, and a limit it hits is the run's outcome, as
// in the script body: never a script error made of what description was
// left. The memory and runaway cases have a generous wall clock, so that
// only the limit under test can end them.
func TestLimitsWhileDescribingOrSerialising(t *testing.T) {
	const bomb = "let a = []; for (;;) a.push(new Array(1e5).fill(1))"
	const loop = "for (;;) {}"
	budget := newEngine(t, quickjs.WithCPUBudget(200), quickjs.WithPoolSize(0))
	generous := spi.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20}
	short := spi.Limits{WallClock: 300 * time.Millisecond, MemoryBytes: 16 << 20}
	memory := spi.LimitHit(spi.LimitMemory)
	cpu := spi.LimitHit(spi.LimitCPU)
	wallClock := spi.LimitHit(spi.LimitWallClock)
	cases := []struct {
		name, script string
		e            *quickjs.Engine
		l            spi.Limits
		want         spi.Outcome
	}{
		// The memory limit.
		{"bomb in the message getter", "throw {get message(){let a=[];for(;;)a.push(new Array(1e5).fill(1))}}", shared(), generous, memory},
		{"bomb in the name getter", "throw { get name() { " + bomb + " }, message: 'm' }", shared(), generous, memory},
		{"bomb in toString", "throw { toString() { " + bomb + " } }", shared(), generous, memory},
		{"bomb in Symbol.toPrimitive", "throw { [Symbol.toPrimitive]() { " + bomb + " } }", shared(), generous, memory},
		{"bomb in a proxy trap", "throw new Proxy({}, { get() { " + bomb + " } })", shared(), generous, memory},
		{"bomb in the message getter of an Error", "const e = new TypeError('t'); Object.defineProperty(e, 'message', { get() { " + bomb + " } }); throw e", shared(), generous, memory},
		{"bomb in the description of a thrown symbol", "Object.defineProperty(Symbol.prototype, 'description', { get() { " + bomb + " } }); throw Symbol('s')", shared(), generous, memory},
		{"bomb caught inside the getter", "throw { get message() { try { " + bomb + " } catch (e) { return 'caught' } } }", shared(), generous, memory},
		{"bomb in toJSON", "({ toJSON() { " + bomb + " } })", shared(), generous, memory},
		{"bomb in a getter of the result", "({ get x() { " + bomb + " } })", shared(), generous, memory},
		{"bomb in the message getter of a value toJSON throws", "({ toJSON() { throw { get message() { " + bomb + " } } } })", shared(), generous, memory},
		// As in the body, a toJSON that catches the error and returns normally succeeds.
		{"bomb caught in toJSON, recovered from", "({ toJSON() { try { " + bomb + " } catch (e) { return 'recovered' } } })", shared(), generous, spi.OK([]byte(`"recovered"`))},

		// The CPU budget.
		{"loop in the message getter, cpu", "throw { get message() { " + loop + " } }", budget, generous, cpu},
		{"loop in the name getter, cpu", "throw { get name() { " + loop + " }, message: 'm' }", budget, generous, cpu},
		{"loop in toString, cpu", "throw { toString() { " + loop + " } }", budget, generous, cpu},
		{"loop in a proxy trap, cpu", "throw new Proxy({}, { get() { " + loop + " } })", budget, generous, cpu},
		{"loop in the message getter of a value toJSON throws, cpu", "({ toJSON() { throw { get message() { " + loop + " } } } })", budget, generous, cpu},
		{"recursion retried after each stack overflow in the getter, cpu", "throw { get message() { function f() { try { return f() } catch (e) { return f() } } return f() } }", budget, generous, cpu},

		// The wall clock.
		{"loop in the name getter, wall clock", "throw { get name() { " + loop + " }, message: 'm' }", shared(), short, wallClock},
		{"loop in toString, wall clock", "throw { toString() { " + loop + " } }", shared(), short, wallClock},
		{"loop in Symbol.toPrimitive, wall clock", "throw { [Symbol.toPrimitive]() { " + loop + " } }", shared(), short, wallClock},

		// No limit: the description is the script's, getters that throw fall back.
		{"getters returning strings", "throw { get name() { return 'Custom' }, get message() { return 'from a getter' } }", shared(), generous, spi.Threw(str("Custom"), "from a getter")},
		{"message getter of an Error", "const e = new TypeError('t'); Object.defineProperty(e, 'message', { get() { return 'g' } }); throw e", shared(), generous, spi.Threw(str("TypeError"), "g")},
		{"message getter that throws", "throw { name: 'N', get message() { throw new Error('inner') } }", shared(), generous, spi.Threw(str("N"), "[object Object]")},
		{"message getter that throws, with toString", "throw { get message() { throw new Error('inner') }, toString() { return 'ts' } }", shared(), generous, spi.Threw(nil, "ts")},
		{"stack overflow in the message getter", "throw { get message() { function f() { return f() } return f() }, toString() { return 'ts' } }", shared(), generous, spi.Threw(nil, "ts")},
		{"proxy with a trap that throws", "throw new Proxy({}, { get() { throw 1 } })", shared(), generous, spi.Threw(nil, "thrown value could not be converted to a string")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, tc.e, tc.script, "null", tc.l); !sameOutcome(got, tc.want) {
				t.Fatalf("got  %s\nwant %s", describe(got), describe(tc.want))
			}
		})
	}
}

func TestRichValueRoundTrip(t *testing.T) {
	deep := strings.Repeat("[", 1000) + "1" + strings.Repeat("]", 1000)
	input := `{"unicode":"héllo wörld ✓ 𝄞 日本","escapes":"quote\" backslash\\ nl\n tab\t nul\u0000 ctl\u001f","lone":"\ud800x\udfff",` +
		`"ints":[2147483647,2147483648,-2147483649,9007199254740991,9007199254740993,18446744073709551616],"negzero":-0,` +
		`"floats":[0.1,1e300,-1.5e-300],"deep":` + deep + `}`
	out := eval(t, shared(), "input", input, limits)
	if !out.OK {
		t.Fatalf("rich value failed: %s", describe(out))
	}
	var got, want map[string]any
	if err := json.Unmarshal(out.Value, &got); err != nil {
		t.Fatalf("value is not JSON: %v\n%s", err, out.Value)
	}
	_ = json.Unmarshal([]byte(input), &want)
	for _, k := range []string{"unicode", "escapes", "floats", "deep"} {
		if fmt.Sprint(got[k]) != fmt.Sprint(want[k]) {
			t.Errorf("%s: got %v, want %v", k, got[k], want[k])
		}
	}
	// Lone surrogates are escaped, never turned into invalid UTF-8.
	if !strings.Contains(string(out.Value), `"lone":"\ud800x\udfff"`) {
		t.Errorf("lone surrogates not preserved as escapes: %s", out.Value)
	}
	// Integers are IEEE doubles in JavaScript: exact to 2^53, rounded beyond.
	if !strings.Contains(string(out.Value), `"ints":[2147483647,2147483648,-2147483649,9007199254740991,9007199254740992,18446744073709552000]`) {
		t.Errorf("integers: %s", out.Value)
	}
	// JSON has no -0: JSON.stringify(-0) is 0, but the script sees -0.
	if neg := eval(t, shared(), "Object.is(input.negzero, -0) && JSON.stringify(input.negzero)", input, limits); string(neg.Value) != `"0"` {
		t.Errorf("-0: %s", describe(neg))
	}
}

func TestNoEscape(t *testing.T) {
	e := shared()
	forbidden := []string{"process", "require", "fetch", "XMLHttpRequest", "WebSocket", "Deno", "Bun", "WebAssembly",
		"SharedArrayBuffer", "Atomics", "std", "os", "print", "scriptArgs", "module", "exports", "setTimeout", "setInterval", "importScripts"}
	probes := map[string]string{
		"constructor chain": `this.constructor.constructor("return this")()`,
		"Function":          `Function("return this")()`,
		"indirect eval":     `(0, eval)("this")`,
		"globalThis":        `globalThis`,
		"async function":    `(async function(){}).constructor("return this")()`,
		"generator":         `(function*(){}).constructor("return this")().next().value`,
	}
	for name, expr := range probes {
		script := fmt.Sprintf(`const g = %s; const names = %q.split(","); names.filter(n => n in g || typeof g[n] !== "undefined")`, expr, strings.Join(forbidden, ","))
		out := eval(t, e, script, "null", limits)
		if name == "generator" { // returns undefined from next().value: same global, nothing found
			out = eval(t, e, fmt.Sprintf(`const names = %q.split(","); const g = (function*(){}).constructor("yield this")().next().value; names.filter(n => n in g)`, strings.Join(forbidden, ",")), "null", limits)
		}
		if !out.OK || string(out.Value) != "[]" {
			t.Errorf("%s reaches: %s", name, describe(out))
		}
	}
	for _, s := range []string{"typeof require", "typeof process", "typeof fetch", "typeof WebAssembly", "typeof SharedArrayBuffer", "typeof Atomics"} {
		if out := eval(t, e, s, "null", limits); string(out.Value) != `"undefined"` {
			t.Errorf("%s = %s", s, describe(out))
		}
	}
	// import() has no loader: its job rejects it, never with a module.
	out := eval(t, e, `const r = { r: "pending" }; import("os").then(() => { r.r = "loaded" }, () => { r.r = "rejected" }); r`, "null", limits)
	if string(out.Value) != `{"r":"rejected"}` {
		t.Errorf("import(): %s", describe(out))
	}
	if out := eval(t, e, `import * as os from "os"`, "null", limits); out.Kind != spi.KindThrew {
		t.Errorf("static import: %s", describe(out))
	}
}

// The guest's global scope holds ECMAScript built-ins, QuickJS's
// InternalError, and our input and console: nothing else.
func TestGlobalScope(t *testing.T) {
	out := eval(t, shared(), "Object.getOwnPropertyNames(globalThis).sort()", "null", limits)
	var names []string
	if err := json.Unmarshal(out.Value, &names); err != nil {
		t.Fatal(describe(out))
	}
	allowed := map[string]bool{}
	for _, n := range strings.Fields(`AggregateError Array ArrayBuffer BigInt BigInt64Array BigUint64Array Boolean DataView Date Error
		EvalError FinalizationRegistry Float16Array Float32Array Float64Array Function Infinity Int16Array Int32Array Int8Array
		InternalError Iterator JSON Map Math NaN Number Object Promise Proxy RangeError ReferenceError Reflect RegExp Set String
		Symbol SyntaxError TypeError URIError Uint16Array Uint32Array Uint8Array Uint8ClampedArray WeakMap WeakRef WeakSet
		decodeURI decodeURIComponent encodeURI encodeURIComponent escape eval globalThis isFinite isNaN parseFloat parseInt
		undefined unescape console input`) {
		allowed[n] = true
	}
	for _, n := range names {
		if !allowed[n] {
			t.Errorf("unexpected global %q", n)
		}
	}
	if len(names) < 40 {
		t.Errorf("suspiciously few globals: %v", names)
	}
}

// Bytecode is never accepted: the shim only compiles source text.
func TestBytecodeRejected(t *testing.T) {
	// The first bytes of a QuickJS bytecode object (BC_VERSION then atoms).
	out := eval(t, shared(), "\x05\x02\x02a\x02b", "null", limits)
	if out.Kind != spi.KindThrew || out.Name == nil || *out.Name != "SyntaxError" {
		t.Fatalf("bytecode-like input: %s", describe(out))
	}
}

func TestRunawayLoop(t *testing.T) {
	t.Run("wall clock", func(t *testing.T) {
		start := time.Now()
		out := eval(t, shared(), "while (true) {}", "null", spi.Limits{WallClock: 300 * time.Millisecond, MemoryBytes: 16 << 20})
		if out.Kind != spi.KindLimit || out.Limit != spi.LimitWallClock {
			t.Fatalf("got %s", describe(out))
		}
		if d := time.Since(start); d > 300*time.Millisecond+quickjs.DefaultHardKillGrace {
			t.Fatalf("stopped after %v", d)
		}
	})
	t.Run("cpu budget", func(t *testing.T) {
		e := newEngine(t, quickjs.WithCPUBudget(200), quickjs.WithPoolSize(0))
		out := eval(t, e, "while (true) {}", "null", spi.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20})
		if out.Kind != spi.KindLimit || out.Limit != spi.LimitCPU {
			t.Fatalf("got %s", describe(out))
		}
		// Counted in operations, the budget is deterministic.
		r1, _ := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: "let i = 0; while (true) i++", InputJSON: "1", Limits: limits}, CaptureLogs: false})
		r2, _ := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: "let i = 0; while (true) i++", InputJSON: "1", Limits: limits}, CaptureLogs: false})
		if r1.Usage.CPUBudgetUsed != 201 || r2.Usage.CPUBudgetUsed != 201 {
			t.Fatalf("polls %d and %d, want 201 each", r1.Usage.CPUBudgetUsed, r2.Usage.CPUBudgetUsed)
		}
	})
	t.Run("caught interrupt stays a kill", func(t *testing.T) {
		out := eval(t, shared(), "for (;;) { try { while (true) {} } catch (e) {} }", "null", spi.Limits{WallClock: 200 * time.Millisecond, MemoryBytes: 16 << 20})
		if out.Kind != spi.KindLimit || out.Limit != spi.LimitWallClock {
			t.Fatalf("got %s", describe(out))
		}
	})
	t.Run("catastrophic regexp", func(t *testing.T) {
		out := eval(t, shared(), `/^(a+)+$/.test("a".repeat(40) + "b")`, "null", spi.Limits{WallClock: 300 * time.Millisecond, MemoryBytes: 16 << 20})
		if out.Kind != spi.KindLimit || out.Limit != spi.LimitWallClock {
			t.Fatalf("got %s", describe(out))
		}
	})
	t.Run("getter on the thrown value loops", func(t *testing.T) {
		out := eval(t, shared(), "throw { get message() { while (true) {} } }", "null", spi.Limits{WallClock: 200 * time.Millisecond, MemoryBytes: 16 << 20})
		if out.Kind != spi.KindLimit || out.Limit != spi.LimitWallClock {
			t.Fatalf("got %s", describe(out))
		}
	})
}

// No value after the deadline (docs/spi.md, "Timing"): a run that overruns
// its wall clock inside one native builtin and ends on its own within the
// hard kill's grace answers the wall-clock limit, with its value or with
// its exception alike; given a wall clock it ends within, the same run
// keeps its value. The kit's wall clock for it is far below what the
// search takes on any machine, and a grace of a minute far above it on a
// busy one, so the run ends between the two.
func TestNoValueAfterTheDeadline(t *testing.T) {
	// a tenth of a second inside one builtin, where QuickJS never calls its
	// interrupt handler; then -1
	nativeOverrun := conformance.JavaScriptFixtures().NativeOverrun
	var stuck atomic.Int32
	e := newEngine(t, quickjs.WithHardKill(quickjs.HardKillWatchdog, time.Minute),
		quickjs.WithOnStuck(func(quickjs.StuckRun) { stuck.Add(1) }))
	for _, script := range []string{nativeOverrun, nativeOverrun + "; throw new Error('late')"} {
		out := eval(t, e, script, "null", spi.Limits{WallClock: conformance.OverrunWallClock, MemoryBytes: 16 << 20})
		if out.Kind != spi.KindLimit || out.Limit != spi.LimitWallClock {
			t.Errorf("%s, past its wall clock: got %s, want limit wallClock", script, describe(out))
		}
	}
	if n := stuck.Load(); n != 0 {
		t.Fatalf("the watchdog abandoned %d run(s): the runs did not end on their own within the grace", n)
	}
	if out := eval(t, e, nativeOverrun, "null", spi.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20}); !out.OK || string(out.Value) != "-1" {
		t.Errorf("within its wall clock: got %s, want the value -1", describe(out))
	}
}

func TestAllocationBombStoppedFast(t *testing.T) {
	start := time.Now()
	out := eval(t, shared(), "const a = []; while (true) a.push(new Array(1000).fill(a.length))", "null", spi.Limits{WallClock: 30 * time.Second, MemoryBytes: 16 << 20})
	if out.Kind != spi.KindLimit || out.Limit != spi.LimitMemory {
		t.Fatalf("got %s", describe(out))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("memory kill took %v", d)
	}
}

func TestConsole(t *testing.T) {
	e := shared()
	r, err := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{
		Script:    `console.log("a", 1, {b: [2]}, null, undefined); console.info("i"); console.warn("w"); console.error("e"); "v"`,
		InputJSON: "null", Limits: limits}, CaptureLogs: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "a 1 {\"b\":[2]} null undefined\ni\n[warn] w\n[error] e\n"; r.Logs != want {
		t.Fatalf("logs %q, want %q", r.Logs, want)
	}
	if string(r.Outcome.Value) != `"v"` {
		t.Fatalf("value mixed with logs: %s", describe(r.Outcome))
	}
	r, _ = e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: `for (let i = 0; i < 10000; i++) console.log("é".repeat(50)); 1`, InputJSON: "null", Limits: limits}, CaptureLogs: true})
	if len(r.Logs) > 64<<10 || !strings.HasSuffix(r.Logs, "[console output truncated at 64 KiB]\n") {
		t.Fatalf("log cap: %d bytes, ends %q", len(r.Logs), r.Logs[max(0, len(r.Logs)-60):])
	}
	if !json.Valid([]byte(fmt.Sprintf("%q", r.Logs))) || strings.ToValidUTF8(r.Logs, "?") != r.Logs {
		t.Fatal("truncation split a UTF-8 sequence")
	}
	if r, _ = e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: `console.log("x"); 1`, InputJSON: "null", Limits: limits}, CaptureLogs: false}); r.Logs != "" {
		t.Fatalf("logs returned without being asked for: %q", r.Logs)
	}
}

const probe = `
  const seen = [];
  if (globalThis.__mark !== undefined) seen.push("global");
  if (Object.prototype.__polluted !== undefined) seen.push("prototype");
  if (Array.prototype.__polluted !== undefined) seen.push("array prototype");
  if (JSON.__patched !== undefined) seen.push("JSON");
  globalThis.__mark = input;
  Object.prototype.__polluted = input;
  Array.prototype.__polluted = input;
  JSON.__patched = true;
  Math.random = () => 4;
  seen`

// Every run starts from the same set-up image, but Math.random does not
// repeat itself across runs: each instance is reseeded by the host.
func TestMathRandomIsFreshPerRun(t *testing.T) {
	e := shared()
	seen := map[string]int{}
	for i := range 20 {
		out := eval(t, e, "[Math.random(), Math.random(), Math.random()]", "null", limits)
		if !out.OK {
			t.Fatalf("run %d: %s", i, describe(out))
		}
		if j, dup := seen[string(out.Value)]; dup {
			t.Fatalf("runs %d and %d drew the same Math.random sequence %s", j, i, out.Value)
		}
		seen[string(out.Value)] = i
	}
}

func TestFreshPerRun(t *testing.T) {
	e := shared()
	for i := 0; i < 16; i++ {
		out := eval(t, e, probe, fmt.Sprint(i), limits)
		if string(out.Value) != "[]" {
			t.Fatalf("run %d saw earlier state: %s", i, describe(out))
		}
	}
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := e.Evaluate(context.Background(), spi.Request{Script: probe, InputJSON: fmt.Sprint(i), Limits: limits})
			if err != nil || string(out.Value) != "[]" {
				bad.Add(1)
				t.Errorf("concurrent run %d: %s %v", i, describe(out), err)
			}
		}()
	}
	wg.Wait()
}

func TestCancellation(t *testing.T) {
	e := shared()
	t.Run("before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := e.Evaluate(ctx, spi.Request{Script: "1", InputJSON: "1", Limits: limits})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("during", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := e.Evaluate(ctx, spi.Request{Script: "while (true) {}", InputJSON: "1", Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("cancellation took %v", d)
		}
	})
	t.Run("deadline of the caller", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := e.Evaluate(ctx, spi.Request{Script: "while (true) {}", InputJSON: "1", Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20}})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})
}

// nativeRunaway spends over a second inside one native builtin (joining three
// million numbers), where QuickJS never calls its interrupt handler.
const nativeRunaway = "new Array(3e6).fill(0.25).join().length"

func TestHardKill(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs a multi-second native builtin")
	}
	deadline := 100 * time.Millisecond
	grace := 300 * time.Millisecond
	t.Run("context done terminates in process", func(t *testing.T) {
		e := newEngine(t, quickjs.WithHardKill(quickjs.HardKillForTests, grace), quickjs.WithPoolSize(0))
		start := time.Now()
		rep, err := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: nativeRunaway, InputJSON: "null", Limits: spi.Limits{WallClock: deadline, MemoryBytes: 128 << 20}}})
		took := time.Since(start)
		if err != nil || rep.Outcome.Kind != spi.KindLimit || rep.Outcome.Limit != spi.LimitWallClock {
			t.Fatalf("got %s, %v", describe(rep.Outcome), err)
		}
		// the guest terminated from outside is no fault of the engine
		if rep.EngineFault != "" {
			t.Fatalf("the hard kill reported an engine fault: %q", rep.EngineFault)
		}
		if took > deadline+2*grace+200*time.Millisecond {
			t.Fatalf("stopped after %v", took)
		}
		if n := e.StuckRuns(); n != 0 {
			t.Fatalf("%d runs still going after the kill", n)
		}
	})
	t.Run("watchdog backstop kills the process", func(t *testing.T) {
		// The child is this test binary, re-run to evaluate the runaway
		// with the process-kill backstop armed; it must die by SIGKILL.
		cmd := exec.Command(os.Args[0], "-test.run=^TestHardKillChild$", "-test.v")
		cmd.Env = append(os.Environ(), "QUICKJS_HARDKILL_CHILD=1")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("child exited with %v, want SIGKILL\n%s", err, out)
		}
		ws, _ := exit.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child ended with %v, want SIGKILL\n%s", ws, out)
		}
		if !strings.Contains(string(out), "child: evaluating") {
			t.Fatalf("child did not reach the evaluation:\n%s", out)
		}
		// The child outlives the Go watchdog's answer by 10 s and then says
		// so; SIGKILL before that is the kernel timer's, armed for deadline
		// + 2 x grace, however long the machine took to get there.
		if strings.Contains(string(out), "child: survived") {
			t.Fatalf("the child survived its run and was killed only afterwards:\n%s", out)
		}
		t.Logf("child killed by SIGKILL after %v (deadline %v, grace %v)", took, childDeadline, childGrace)
	})
}

const (
	childDeadline = 100 * time.Millisecond
	childGrace    = 200 * time.Millisecond
)

// TestHardKillChild is the child of the backstop test; it does nothing unless
// started by it.
func TestHardKillChild(t *testing.T) {
	if os.Getenv("QUICKJS_HARDKILL_CHILD") != "1" {
		t.Skip("child of TestHardKill")
	}
	e := newEngine(t, quickjs.WithHardKill(quickjs.HardKillWatchdog, childGrace), quickjs.WithProcessKill(true),
		quickjs.WithPoolSize(0), quickjs.WithOnStuck(func(s quickjs.StuckRun) { fmt.Println("child: stuck", s.Overrun) }))
	fmt.Println("child: evaluating")
	// Keep the process alive past the kill whatever the Go watchdog does.
	_, _ = e.Evaluate(context.Background(), spi.Request{Script: nativeRunaway + "; new Array(3e6).fill(0.5).join().length",
		InputJSON: "null", Limits: spi.Limits{WallClock: childDeadline, MemoryBytes: 128 << 20}})
	time.Sleep(10 * time.Second)
	fmt.Println("child: survived")
}

func TestLimitsValidated(t *testing.T) {
	for _, l := range []spi.Limits{{WallClock: 0, MemoryBytes: 1 << 20}, {WallClock: time.Second, MemoryBytes: 0}, {WallClock: -1, MemoryBytes: -1},
		{WallClock: time.Second, MemoryBytes: 4096}, {WallClock: time.Second, MemoryBytes: quickjs.MinMemoryBytes - 1}} {
		out := eval(t, shared(), "1", "1", l)
		if out.Kind != spi.KindInfrastructure || !strings.Contains(out.Message, "invalid limits") {
			t.Errorf("limits %+v: %s", l, describe(out))
		}
	}
}

// At MinMemoryBytes a small script runs on a small input: the example
// scripts on their inputs, as README.md shows them. An engine whose own
// state grew past the floor fails here.
func TestMinMemoryRunsASmallScript(t *testing.T) {
	l := spi.Limits{WallClock: 10 * time.Second, MemoryBytes: quickjs.MinMemoryBytes}
	for script, input := range map[string]string{"echo": "issues", "issues-to-list": "issues", "order-totals": "orders"} {
		src, err := os.ReadFile("../examples/scripts/" + script + ".js")
		if err != nil {
			t.Fatal(err)
		}
		in, err := os.ReadFile("../examples/inputs/" + input + ".json")
		if err != nil {
			t.Fatal(err)
		}
		if out := eval(t, shared(), string(src), string(in), l); !out.OK {
			t.Errorf("%s on %s under %d bytes: %s", script, input, l.MemoryBytes, describe(out))
		}
	}
}

func TestOptionsValidated(t *testing.T) {
	for _, o := range []quickjs.Option{quickjs.WithMaxMemoryBytes(1), quickjs.WithPoolSize(-1), quickjs.WithHardKill(9, time.Second), quickjs.WithHardKill(quickjs.HardKillWatchdog, 0), quickjs.WithLogger(nil)} {
		if _, err := quickjs.New(context.Background(), o); err == nil {
			t.Errorf("option accepted")
		}
	}
}

func TestClose(t *testing.T) {
	e, err := quickjs.New(context.Background(), quickjs.CachedForTests()...)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	_ = e.Warm(context.Background())
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out := eval(t, e, "1", "1", limits); out.Kind != spi.KindInfrastructure {
		t.Fatalf("after Close: %s", describe(out))
	}
	time.Sleep(50 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("goroutines %d -> %d after Close", before, after)
	}
}

// The build is reproducible: rebuilding from the pinned tarball gives the
// committed bytes, of the engine that ships and of the checked engine
// (CHECKED=1). Needs the C toolchain of debian-packages.txt; CI sets
// SANDBOX_REBUILD_WASM=1. Without the toolchain, build.sh's output (printed
// here) ends with the apt-get line that installs what is missing.
func TestWasmRebuildsIdentically(t *testing.T) {
	if os.Getenv("SANDBOX_REBUILD_WASM") == "" {
		t.Skip("set SANDBOX_REBUILD_WASM=1 to rebuild sandbox.wasm from source (needs the Debian packages of quickjs/debian-packages.txt)")
	}
	for _, tc := range []struct{ checked, committed string }{
		{"0", "sandbox.wasm"},
		{"1", "sandbox-checked.wasm"},
	} {
		out := t.TempDir() + "/" + tc.committed
		cmd := exec.Command("./build.sh")
		cmd.Env = append(os.Environ(), "OUT="+out, "CHECKED="+tc.checked)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build.sh could not rebuild %s (%v):\n%s", tc.committed, err, b)
		}
		got, _ := os.ReadFile(out)
		want, _ := os.ReadFile(tc.committed)
		if string(got) != string(want) {
			t.Errorf("rebuilt %s differs from the committed one (%d vs %d bytes)", tc.committed, len(got), len(want))
		}
	}
}

// The compilation cache makes a second process skip compilation, and a cache
// that cannot serve this host never stops the engine.
func TestCompilationCache(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	timeWarm := func() time.Duration {
		e, err := quickjs.New(ctx, quickjs.WithCompilationCache(dir), quickjs.WithPoolSize(0))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(ctx)
		start := time.Now()
		if err := e.Warm(ctx); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if out := eval(t, e, "input + 1", "41", limits); string(out.Value) != "42" {
			t.Fatalf("got %s", describe(out))
		}
		return took
	}
	cold := timeWarm()
	warm := timeWarm()
	if warm*3 > cold {
		t.Errorf("warm start %v is not much faster than cold %v: cache not used?", warm, cold)
	}
	// Corrupt every cached file: the engine must still compile and run.
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
			return os.WriteFile(p, []byte("garbage"), 0o644)
		}
		return nil
	})
	if n == 0 {
		t.Fatal("the cache directory holds no files")
	}
	timeWarm()
	t.Logf("cold %v, from cache %v", cold, warm)
}

// Close never frees the memory of a guest that is still running: it waits,
// and when its context ends first it leaves the runtime open.
func TestCloseWhileRunning(t *testing.T) {
	// the hook that chooses the runs that trap traps none: it says when the
	// run has begun, which a sleep could only guess on a busy machine
	begun := make(chan struct{})
	var once sync.Once
	observe := quickjs.WithTrapForTests(func(string) bool { once.Do(func() { close(begun) }); return false })
	e, err := quickjs.New(context.Background(), quickjs.CachedForTests(quickjs.WithPoolSize(0), observe)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan spi.Outcome, 1)
	go func() {
		// its wall clock is room for Close to be called while it runs
		out, _ := e.Evaluate(context.Background(), spi.Request{Script: "let i = 0; while (true) i++", InputJSON: "1",
			Limits: spi.Limits{WallClock: 3 * time.Second, MemoryBytes: 16 << 20}})
		done <- out
	}()
	<-begun // running
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.Close(ctx); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("Close during a run: %v", err)
	}
	if out := <-done; out.Kind != spi.KindLimit || out.Limit != spi.LimitWallClock {
		t.Fatalf("the run after Close: %s", describe(out))
	}
	// A second engine closes cleanly once its run is over.
	e2 := newEngine(t)
	_ = eval(t, e2, "1", "1", limits)
	if err := e2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The security battery's memory-pressure scripts, which made the guest
// trap in an allocation-failure path of QuickJS 2025-04-26, end as a typed
// outcome: the memory limit, or their own value once QuickJS unwinds the
// failed allocation and the script catches it; never an engine failure.
// (TestTrapAfterRefusedAllocationIsTheMemoryLimit forces such a trap, which
// the engine reports as the memory limit.)
func TestMemoryPressureScriptsEndTyped(t *testing.T) {
	for _, f := range []string{"../security/testdata/quickjs-pocs/bellard-406-compile-under-memory-pressure.js", "../security/testdata/memory-pressure-out-of-bounds.js"} {
		script, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out := eval(t, shared(), string(script), "null", spi.Limits{WallClock: 10 * time.Second, MemoryBytes: 16 << 20})
		if !out.OK && (out.Kind != spi.KindLimit || out.Limit != spi.LimitMemory) {
			t.Errorf("%s: %s", filepath.Base(f), describe(out))
		}
	}
}

// The engine compiles once for every caller: a first evaluation whose
// context ends while the engine compiles gets its context's error, and the
// engine, compiled to the end regardless, serves the next one. (Compiled
// under the first caller's context, an engine whose guest is terminated
// when a context ends failed every later evaluation.)
func TestFirstCallCancelledDuringCompile(t *testing.T) {
	for _, hk := range []quickjs.HardKill{quickjs.HardKillWatchdog, quickjs.HardKillForTests} {
		t.Run(hk.String(), func(t *testing.T) {
			e, err := quickjs.New(context.Background(), quickjs.CachedForTests(quickjs.WithPoolSize(0), quickjs.WithHardKill(hk, time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close(context.Background()) })
			// compiling takes hundreds of milliseconds: the context ends first
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			if out, err := e.Evaluate(ctx, spi.Request{Script: "1", InputJSON: "null", Limits: limits}); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the first call, its context ended during the compilation: %s, %v; want the context's error", describe(out), err)
			}
			if out := eval(t, e, "1 + 1", "null", limits); !sameOutcome(out, spi.OK([]byte("2"))) {
				t.Fatalf("the next call: %s", describe(out))
			}
		})
	}
}
