package quickjs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

const neverSettled = "the result is a promise that never settled: no job was left that could settle it"

// After the global code the engine runs the job queue until no job is left,
// and a Promise (or thenable) result is its settled value: fulfilled, the
// value; rejected, a throw of the reason; still pending, the script's own
// throw. The jobs run under the run's limits. Cases whose outcome must not
// be the wall clock have a generous one.
func TestPromiseJobs(t *testing.T) {
	budget := newEngine(t, quickjs.WithCPUBudget(200), quickjs.WithPoolSize(0))
	generous := spi.Limits{WallClock: time.Minute, MemoryBytes: 32 << 20}
	short := spi.Limits{WallClock: 300 * time.Millisecond, MemoryBytes: 16 << 20}
	bombLimits := spi.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20}
	const bomb = "const a = []; for (;;) a.push(new Array(1e4).fill(a.length))"
	cases := []struct {
		name, script, input string
		e                   *quickjs.Engine
		l                   spi.Limits
		want                spi.Outcome
	}{
		// Fulfilled: the value, through the same JSON rules as a plain result.
		{"await of a resolved value", "(async () => await Promise.resolve(input.n + 1))()", `{"n":41}`, shared(), generous, spi.OK([]byte(`42`))},
		{"await of a plain value", "(async () => { const x = await input; return x.map(v => v * 2) })()", `[1,2,3]`, shared(), generous, spi.OK([]byte(`[2,4,6]`))},
		{"Promise.all over 1,000 elements", "Promise.all(Array.from({ length: 1000 }, (_, i) => (async () => i * 2)())).then(a => [a.length, a.reduce((s, x) => s + x, 0)])", "null", shared(), generous,
			spi.OK([]byte(`[1000,999000]`))},
		{"a chain of 10,000 thens", "let p = Promise.resolve(0); for (let i = 0; i < 10000; i++) p = p.then(x => x + 1); p", "null", shared(), generous, spi.OK([]byte(`10000`))},
		{"awaits in a loop", "(async () => { let s = 0; for (const x of input) s += await x; return s })()", `[1,2,3,4]`, shared(), generous, spi.OK([]byte(`10`))},
		{"fulfilled with undefined is null", "(async () => {})()", "null", shared(), generous, spi.OK([]byte(`null`))},
		{"fulfilled with a BigInt is the script's TypeError", "Promise.resolve(1n)", "null", shared(), generous, spi.Threw(str("TypeError"), "Do not know how to serialize a BigInt")},
		{"a Promise subclass", "class P extends Promise {} P.resolve(5)", "null", shared(), generous, spi.OK([]byte(`5`))},
		{"a Promise is read by its state, not its then", "Promise.prototype.then = function () { for (;;) {} }; Promise.resolve(1)", "null", shared(), generous, spi.OK([]byte(`1`))},

		// Thenables: then is read once and called in a job, as await does.
		{"a thenable", "({ then(resolve) { resolve(input) } })", `{"a":1}`, shared(), generous, spi.OK([]byte(`{"a":1}`))},
		{"a thenable resolving to a thenable", "({ then(r) { r({ then(r2) { r2('inner') } }) } })", "null", shared(), generous, spi.OK([]byte(`"inner"`))},
		{"a thenable whose then throws", "({ then() { throw new RangeError('then threw') } })", "null", shared(), generous, spi.Threw(str("RangeError"), "then threw")},
		{"a thenable whose then getter throws", "({ get then() { throw new RangeError('getter threw') } })", "null", shared(), generous, spi.Threw(str("RangeError"), "getter threw")},
		{"a thenable that never calls back", "({ then() {} })", "null", shared(), generous, spi.Threw(nil, neverSettled)},
		{"a then that is not a function", "({ then: 1, x: 2 })", "null", shared(), generous, spi.OK([]byte(`{"then":1,"x":2}`))},

		// Rejected: the reason, described as a thrown value is.
		{"a rejected promise", "Promise.reject(new TypeError('no'))", "null", shared(), generous, spi.Threw(str("TypeError"), "no")},
		{"a promise rejected with a non-Error", "Promise.reject(42)", "null", shared(), generous, spi.Threw(nil, "42")},
		{"a throw in an async function", "(async () => { throw new Error('in async') })()", "null", shared(), generous, spi.Threw(str("Error"), "in async")},
		{"a throw in an async function after an await", "(async () => { await null; await input; throw new RangeError('after await ' + input) })()", `7`, shared(), generous, spi.Threw(str("RangeError"), "after await 7")},
		{"a rejection caught by the script", "(async () => { try { await Promise.reject(new Error('x')) } catch (e) { return 'caught ' + e.message } })()", "null", shared(), generous, spi.OK([]byte(`"caught x"`))},
		{"import() has no loader: it rejects", `import("os")`, "null", shared(), generous, spi.Threw(str("ReferenceError"), "could not load module 'os'")},
		{"a rejection with a forged out of memory", "Promise.reject(new InternalError('out of memory'))", "null", shared(), generous, spi.LimitHit(spi.LimitMemory)},

		// Pending once no job is left: the script's own outcome.
		{"a promise that never settles", "new Promise(() => {})", "null", shared(), generous, spi.Threw(nil, neverSettled)},
		{"an await that never resumes", "(async () => { await new Promise(() => {}); return 1 })()", "null", shared(), generous, spi.Threw(nil, neverSettled)},

		// Limits apply to jobs as to the script.
		{"a job that loops forever, wall clock", "Promise.resolve().then(() => { for (;;) {} }); 'unreached'", "null", shared(), short, spi.LimitHit(spi.LimitWallClock)},
		{"a job that loops forever, cpu", "Promise.resolve().then(() => { for (;;) {} }); 'unreached'", "null", budget, generous, spi.LimitHit(spi.LimitCPU)},
		{"an await continuation that loops, cpu", "(async () => { await null; for (;;) {} })()", "null", budget, generous, spi.LimitHit(spi.LimitCPU)},
		{"jobs that queue jobs forever, cpu", "(function f() { Promise.resolve().then(f) })(); 1", "null", budget, generous, spi.LimitHit(spi.LimitCPU)},
		{"awaits forever, cpu", "(async () => { for (;;) await 0 })()", "null", budget, generous, spi.LimitHit(spi.LimitCPU)},
		{"an interrupt the promise machinery catches stays the limit", "Promise.resolve().then(() => { for (;;) {} }).catch(() => 'caught')", "null", shared(), short, spi.LimitHit(spi.LimitWallClock)},
		{"an async function interrupted in the global code", "(async () => { for (;;) {} })()", "null", shared(), short, spi.LimitHit(spi.LimitWallClock)},
		{"a job that allocates without bound", "Promise.resolve().then(() => { " + bomb + " }); 'unreached'", "null", shared(), bombLimits, spi.LimitHit(spi.LimitMemory)},
		{"an async function that allocates without bound", "(async () => { await null; " + bomb + " })()", "null", shared(), bombLimits, spi.LimitHit(spi.LimitMemory)},
		{"out of memory in a job, caught and rethrown as another error", "(async () => { await null; try { " + bomb + " } catch (e) { throw new Error('not memory') } })()", "null", shared(), bombLimits, spi.LimitHit(spi.LimitMemory)},
		{"out of memory in a job, recovered from", "(async () => { await null; try { " + bomb + " } catch (e) { return 'recovered' } })()", "null", shared(), bombLimits, spi.OK([]byte(`"recovered"`))},
		{"a reason whose message getter loops", "Promise.reject({ get message() { for (;;) {} } })", "null", shared(), short, spi.LimitHit(spi.LimitWallClock)},

		// queueMicrotask is not ECMAScript and is not defined: a script that
		// needs one gets a ReferenceError; Promise.resolve().then(f) is the same.
		{"queueMicrotask is not defined", "typeof queueMicrotask", "null", shared(), generous, spi.OK([]byte(`"undefined"`))},
		{"calling queueMicrotask", "queueMicrotask(() => {})", "null", shared(), generous, spi.Threw(str("ReferenceError"), "'queueMicrotask' is not defined")},

		// Synchronous scripts answer as before. The completion value is taken
		// when the global code ends (a primitive is what it was then); an
		// object is serialised after the jobs, so what they changed shows.
		{"a synchronous script", "input.items.filter(i => i.ok).map(i => i.id)", `{"items":[{"id":1,"ok":true},{"id":2,"ok":false}]}`, shared(), generous, spi.OK([]byte(`[1]`))},
		{"a synchronous throw runs no job", "Promise.resolve().then(() => { for (;;) {} }); throw new Error('sync')", "null", shared(), generous, spi.Threw(str("Error"), "sync")},
		{"a primitive result is taken before the jobs run", "let r = 'pending'; Promise.resolve().then(() => { r = 'ran' }); r", "null", shared(), generous, spi.OK([]byte(`"pending"`))},
		{"an object result is serialised after the jobs run", "const o = { r: 'pending' }; Promise.resolve().then(() => { o.r = 'ran' }); o", "null", shared(), generous, spi.OK([]byte(`{"r":"ran"}`))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, tc.e, tc.script, tc.input, tc.l); !sameOutcome(got, tc.want) {
				t.Fatalf("got  %s\nwant %s", describe(got), describe(tc.want))
			}
		})
	}
}

