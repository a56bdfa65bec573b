package security

import (
	"strings"
	"testing"
	"time"
)

// escapeCase is a probe of vm2's escape family, or of a way out of the
// guest: each must end as a defined outcome. There is no host code in the
// guest to reach (the only imports are sandbox.poll and four WASI calls
// that take numbers), so what is asserted is that the outcome is exactly the
// one an isolated ECMAScript realm gives.
type escapeCase struct {
	name, script string
	wall         time.Duration
	want         want
}

func escapeCases() []escapeCase {
	threwTypeError := func(msg string) want { return want{class: "threw", name: "TypeError", message: msg} }
	return []escapeCase{
		// Species constructors: the engine calls them with script values only.
		{name: "Array species constructor", script: `class X extends Array { static get [Symbol.species]() { return function () { return { reached: typeof process } } } } new X(1, 2, 3).map((x) => x)`,
			want: want{class: "ok", value: `{"0":1,"1":2,"2":3,"reached":"undefined"}`}},
		{name: "Promise species constructor", script: `class P extends Promise { static get [Symbol.species]() { return function (ex) { ex(() => {}, () => {}); this.species = true } } } const p = P.resolve(1).then(() => 1); [p.species === true, typeof p]`,
			want: want{class: "ok", value: `[true,"object"]`}},
		{name: "RegExp species constructor", script: `class R extends RegExp { static get [Symbol.species]() { return function () { return /x/y } } } "axb".split(new R("x")).length`,
			want: want{class: "ok"}},

		// Promises and thenables: after the global code the engine runs the
		// job queue until no job is left, under the run's limits, and a
		// Promise (or thenable) result is its settled value. A Promise is
		// read by its state, so an overridden then is never called for it;
		// a primitive result is taken when the global code ends, an object
		// is serialised after the jobs.
		{name: "thenable result", script: `({ then(resolve) { resolve(typeof process) } })`, want: want{class: "ok", value: `"undefined"`}},
		{name: "Promise.prototype.then overridden", script: `Promise.prototype.then = function () { for (;;) {} }; Promise.resolve(1)`, want: want{class: "ok", value: `1`}},
		{name: "then callback that loops", script: `Promise.resolve().then(() => { for (;;) {} }); "after"`, wall: runaway, want: wallClock},
		{name: "then side effect on a primitive result", script: `let r = "pending"; Promise.resolve(1).then(() => { r = "ran" }); r`, want: want{class: "ok", value: `"pending"`}},
		{name: "then side effect on an object result", script: `const r = { r: "pending" }; Promise.resolve(1).then(() => { r.r = "ran" }); r`, want: want{class: "ok", value: `{"r":"ran"}`}},
		{name: "await continuation that loops", script: `(async () => { await null; for (;;) {} })(); "pending"`, wall: runaway, want: wallClock},
		{name: "async body before its first await runs", script: `(async () => { for (;;) {} })(); "unreached"`, wall: runaway, want: wallClock},
		{name: "async result", script: `(async () => 42)()`, want: want{class: "ok", value: `42`}},
		{name: "pending promise result", script: `new Promise(() => {})`, want: want{class: "threw", name: "-", message: "never settled"}},
		{name: "unhandled rejection", script: `Promise.reject(new Error("unhandled")); "ignored"`, want: want{class: "ok", value: `"ignored"`}},
		{name: "rejected result", script: `Promise.reject(new TypeError("rejected"))`, want: threwTypeError("rejected")},
		{name: "a then that reaches for the host", script: `Promise.resolve().then(() => [typeof process, typeof require, typeof fetch, typeof queueMicrotask, typeof setTimeout])`,
			want: want{class: "ok", value: `["undefined","undefined","undefined","undefined","undefined"]`}},
		// A callback the garbage collector queues is a job like the others;
		// a primitive result was taken before it could run.
		{name: "FinalizationRegistry callback and a primitive result", script: `let ran = false; new FinalizationRegistry(() => { ran = true }).register({}, 1); for (let i = 0; i < 1e5; i++) ({}); ran`, want: want{class: "ok", value: `false`}},
		{name: "top-level await", script: `await 1`, want: want{class: "threw", name: "SyntaxError"}},

		// Stack traces and callers: nothing but the script's own frames.
		{name: "Error.prepareStackTrace is not consulted", script: `Error.prepareStackTrace = (e, frames) => frames.map((f) => f.getThis()); const s = new Error("x").stack; [typeof s, /^ +at <eval> \(<script>:1:\d+\)\n$/.test(s)]`,
			want: want{class: "ok", value: `["string",true]`}},
		{name: "Error.captureStackTrace does not exist", script: `typeof Error.captureStackTrace`, want: want{class: "ok", value: `"undefined"`}},
		{name: "stack of a toJSON the shim calls", script: `({ toJSON() { return new Error("in toJSON").stack } })`, want: want{class: "ok"}},
		{name: "stack of a getter the shim calls", script: `({ get x() { return /^ +at get x \(<script>:1:\d+\)\n$/.test(new Error().stack) } })`, want: want{class: "ok", value: `{"x":true}`}},
		{name: "stack of a thrown value's getter the shim calls", script: `throw { get message() { return new Error().stack } }`, want: want{class: "threw", message: "<script>"}},
		{name: "caller of a sloppy function", script: `function f() { return arguments.callee.caller } function g() { return f() } typeof g()`, want: want{class: "ok", value: `"undefined"`}},
		{name: "Function.caller", script: `function f() { return f.caller } typeof f()`, want: want{class: "ok", value: `"undefined"`}},
		{name: "strict arguments.callee", script: `(function () { "use strict"; return arguments.callee })()`, want: threwTypeError("invalid property access")},
		{name: "caller from a toJSON the shim calls", script: `({ toJSON() { try { return typeof arguments.callee.caller } catch (e) { return String(e) } } })`, want: want{class: "ok", value: `"TypeError: invalid property access"`}},
		{name: "function file names", script: `[(function () {}).fileName, Math.max.fileName, (0, eval)("(function () {})").fileName]`, want: want{class: "ok", value: `["<script>",null,"<input>"]`}},
		{name: "native function source", script: `Function.prototype.toString.call(JSON.parse)`, want: want{class: "ok", value: `"function parse() {\n    [native code]\n}"`}},

		// One realm, and it is the guest's.
		{name: "every constructor reaches the same global", script: `const g = globalThis; const seen = [];
		  seen.push(Function("return this")() === g);
		  seen.push(this.constructor.constructor("return this")() === g);
		  seen.push((0, eval)("this") === g);
		  (async function () {}).constructor("globalThis.__a = this")(); seen.push(g.__a === g);
		  seen.push((function* () {}).constructor("yield this")().next().value === g);
		  Object.getPrototypeOf(async function* () {}).constructor("globalThis.__ag = this")().next(); seen.push(g.__ag === g);
		  seen`,
			want: want{class: "ok", value: `[true,true,true,true,true,true]`}},
		{name: "the global object serialises as {}", script: `globalThis`, want: want{class: "ok", value: `{}`}},

		// Proxies and conversions on the thrown value and on the result.
		{name: "proxy thrown", script: `throw new Proxy({}, { get(t, k) { return k === "message" ? "proxied" : undefined } })`, want: want{class: "threw", name: "-", message: "proxied"}},
		{name: "proxy thrown whose traps throw", script: `throw new Proxy(new Error("x"), { getPrototypeOf() { throw 1 }, get() { throw new Error("trap") } })`, want: want{class: "threw", name: "-", message: "thrown value could not be converted to a string"}},
		{name: "proxy thrown whose trap loops", script: `throw new Proxy({}, { get() { for (;;) {} } })`, wall: runaway, want: wallClock},
		{name: "revoked proxy thrown", script: `const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); throw proxy`, want: want{class: "threw", message: "thrown value could not be converted to a string"}},
		{name: "revoked proxy result", script: `const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); proxy`, want: threwTypeError("revoked proxy")},
		{name: "proxy result with duplicate keys", script: `new Proxy({}, { ownKeys() { return ["a", "a"] } })`, want: threwTypeError("duplicate property")},
		{name: "proxy result that lies about descriptors", script: `new Proxy({}, { ownKeys() { return ["a"] }, getOwnPropertyDescriptor() { return { value: 1, enumerable: true, configurable: true } } })`, want: want{class: "ok", value: `{}`}},
		{name: "toJSON throws", script: `({ toJSON() { throw new TypeError("from toJSON") } })`, want: threwTypeError("from toJSON")},
		{name: "toJSON returns undefined", script: `({ toJSON() { return undefined } })`, want: want{class: "ok", value: `null`}},
		{name: "toJSON returns a string past the memory limit", script: `({ toJSON() { return "x".repeat(1e8) } })`, want: memory},
		{name: "valueOf and toString on the result are not consulted", script: `({ valueOf() { for (;;) {} }, toString() { for (;;) {} } })`, want: want{class: "ok", value: `{}`}},
		{name: "toPrimitive on the result is not consulted", script: `({ [Symbol.toPrimitive]() { throw 1 } })`, want: want{class: "ok", value: `{}`}},
		{name: "thrown value with toString", script: `throw { toString() { return "from toString" } }`, want: want{class: "threw", name: "-", message: "from toString"}},
		{name: "thrown value with toPrimitive", script: `throw { [Symbol.toPrimitive]() { return "from toPrimitive" } }`, want: want{class: "threw", name: "-", message: "from toPrimitive"}},
		{name: "thrown value with only valueOf", script: `throw { valueOf() { return 7 }, toString: undefined }`, want: want{class: "threw", name: "-", message: "7"}},
		{name: "thrown value whose message is an object", script: `throw { get name() { return "N" }, get message() { return { toString() { return "obj" } } } }`, want: want{class: "threw", name: "N", message: "[object Object]"}},
		{name: "thrown symbol", script: `throw Symbol("s")`, want: want{class: "threw", name: "-", message: "Symbol(s)"}},
		{name: "thrown BigInt", script: `throw 10n`, want: want{class: "threw", name: "-", message: "10"}},
		{name: "symbol result", script: `Symbol("s")`, want: want{class: "ok", value: `null`}},
		{name: "BigInt result", script: `({ a: 1n })`, want: threwTypeError("BigInt")},

		// Forged kills: only the engine's own InternalError reads as one.
		{name: "forged out of memory", script: `throw new InternalError("out of memory")`, want: memory},
		{name: "forged out of memory without the constructor", script: `throw Object.create(InternalError.prototype, { message: { value: "out of memory" } })`, want: want{class: "threw", name: "InternalError", message: "out of memory"}},
		{name: "forged out of memory through a getter", script: `const e = new InternalError("x"); Object.defineProperty(e, "message", { get() { return "out of memory" } }); throw e`, want: want{class: "threw", name: "InternalError", message: "out of memory"}},
		{name: "forged interruption", script: `throw new InternalError("interrupted")`, want: want{class: "threw", name: "InternalError", message: "interrupted"}},

		// No module loading of any kind.
		{name: "import() rejects", script: `const r = { r: "pending" }; import("os").then(() => { r.r = "loaded" }, (e) => { r.r = String(e) }); r`, want: want{class: "ok", value: `{"r":"ReferenceError: could not load module 'os'"}`}},
		{name: "import() result", script: `import("std")`, want: want{class: "threw", name: "ReferenceError", message: "could not load module 'std'"}},
		{name: "import() through eval", script: `(0, eval)("import('os')")`, want: want{class: "threw", name: "TypeError", message: "no function filename for import()"}},
		{name: "import() through Function", script: `new Function("return import('os')")()`, want: want{class: "threw", name: "ReferenceError", message: "could not load module 'os'"}},
		{name: "static import", script: `import * as os from "os"; os`, want: want{class: "threw", name: "SyntaxError"}},
		{name: "default import", script: `import std from "std"`, want: want{class: "threw", name: "SyntaxError"}},
		{name: "export", script: `export const x = 1`, want: want{class: "threw", name: "SyntaxError"}},
		{name: "import.meta", script: `import.meta`, want: want{class: "threw", name: "SyntaxError", message: "import.meta only valid in module code"}},
		{name: "require", script: `require("fs")`, want: want{class: "threw", name: "ReferenceError", message: "'require' is not defined"}},

		// Bytecode is never accepted: whatever the bytes, they are source.
		{name: "a bytecode header", script: "\x04\x02\x02a\x02b\x0c\x00", want: want{class: "threw", name: "SyntaxError"}},
		{name: "a bytecode header after a comment", script: "// x\n\x04\x01\x02a\x0c", want: want{class: "threw", name: "SyntaxError"}},
		{name: "a NUL in the source", script: "1;\x00 2", want: want{class: "threw", name: "SyntaxError"}},
	}
}

