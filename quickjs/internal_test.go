package quickjs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// The wasm linear memory is capped whatever the guest asks for, so the host's
// memory is bounded even by allocations QuickJS does not count (the shim's own
// malloc of host buffers).
func TestLinearMemoryCap(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, CachedForTests(WithMaxMemoryBytes(4<<20), WithPoolSize(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	if err := e.compile(ctx); err != nil {
		t.Fatal(err)
	}
	in, err := newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	capBytes := uint64(4<<20 + wasmHeadroom)
	var got int
	for i := 0; i < 100; i++ {
		res, err := in.alloc.Call(ctx, 8<<20)
		if err != nil {
			t.Fatal(err)
		}
		if res[0] == 0 {
			break
		}
		got++
	}
	if size := uint64(in.mem.Size()); size > capBytes {
		t.Fatalf("linear memory grew to %d bytes, cap %d", size, capBytes)
	}
	if got == 0 || got >= 100 {
		t.Fatalf("%d allocations of 8 MiB succeeded; the cap did not bind", got)
	}
	if _, ok := in.mem.Grow(1 << 14); ok {
		t.Fatal("memory.grow past the cap succeeded")
	}
}

// An instance restored from the set-up image is the instance a set-up of its
// own would have made: the set-up reads no clock (clockTimeGet), so two fresh
// set-ups, made at different times, have the same memory byte for byte, and
// so does an instance restored from the image, made earlier still, and one
// reset to it after a run; and scripts that read the global scope, the
// stack's depth, the allocator and the console behave identically in all.
// The image holds no dead stack: a set-up's frames, below the stack pointer
// once it returned, are zeros in it.
func TestImageMatchesFreshSetUp(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, CachedForTests(WithPoolSize(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	if err := e.compile(ctx); err != nil {
		t.Fatal(err)
	}
	memOf := func(in *instance) []byte {
		b, _ := in.mem.Read(0, in.mem.Size())
		b = bytes.Clone(b)
		clear(b[:e.image.stack]) // the set-up's dead frames
		return b
	}
	// where a and b differ, as byte ranges
	differ := func(a, b []byte) []string {
		if len(a) != len(b) {
			t.Fatalf("memories of %d and %d bytes", len(a), len(b))
		}
		var at []string
		for i := 0; i < len(a); i++ {
			if a[i] == b[i] {
				continue
			}
			j := i
			for j+1 < len(a) && a[j+1] != b[j+1] {
				j++
			}
			at = append(at, fmt.Sprintf("%d..%d", i, j))
			i = j
		}
		return at
	}
	var fresh [][]byte
	for i := range 2 {
		if i > 0 {
			// another second, another microsecond: what a seed read from
			// the clock would differ in
			time.Sleep(1100 * time.Millisecond)
		}
		in, err := setUpInstance(ctx, e.rt, e.compiled, e.mem)
		if err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, memOf(in))
		in.close()
	}
	if at := differ(fresh[0], fresh[1]); len(at) > 0 {
		t.Errorf("two fresh set-ups differ at bytes %v", at)
	}
	restored, err := newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
	if err != nil {
		t.Fatal(err)
	}
	if at := differ(memOf(restored), fresh[0]); len(at) > 0 {
		t.Errorf("a restored instance differs from a fresh set-up at bytes %v", at)
	}
	st := &runState{deadline: time.Now().Add(10 * time.Second)}
	if _, err := restored.exec(context.WithValue(ctx, runStateKey{}, st), `globalThis.x = "x".repeat(1 << 20); x.length`, `[1]`, 64<<20, 0, true, 1); err != nil {
		t.Fatal(err)
	}
	if !e.image.reset(restored) {
		t.Fatal("the instance could not be reset")
	}
	if got := memOf(restored); len(got) < len(fresh[0]) || !isZero(got[len(fresh[0]):]) {
		t.Error("memory above the image is not zeros after a reset")
	} else if at := differ(got[:len(fresh[0])], fresh[0]); len(at) > 0 {
		t.Errorf("a reset instance differs from a fresh set-up at bytes %v", at)
	}
	restored.close()

	scripts := []string{
		`Object.getOwnPropertyNames(globalThis).sort().join()`,
		`let d = 0; function f() { d++; f(); } try { f(); } catch (e) { d + " " + e.name + ": " + e.message }`,
		`const a = []; for (let i = 0; i < 1e5; i++) a.push({i, s: "x" + i}); JSON.stringify(a).length`,
		`console.log("hi"); typeof input + JSON.stringify(input)`,
	}
	// one instance reset after each run serves the third of each
	reused, err := newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { reused.close() }()
	for _, script := range scripts {
		var got [3]rawResult
		for i := range got {
			var in *instance
			switch i {
			case 0:
				in, err = setUpInstance(ctx, e.rt, e.compiled, e.mem)
			case 1:
				in, err = newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
			default:
				in = reused
			}
			if err != nil {
				t.Fatal(err)
			}
			st := &runState{deadline: time.Now().Add(10 * time.Second)}
			got[i], err = in.exec(context.WithValue(ctx, runStateKey{}, st), script, `{"a":[1,2]}`, 64<<20, DefaultCPUBudget, true, 1)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case in != reused:
				in.close()
			case e.image.reset(in):
			case in.mem.Size() > resetMaxBytes:
				// grown past what is reset: closed, as the engine does
				in.close()
				if reused, err = newInstance(ctx, e.rt, e.compiled, e.mem, e.image); err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatal("the instance could not be reset")
			}
		}
		for i, name := range []string{"restored", "reset"} {
			if a, b := got[0], got[i+1]; a.status != b.status || !bytes.Equal(a.result, b.result) || !bytes.Equal(a.logs, b.logs) {
				t.Errorf("%s:\nfresh    %d %s %q\n%-8s %d %s %q", script, a.status, a.result, a.logs, name, b.status, b.result, b.logs)
			}
		}
	}
}

// QuickJS stopping itself (abort or a failed assertion: the trap
// "unreachable") after an allocation was refused reached the memory limit
// through one of its allocation-failure paths that give up: the run is the
// memory limit, deterministically, never a retryable engine failure. Any
// other trap after a refused allocation is an access outside the guest's
// memory, and a trap with no refused allocation is a trap: both are engine
// faults. The engine at its pinned commit has no known script that traps
// so, so the test forces the trap: its sandbox.poll traps during a run
// (once an allocation was refused, when the case asks for one), by running
// the unreachable instruction (WithTrapForTests) or by a panic of the host
// function, which wazero turns into a trap of another kind.
func TestTrapAfterRefusedAllocationIsTheMemoryLimit(t *testing.T) {
	ctx := context.Background()
	const oomFirst = `try { new Uint8Array(1 << 30) } catch (e) {} for (;;) {}`
	run := func(t *testing.T, e *Engine, script string) spi.Report {
		t.Helper()
		rep, err := e.Run(ctx, spi.RunRequest{Request: spi.Request{Script: script, InputJSON: "null",
			Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20}}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	// an engine whose sandbox.poll, when trap says so, runs unreachable
	// (trappingSandbox: abort) or panics, which wazero makes a trap of
	// another kind
	engine := func(t *testing.T, trap func(context.Context, api.Module) bool, abort bool) *Engine {
		t.Helper()
		e, err := New(ctx, CachedForTests(WithPoolSize(0))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close(ctx) })
		_ = e.rt.Close(ctx)
		cache, err := wazero.NewCompilationCacheWithDir(testCacheDir)
		if err != nil {
			t.Fatal(err)
		}
		e.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().
			WithMemoryLimitPages(uint32(LinearMemoryBytes(e.cfg.maxMemory)/wasmPage)).WithCompilationCache(cache))
		pollFn := func(ctx context.Context, mod api.Module, stack []uint64) {
			if ctx.Value(runStateKey{}) != nil && trap(ctx, mod) {
				if abort {
					stack[0] = pollTrap
					return
				}
				panic("a trap forced by the test")
			}
			poll(ctx, mod, stack)
		}
		instantiate := instantiateHost
		if abort {
			instantiate = instantiateTrappingHost
		}
		if err := instantiate(ctx, e.rt, pollFn); err != nil {
			t.Fatal(err)
		}
		return e
	}
	always := func(context.Context, api.Module) bool { return true }
	afterOOM := func(ctx context.Context, mod api.Module) bool {
		in := &instance{mod: mod, mem: mod.Memory(), outcome: mod.ExportedFunction("sb_outcome")}
		o, err := in.readOutcome(ctx)
		return err == nil && o.oom
	}
	t.Run("an abort after a refused allocation", func(t *testing.T) {
		// trappingSandbox's poll has no memory to read the flag from: the
		// tenth poll is in oomFirst's loop, after the refusal
		polls := 0
		tenth := func(context.Context, api.Module) bool { polls++; return polls >= 10 }
		rep := run(t, engine(t, tenth, true), oomFirst)
		if rep.Outcome.Kind != spi.KindLimit || rep.Outcome.Limit != spi.LimitMemory || rep.EngineFault != "" {
			t.Fatalf("got %+v, fault %q: want the memory limit, no fault", rep.Outcome, rep.EngineFault)
		}
	})
	t.Run("an abort with no refused allocation", func(t *testing.T) {
		rep := run(t, engine(t, always, true), `for (;;) {}`)
		if rep.Outcome.Kind != spi.KindInfrastructure || rep.EngineFault != "wasm error: unreachable" {
			t.Fatalf("got %+v, fault %q: want an engine fault", rep.Outcome, rep.EngineFault)
		}
	})
	for _, tc := range []struct {
		name, script string
		trap         func(context.Context, api.Module) bool
	}{
		{"another trap after a refused allocation", oomFirst, afterOOM},
		{"another trap with no refused allocation", `for (;;) {}`, always},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := run(t, engine(t, tc.trap, false), tc.script)
			if out := rep.Outcome; out.Kind != spi.KindInfrastructure || !strings.Contains(out.Message, "a trap forced by the test") {
				t.Fatalf("got %+v, want an engine failure that says why", out)
			}
			if rep.EngineFault != "a trap forced by the test (recovered by wazero)" {
				t.Fatalf("engine fault %q", rep.EngineFault)
			}
		})
	}
}

