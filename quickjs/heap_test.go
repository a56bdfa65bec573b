package quickjs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// testEngine is a compiled engine with no pool and the given maximum
// memory limit; testInstance, a fresh instance of it.
func testEngine(t *testing.T, maxMemory int64) *Engine {
	t.Helper()
	ctx := context.Background()
	e, err := New(ctx, CachedForTests(WithPoolSize(0), WithMaxMemoryBytes(maxMemory))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(ctx) })
	if err := e.compile(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *Engine) testInstance(t *testing.T) *instance {
	t.Helper()
	in, err := newInstance(context.Background(), e.rt, e.compiled, e.mem, e.image)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.close)
	return in
}

// setUpBytes bounds what an instance holds before its run: the 1 MiB shadow
// stack and the set-up's heap (1.25 MiB), with room for the allocator's own
// bookkeeping at the top of a full heap.
const setUpBytes = 2 << 20

// The memory limit bounds the guest's heap, whatever allocates it: QuickJS
// takes its small blocks from 4 KiB arenas it takes from the shim's
// allocator, which counts what it hands out against the limit, arenas whole.
// An allocation bomb of each kind ends as the memory limit with the guest's
// linear memory within the limit plus the set-up, at 1 MiB, 16 MiB, 64 MiB
// and the 2 GiB ceiling; and the limit admits what fits: a script that
// keeps 64 KiB buffers until one is refused holds at least three quarters
// of the limit in them.
func TestMemoryLimitBoundsTheHeap(t *testing.T) {
	bombs := []struct{ name, script string }{
		{"strings", `let a = []; for (;;) a.push("x".repeat(1000) + a.length)`},
		{"objects", `let a = []; for (;;) a.push({ x: a.length, y: [a.length] })`},
		{"typed arrays", `let a = []; for (;;) a.push(new Float64Array(100000))`},
		{"map entries", `const m = new Map(); for (let i = 0; ; i++) m.set(i, { i })`},
		{"set union", `let s = new Set([0]); for (let i = 1; ; i *= 2) s = s.union(new Set(Array.from({ length: i }, (_, j) => i + j)))`},
	}
	const fill = `let n = 0; const keep = []; try { for (;;) { keep.push(new Uint8Array(65536)); n++ } } catch (e) {} n * 65536`
	e := testEngine(t, 2<<30)
	ctx := context.Background()
	for _, limit := range []int64{1 << 20, 16 << 20, 64 << 20, 2 << 30} {
		for _, b := range bombs {
			// at the ceiling, the bomb that gets there in the fewest steps
			if limit == 2<<30 && b.name != "typed arrays" {
				continue
			}
			t.Run(b.name+" at "+mib(limit), func(t *testing.T) {
				in := e.testInstance(t)
				raw, err := in.exec(ctx, b.script, "null", limit, 0, false, 1)
				if err != nil || raw.status != statusLimitMemory {
					t.Fatalf("status %d, err %v: want the memory limit", raw.status, err)
				}
				// the checked heap's red zones are linear memory the
				// limit does not count (c/redzone.c)
				if got := int64(in.mem.Size()); got > limit+setUpBytes && !CheckedHeap {
					t.Fatalf("the guest's memory grew to %s under a limit of %s", mib(got), mib(limit))
				}
			})
		}
		if limit == 2<<30 {
			continue
		}
		t.Run("what fits at "+mib(limit), func(t *testing.T) {
			raw, err := e.testInstance(t).exec(ctx, fill, "null", limit, 0, false, 1)
			if err != nil || raw.status != statusOK {
				t.Fatalf("status %d, err %v", raw.status, err)
			}
			if held := mustInt(t, raw.result); held < limit*3/4 {
				t.Fatalf("held %s of 64 KiB buffers under a limit of %s", mib(held), mib(limit))
			}
		})
	}
}

