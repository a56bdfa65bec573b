package quickjs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
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
	e, err := New(ctx, WithMaxMemoryBytes(4<<20), WithPoolSize(0))
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
// so does an instance restored from the image, made earlier still; and
// scripts that read the global scope, the stack's depth, the allocator and
// the console behave identically in both.
func TestImageMatchesFreshSetUp(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, WithPoolSize(0))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	if err := e.compile(ctx); err != nil {
		t.Fatal(err)
	}
	memOf := func(in *instance) []byte {
		b, _ := in.mem.Read(0, in.mem.Size())
		return bytes.Clone(b)
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
	restored.close()

	scripts := []string{
		`Object.getOwnPropertyNames(globalThis).sort().join()`,
		`let d = 0; function f() { d++; f(); } try { f(); } catch (e) { d + " " + e.name + ": " + e.message }`,
		`const a = []; for (let i = 0; i < 1e5; i++) a.push({i, s: "x" + i}); JSON.stringify(a).length`,
		`console.log("hi"); typeof input + JSON.stringify(input)`,
	}
	for _, script := range scripts {
		var got [2]rawResult
		for i := range got {
			// an instance serves one run: a fresh pair per script
			var in *instance
			if i == 0 {
				in, err = setUpInstance(ctx, e.rt, e.compiled, e.mem)
			} else {
				in, err = newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
			}
			if err != nil {
				t.Fatal(err)
			}
			st := &runState{deadline: time.Now().Add(10 * time.Second)}
			got[i], err = in.exec(context.WithValue(ctx, runStateKey{}, st), script, `{"a":[1,2]}`, 64<<20, DefaultCPUBudget, true, 1)
			in.close()
			if err != nil {
				t.Fatal(err)
			}
		}
		if got[0].status != got[1].status || !bytes.Equal(got[0].result, got[1].result) || !bytes.Equal(got[0].logs, got[1].logs) {
			t.Errorf("%s:\nfresh    %d %s %q\nrestored %d %s %q", script, got[0].status, got[0].result, got[0].logs, got[1].status, got[1].result, got[1].logs)
		}
	}
}

// A guest that traps after an allocation was refused reached the memory
// limit through one of QuickJS's allocation-failure paths (an abort, a wild
// pointer: docs/security.md): the run is the memory limit, deterministically,
// never a retryable engine failure. A trap with no refused allocation is an
// engine failure. The engine at its pinned commit has no known script that
// traps so, so the test forces the trap: its sandbox.poll panics during a
// run (once an allocation was refused, when the case asks for one), which
// wazero turns into a trap of the guest.
func TestTrapAfterRefusedAllocationIsTheMemoryLimit(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, WithPoolSize(0))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	_ = e.rt.Close(ctx)
	e.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(uint32(LinearMemoryBytes(e.cfg.maxMemory)/wasmPage)))
	var afterOOM atomic.Bool
	trapping := func(ctx context.Context, mod api.Module, stack []uint64) {
		if ctx.Value(runStateKey{}) != nil {
			if !afterOOM.Load() {
				panic("a trap forced by the test")
			}
			in := &instance{mod: mod, mem: mod.Memory(), outcome: mod.ExportedFunction("sb_outcome")}
			if o, err := in.readOutcome(ctx); err == nil && o.oom {
				panic("a trap forced by the test")
			}
		}
		poll(ctx, mod, stack)
	}
	if err := instantiateHost(ctx, e.rt, trapping); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, script string
		afterOOM     bool
		want         spi.Outcome
	}{
		{"after a refused allocation", `try { new Uint8Array(1 << 30) } catch (e) {} for (;;) {}`, true, spi.LimitHit(spi.LimitMemory)},
		{"with no refused allocation", `for (;;) {}`, false, spi.Infrastructure("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			afterOOM.Store(tc.afterOOM)
			rep, err := e.Run(ctx, spi.RunRequest{Request: spi.Request{Script: tc.script, InputJSON: "null",
				Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20}}})
			if err != nil {
				t.Fatal(err)
			}
			out := rep.Outcome
			if out.Kind != tc.want.Kind || out.Limit != tc.want.Limit {
				t.Fatalf("got %+v, want %+v", out, tc.want)
			}
			if out.Kind == spi.KindInfrastructure && !strings.Contains(out.Message, "a trap forced by the test") {
				t.Fatalf("the engine failure does not say why: %q", out.Message)
			}
			// the memory limit at work is no fault of the engine; a trap
			// without a refused allocation is one
			if fault := out.Kind == spi.KindInfrastructure; (rep.EngineFault != "") != fault ||
				fault && rep.EngineFault != "a trap forced by the test (recovered by wazero)" {
				t.Fatalf("engine fault %q for %+v", rep.EngineFault, out)
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
		rep, err := (&Engine{}).toResult(context.Background(), execResult{err: tc.err}, 16<<20)
		if err != nil || rep.Outcome.Kind != tc.want.Kind || rep.Outcome.Limit != tc.want.Limit || rep.Outcome.Message != tc.want.Message || rep.EngineFault != tc.fault {
			t.Errorf("%q: %+v (engine fault %q), %v; want %+v and engine fault %q", tc.err, rep.Outcome, rep.EngineFault, err, tc.want, tc.fault)
		}
	}
}