// Only the guest's own failure is an engine fault: a guest ended from
// outside (sys.ExitError, what terminating it at its hard kill gives) is
// the wall clock, and a host buffer the guest could not hold is the input
// too large; any other error of the guest's call is a fault, with its first
// line as the trap's text.
func TestOnlyTheGuestsFailureIsAnEngineFault(t *testing.T) {
	for _, tc := range []struct {
		err   error
		want  spi.Outcome
		fault string
	}{
		{sys.NewExitError(sys.ExitCodeDeadlineExceeded), spi.LimitHit(spi.LimitWallClock), ""},
		{sys.NewExitError(sys.ExitCodeContextCanceled), spi.LimitHit(spi.LimitWallClock), ""},
		{fmt.Errorf("copy input in: %w", errGuestMemory), spi.InputTooLarge(), ""},
		{errors.New("wasm error: out of bounds memory access\nwasm stack trace:\n\t.sb_run(i32,i32)"),
			spi.Infrastructure("quickjs: engine failed: wasm error: out of bounds memory access"), "wasm error: out of bounds memory access"},
		{fmt.Errorf("copy script in: %w", errors.New("wasm error: unreachable\nwasm stack trace:\n\t.sb_alloc(i32)")),
			spi.Infrastructure("quickjs: engine failed: copy script in: wasm error: unreachable"), "copy script in: wasm error: unreachable"},
	} {
		rep, err := (&Engine{}).toResult(context.Background(), execResult{err: tc.err}, &runState{}, 16<<20)
		if err != nil || rep.Outcome.Kind != tc.want.Kind || rep.Outcome.Limit != tc.want.Limit || rep.Outcome.Message != tc.want.Message || rep.EngineFault != tc.fault {
			t.Errorf("%q: %+v (engine fault %q), %v; want %+v and engine fault %q", tc.err, rep.Outcome, rep.EngineFault, err, tc.want, tc.fault)
		}
	}
}

