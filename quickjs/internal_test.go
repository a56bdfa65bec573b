package quickjs

import (
	"context"
	"testing"
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
	in, err := newInstance(ctx, e.rt, e.compiled, e.mem)
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