// The committed examples run at a 1 MiB limit as at the default.
func TestExamplesRunAtOneMiB(t *testing.T) {
	scripts, err := filepath.Glob("../examples/scripts/*.js")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no example scripts: %v", err)
	}
	inputs := map[string]string{"echo.js": "../examples/inputs/orders.json", "issues-to-list.js": "../examples/inputs/issues.json", "order-totals.js": "../examples/inputs/orders.json"}
	e := testEngine(t, 64<<20)
	ctx := context.Background()
	for _, s := range scripts {
		name := filepath.Base(s)
		t.Run(name, func(t *testing.T) {
			script, err := os.ReadFile(s)
			if err != nil {
				t.Fatal(err)
			}
			input, err := os.ReadFile(inputs[name])
			if err != nil {
				t.Fatalf("no input for %s: %v", name, err)
			}
			small, err := e.testInstance(t).exec(ctx, string(script), string(input), 1<<20, 0, false, 1)
			if err != nil {
				t.Fatal(err)
			}
			large, err := e.testInstance(t).exec(ctx, string(script), string(input), 64<<20, 0, false, 1)
			if err != nil {
				t.Fatal(err)
			}
			if small.status != statusOK || string(small.result) != string(large.result) {
				t.Fatalf("at 1 MiB: status %d, %.200s; at 64 MiB: status %d, %.200s", small.status, small.result, large.status, large.result)
			}
		})
	}
}

// JS_FreeRuntime leaves nothing behind: after a run of each kind, freeing
// the shim's values, the context and the runtime (sb_teardown) returns every
// block the runtime took from the shim's allocator, the arenas of QuickJS's
// small-block allocator included. A leak there would hold memory against
// the limit for the rest of a run, and sb_teardown's count shows it.
func TestFreeRuntimeLeavesNothing(t *testing.T) {
	e := testEngine(t, 64<<20)
	ctx := context.Background()
	for _, tc := range []struct {
		name, script string
		cpu          uint64
		status       int32
	}{
		{"a value", `({ a: [1, "two", { three: 3n.toString() }], d: new Date(0), r: /x+/g.exec("xx") })`, 0, statusOK},
		{"a throw", `throw new TypeError("no")`, 0, statusThrew},
		{"a syntax error", `let = ;`, 0, statusThrew},
		{"a stack overflow", `function f() { return f() + 1 } f()`, 0, statusThrew},
		{"an allocation bomb", `let a = []; for (;;) a.push({ x: a.length })`, 0, statusLimitMemory},
		{"a bomb caught", `let a = []; try { for (;;) a.push("x".repeat(100) + a.length) } catch (e) {} a = null; 1`, 0, statusOK},
		{"the CPU budget mid-run", `const m = new Map(); for (let i = 0; ; i++) m.set(i, [i, { i }])`, 50, statusLimitCPU},
		{"unhandled rejections, pending promises and jobs", `for (let i = 0; i < 3000; i++) Promise.reject(new Error("e" + i));
			new Promise(() => {}); Promise.resolve().then(() => new Promise(() => {})); (async () => { await null; throw 1 })(); 1`, 0, statusOK},
		{"cycles, weak references, finalizers and generators", `const a = {}; a.self = a; const w = new WeakRef(a), wm = new WeakMap([[a, 1]]);
			const fr = new FinalizationRegistry(() => {}); fr.register({}, 1); fr.register(a, 2);
			function* g() { try { yield 1; yield 2 } finally { a.done = true } } const it = g(); it.next();
			const c = (() => { let x = []; return () => x })(); new Proxy(a, {}); [w.deref() === a, wm.get(a)]`, 0, statusOK},
		{"the new builtins", `const s = new Set([1, 2]).union(new Set([3])); const m = new Map(); m.getOrInsert("k", 1);
			[...Iterator.from([1, 2, 3]).map((x) => x * 2).filter((x) => x > 2)], new Float16Array([1.5]), new ArrayBuffer(8, { maxByteLength: 16 }).transfer(16),
			new Uint8Array([1, 2]).toBase64(), JSON.rawJSON("1"), Math.sumPrecise([1, 2]), RegExp.escape("a.b"), /[\p{L}--[a-z]]/v.test("A"), s.size`, 0, statusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := e.testInstance(t)
			raw, err := in.exec(ctx, tc.script, "null", 16<<20, tc.cpu, false, 1)
			if err != nil || raw.status != tc.status {
				t.Fatalf("status %d (%.100s), err %v: want status %d", raw.status, raw.result, err, tc.status)
			}
			res, err := in.mod.ExportedFunction("sb_teardown").Call(ctx)
			if err != nil {
				t.Fatalf("sb_teardown: %v", err)
			}
			if left := int32(res[0]); left != 0 {
				t.Fatalf("%d blocks of the runtime's allocator are left after JS_FreeRuntime", left)
			}
		})
	}
}

func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', -1, 64) + " MiB" }

func mustInt(t *testing.T, b []byte) int64 {
	t.Helper()
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatalf("result %.100q: %v", b, err)
	}
	return n
}
