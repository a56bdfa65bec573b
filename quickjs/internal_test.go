package quickjs

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/loom-plugins/sandbox-cloudrun/effect"
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
// own would have made: its memory differs from a freshly set-up instance's
// only in the words in which two fresh set-ups differ too (Math.random's
// time-based seed, and the time the set-up read, left on the stack), and
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
	// the 8-byte words in which a and b differ
	words := func(a, b []byte) map[int]bool {
		if len(a) != len(b) {
			t.Fatalf("memories of %d and %d bytes", len(a), len(b))
		}
		w := map[int]bool{}
		for i := range a {
			if a[i] != b[i] {
				w[i/8] = true
			}
		}
		return w
	}
	var fresh [][]byte
	for range 3 {
		in, err := setUpInstance(ctx, e.rt, e.compiled, e.mem)
		if err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, memOf(in))
		in.close()
		time.Sleep(50 * time.Microsecond) // another time, another seed
	}
	timeWords := words(fresh[0], fresh[1])
	for w := range words(fresh[0], fresh[2]) {
		timeWords[w] = true
	}
	if len(timeWords) == 0 || len(timeWords) > 4 {
		t.Fatalf("fresh set-ups differ in %d words, want the seed and the time left on the stack", len(timeWords))
	}
	restored, err := newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
	if err != nil {
		t.Fatal(err)
	}
	got := words(memOf(restored), fresh[0])
	restored.close()
	for w := range got {
		if !timeWords[w] {
			t.Errorf("a restored instance differs from a fresh set-up at bytes %d..%d, where fresh set-ups agree", w*8, w*8+7)
		}
	}

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
			got[i], err = in.exec(context.WithValue(ctx, runStateKey{}, st), script, `{"a":[1,2]}`, 64<<20, DefaultCPUBudget, true)
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
		want         effect.Outcome
	}{
		{"after a refused allocation", `try { new Uint8Array(1 << 30) } catch (e) {} for (;;) {}`, true, effect.LimitHit(effect.LimitMemory)},
		{"with no refused allocation", `for (;;) {}`, false, effect.Infrastructure("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			afterOOM.Store(tc.afterOOM)
			out, err := e.Evaluate(ctx, effect.Request{Script: tc.script, InputJSON: "null",
				Limits: effect.Limits{WallClock: time.Minute, MemoryBytes: 16 << 20}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Kind != tc.want.Kind || out.Limit != tc.want.Limit {
				t.Fatalf("got %+v, want %+v", out, tc.want)
			}
			if out.Kind == effect.KindInfrastructure && !strings.Contains(out.Message, "a trap forced by the test") {
				t.Fatalf("the engine failure does not say why: %q", out.Message)
			}
		})
	}
}