// A run that ended with the script's own outcome once its deadline had
// passed is the wall-clock limit, its value and its exception alike, and
// keeps its console output; one that ended before keeps its outcome, to the
// nanosecond. What the run hit first (a limit) or never reached (an input
// that did not fit) is not the script's outcome and stays as it was.
func TestNoScriptOutcomeAfterTheDeadline(t *testing.T) {
	deadline := time.Now()
	st := &runState{deadline: deadline}
	name := "Error"
	for _, tc := range []struct {
		what   string
		raw    rawResult
		before spi.Outcome // ended a nanosecond before the deadline
	}{
		{"a value", rawResult{status: statusOK, result: []byte(`"late"`)}, spi.OK([]byte(`"late"`))},
		{"an exception", rawResult{status: statusThrew, result: []byte("boom"), name: []byte(name), hasName: true}, spi.Threw(&name, "boom")},
		{"the memory limit", rawResult{status: statusLimitMemory}, spi.LimitHit(spi.LimitMemory)},
		{"the cpu limit", rawResult{status: statusLimitCPU}, spi.LimitHit(spi.LimitCPU)},
		{"an input that did not fit", rawResult{status: statusInputTooLarge}, spi.InputTooLarge()},
	} {
		t.Run(tc.what, func(t *testing.T) {
			tc.raw.logs = []byte("[log] said before the end\n")
			after := tc.before
			if tc.raw.status == statusOK || tc.raw.status == statusThrew {
				after = spi.LimitHit(spi.LimitWallClock)
			}
			for _, c := range []struct {
				returned time.Time
				want     spi.Outcome
			}{
				{deadline.Add(-time.Nanosecond), tc.before},
				{deadline, after},
				{deadline.Add(time.Second), after},
			} {
				raw := tc.raw
				raw.returned = c.returned
				rep, err := (&Engine{}).toResult(context.Background(), execResult{raw: raw}, st, 16<<20)
				got := rep.Outcome
				if err != nil || got.OK != c.want.OK || string(got.Value) != string(c.want.Value) || got.Kind != c.want.Kind ||
					got.Limit != c.want.Limit || got.Message != c.want.Message || (got.Name == nil) != (c.want.Name == nil) {
					t.Errorf("returned %v after the deadline: %+v, %v; want %+v", c.returned.Sub(deadline), got, err, c.want)
				}
				if rep.Logs != string(tc.raw.logs) {
					t.Errorf("returned %v after the deadline: logs %q, want %q", c.returned.Sub(deadline), rep.Logs, tc.raw.logs)
				}
			}
		})
	}
}