// A rejection that no handler has taken once no job is left is written to
// the console as console.error writes, after everything the jobs wrote, and
// changes no outcome; the result's own rejection is the outcome, not a log
// line.
func TestUnhandledRejectionsAreLogged(t *testing.T) {
	generous := spi.Limits{WallClock: time.Minute, MemoryBytes: 32 << 20}
	cases := []struct {
		name, script string
		want         spi.Outcome
		logs         string
	}{
		{"two unhandled, one handled at once, one later",
			`console.log("start");
			 Promise.reject(new TypeError("lost"));
			 Promise.reject(42);
			 Promise.reject(new Error("handled")).catch(() => {});
			 const later = Promise.reject(new Error("later"));
			 Promise.resolve().then(() => later.catch(() => console.log("handled later")));
			 "ok"`,
			spi.OK([]byte(`"ok"`)),
			"start\nhandled later\n[error] unhandled promise rejection: TypeError: lost\n[error] unhandled promise rejection: 42\n"},
		{"a rejection in a then callback", `Promise.resolve().then(() => { throw new RangeError("in then") }); 1`, spi.OK([]byte(`1`)),
			"[error] unhandled promise rejection: RangeError: in then\n"},
		{"an empty message, a symbol, a plain object", `Promise.reject(new Error("")); Promise.reject(Symbol("s")); Promise.reject({ code: 7 }); 1`, spi.OK([]byte(`1`)),
			"[error] unhandled promise rejection: Error\n[error] unhandled promise rejection: Symbol(s)\n[error] unhandled promise rejection: [object Object]\n"},
		{"the result's own rejection is the outcome", `Promise.reject(new Error("other")); Promise.reject(new Error("mine"))`, spi.Threw(str("Error"), "mine"),
			"[error] unhandled promise rejection: Error: other\n"},
		{"beside a promise that never settles", `Promise.reject(new Error("other")); new Promise(() => {})`, spi.Threw(nil, neverSettled),
			"[error] unhandled promise rejection: Error: other\n"},
		{"none after a synchronous throw", `Promise.reject(new Error("other")); throw new Error("sync")`, spi.Threw(str("Error"), "sync"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := shared().Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: tc.script, InputJSON: "null", Limits: generous}, CaptureLogs: true})
			if err != nil {
				t.Fatal(err)
			}
			if !sameOutcome(r.Outcome, tc.want) {
				t.Errorf("got  %s\nwant %s", describe(r.Outcome), describe(tc.want))
			}
			if r.Logs != tc.logs {
				t.Errorf("logs %q, want %q", r.Logs, tc.logs)
			}
		})
	}
	// Of the unhandled rejections nothing can reach any more, 1,024 are
	// kept to be shown (each keeps its reason alive) and the rest counted:
	// 100,000 of them cost no more of the memory limit than 1,024.
	t.Run("many unhandled rejections", func(t *testing.T) {
		r, _ := shared().Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: `for (let i = 0; i < 1e5; i++) Promise.reject(new Error("e" + i)); "ok"`, InputJSON: "null",
			Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20}}, CaptureLogs: true})
		if string(r.Outcome.Value) != `"ok"` || strings.Count(r.Logs, "[error] unhandled promise rejection: Error: e") != 1024 ||
			!strings.HasPrefix(r.Logs, "[error] unhandled promise rejection: Error: e0\n[error] unhandled promise rejection: Error: e1\n") ||
			!strings.HasSuffix(r.Logs, "[error] unhandled promise rejection: Error: e1023\n[error] 98976 more unhandled promise rejections, not shown\n") {
			t.Fatalf("%s, %d bytes of logs ending %q", describe(r.Outcome), len(r.Logs), r.Logs[max(0, len(r.Logs)-200):])
		}
	})
	// Those the script still holds are all kept, since a handler may come.
	t.Run("many unhandled rejections the script holds", func(t *testing.T) {
		r, _ := shared().Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: `const ps = []; for (let i = 0; i < 1200; i++) ps.push(Promise.reject(i)); ps.length`, InputJSON: "null", Limits: generous}, CaptureLogs: true})
		if string(r.Outcome.Value) != `1200` || strings.Count(r.Logs, "[error] unhandled promise rejection: ") != 1200 || strings.Contains(r.Logs, "not shown") {
			t.Fatalf("%s, %d lines", describe(r.Outcome), strings.Count(r.Logs, "\n"))
		}
	})
	t.Run("the console cap still holds", func(t *testing.T) {
		r, _ := shared().Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: `for (let i = 0; i < 2000; i++) Promise.reject(new Error("x".repeat(100))); "ok"`, InputJSON: "null", Limits: generous}, CaptureLogs: true})
		if string(r.Outcome.Value) != `"ok"` || len(r.Logs) > 64<<10 || !strings.HasSuffix(r.Logs, "[console output truncated at 64 KiB]\n") {
			t.Fatalf("%s, %d bytes of logs", describe(r.Outcome), len(r.Logs))
		}
	})
	// Rejected and handled in bulk, later than at once: the tracker's list
	// is swept, never searched, and nothing is logged.
	t.Run("many rejections handled later", func(t *testing.T) {
		r, _ := shared().Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: `const ps = []; for (let i = 0; i < 2e4; i++) ps.push(Promise.reject(i));
			Promise.resolve().then(() => { for (const p of ps) p.catch(() => {}) }); ps.length`, InputJSON: "null", Limits: generous}, CaptureLogs: true})
		if string(r.Outcome.Value) != `20000` || r.Logs != "" {
			t.Fatalf("%s, logs %.200q", describe(r.Outcome), r.Logs)
		}
	})
}