func TestEscapeFamily(t *testing.T) {
	s := shared(t)
	for _, tc := range escapeCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, rt := range []route{spiRoute, evaluations} {
				q := req{script: tc.script, wall: tc.wall}
				if q.wall == 0 {
					q.wall = generous
				}
				check(t, q, s.do(t, rt, q), tc.want)
			}
		})
	}
}

// Whatever a script makes the engine say (stacks, errors, function
// sources, the clock) names nothing of the host: no path, no Go or C source
// location, no environment.
func TestNothingOfTheHostInGuestText(t *testing.T) {
	s := shared(t)
	script := `
	  const out = [];
	  const add = (f) => { try { out.push(String(f())) } catch (e) { out.push(String(e) + " " + e.stack) } };
	  add(() => new Error("e").stack);
	  add(() => { null.x });
	  add(() => eval("let = ;"));
	  add(() => JSON.parse("{"));
	  add(() => new RegExp("("));
	  add(() => { function f() { f() } f() });
	  add(() => Object.getOwnPropertyNames(globalThis).map((n) => { try { return n + ":" + Function.prototype.toString.call(globalThis[n]) } catch (e) { return n } }).join("\n"));
	  add(() => Object.__getClass(globalThis) + " " + Object.__getClass(console));
	  add(() => new Date(0).toString() + " " + new Date().getTimezoneOffset());
	  add(() => (1.5).toLocaleString() + " " + new Date(0).toLocaleString());
	  add(() => "".__quote());
	  out.join("\n")`
	for _, rt := range []route{spiRoute, evaluations} {
		q := req{script: script, wall: generous}
		r := s.do(t, rt, q)
		check(t, q, r, want{class: "ok"})
		for _, bad := range []string{"/work", "/tmp", "/home", "/usr", "/root", ".go", ".c:", "quickjs.c", "sandbox.c", "wazero", "GOPATH", "PATH=", "HOME", "K_SERVICE", "metadata", "127.0.0.1"} {
			if strings.Contains(r.value, bad) {
				t.Errorf("%s: guest text names %q:\n%s", rt, bad, r.value)
			}
		}
		if !strings.Contains(r.value, "<script>") || !strings.Contains(r.value, "[native code]") {
			t.Errorf("%s: the probe did not run as expected:\n%.2000s", rt, r.value)
		}
	}
	// The time zone is UTC: the host's zone is not visible either.
	q := req{script: `new Date(0).getTimezoneOffset()`}
	check(t, q, s.do(t, spiRoute, q), want{class: "ok", value: "0"})
}