// A run that recursed deep leaves its instance new call handles, so that
// the native stack it grew is not held for the instance's life; a shallow
// run keeps them, which costs nothing. The check reads the shadow stack
// the run left, before the reset clears it.
func TestDeepRunRenewsTheCallHandles(t *testing.T) {
	ctx := context.Background()
	e := testEngine(t, DefaultMaxMemoryBytes)
	in := e.testInstance(t)
	for _, tc := range []struct {
		name, script string
		deep         bool
	}{
		{"shallow", `input.a.map(x => x + 1)`, false},
		{"a recursion to the engine's bound", `function f(n) { return f(n + 1) + 1 } f(0)`, true},
		{"shallow again, after the reset", `[1, 2].length`, false},
		{"a recursion 200 calls deep", `function g(n) { return n ? g(n - 1) + 1 : 0 } g(200)`, true},
	} {
		st := &runState{deadline: time.Now().Add(30 * time.Second)}
		if _, err := in.exec(context.WithValue(ctx, runStateKey{}, st), tc.script, `{"a":[1,2]}`, 64<<20, DefaultCPUBudget, false, 1); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := e.image.wentDeep(in); got != tc.deep {
			t.Errorf("%s: went deep %v, want %v", tc.name, got, tc.deep)
		}
		if !e.image.reset(in) {
			t.Fatalf("%s: reset refused", tc.name)
		}
	}
}