// Jobs under a CPU budget use it deterministically, as the body does; and no
// job of a run that hit its limit runs in the next (each run is a fresh
// instance).
func TestPromiseJobsDeterministicAndFresh(t *testing.T) {
	e := newEngine(t, quickjs.WithCPUBudget(200), quickjs.WithPoolSize(0))
	script := "(async () => { let i = 0; for (;;) { await null; i++ } })()"
	r1, _ := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: script, InputJSON: "1", Limits: limits}, CaptureLogs: false})
	r2, _ := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: script, InputJSON: "1", Limits: limits}, CaptureLogs: false})
	if r1.Outcome.Limit != spi.LimitCPU || r1.Usage.CPUBudgetUsed != 201 || r2.Usage.CPUBudgetUsed != 201 {
		t.Fatalf("%s, polls %d and %d, want limit cpu after 201 each", describe(r1.Outcome), r1.Usage.CPUBudgetUsed, r2.Usage.CPUBudgetUsed)
	}
	r, _ := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: `globalThis.left = 1; Promise.resolve().then(() => { for (;;) {} }); Promise.resolve().then(() => console.log("leftover"))`,
		InputJSON: "null", Limits: limits}, CaptureLogs: true})
	if r.Outcome.Limit != spi.LimitCPU || r.Logs != "" {
		t.Fatalf("%s, logs %q", describe(r.Outcome), r.Logs)
	}
	r, _ = e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: `typeof left`, InputJSON: "null", Limits: limits}, CaptureLogs: true})
	if string(r.Outcome.Value) != `"undefined"` || r.Logs != "" {
		t.Fatalf("the next run: %s, logs %q", describe(r.Outcome), r.Logs)
	}
}

// The conformance kit's import probe has a Promise as its completion value:
// this engine settles it, and import() has no loader, so it is "blocked"
// (a backend that did not run jobs would return {}, which the kit allows).
func TestConformanceImportProbeIsSettled(t *testing.T) {
	out := eval(t, shared(), conformance.JavaScriptFixtures().ImportProbe, "null", spi.Limits{WallClock: time.Minute, MemoryBytes: 32 << 20})
	if !sameOutcome(out, spi.OK([]byte(`"blocked"`))) {
		t.Fatalf("import probe: %s", describe(out))
	}
}
