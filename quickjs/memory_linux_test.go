package quickjs

import (
	"bytes"
	"context"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// A recycled mapping is indistinguishable from a fresh one: zero over the
// whole reservation, whatever the previous guest wrote and however far it
// grew.
func TestRecycledMemoryIsZero(t *testing.T) {
	const max = 16 << 20
	p := newMemoryPool(2)
	defer p.close()
	m := p.Allocate(0, max).(*mmapMemory)
	first := &m.res[0]
	b := m.Reallocate(1 << 20)
	for i := range b {
		b[i] = 0xAB
	}
	b = m.Reallocate(3 << 20) // the guest grew; its last size is its largest
	for i := range b {
		b[i] = 0xCD
	}
	m.Free()
	if p.kept() != 1 {
		t.Fatalf("%d mappings kept after a free, want 1", p.kept())
	}
	m2 := p.Allocate(0, max).(*mmapMemory)
	if &m2.res[0] != first {
		t.Fatal("the freed mapping was not reused; the test proves nothing")
	}
	if p.kept() != 0 {
		t.Fatalf("%d mappings kept after reuse, want 0", p.kept())
	}
	all := m2.Reallocate(max)
	if i := bytes.IndexFunc(all, func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("recycled memory holds a non-zero byte at %d", i)
	}
	if n := bytes.Count(all, []byte{0}); n != max {
		t.Fatalf("recycled memory: %d zero bytes of %d", n, max)
	}
	m2.Free()
}

// resident counts the pages of b the kernel holds in memory (mincore).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+4095)/4096)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestMemoryPoolBounds(t *testing.T) {
	const max = 64 << 20
	t.Run("a kept mapping stays resident only over its first pages", func(t *testing.T) {
		p := newMemoryPool(2)
		defer p.close()
		m := p.Allocate(0, max).(*mmapMemory)
		b := m.Reallocate(6 << 20)
		for i := range b {
			b[i] = 1
		}
		m.Free()
		if p.kept() != 1 {
			t.Fatalf("kept %d", p.kept())
		}
		if n, limit := resident(t, m.res), recycleResidentBytes/4096; n > limit {
			t.Fatalf("%d pages resident after the free, want at most %d", n, limit)
		}
	})
	t.Run("a guest that grew past the recycling size is unmapped", func(t *testing.T) {
		p := newMemoryPool(2)
		defer p.close()
		m := p.Allocate(0, max).(*mmapMemory)
		m.Reallocate(recycleMaxBytes + 65536)
		m.Free()
		if p.kept() != 0 || m.res != nil {
			t.Fatalf("kept %d, reservation still mapped: %v", p.kept(), m.res != nil)
		}
	})
	t.Run("at most keep mappings are kept", func(t *testing.T) {
		p := newMemoryPool(2)
		defer p.close()
		var ms []*mmapMemory
		for range 3 {
			m := p.Allocate(0, max).(*mmapMemory)
			m.Reallocate(1 << 20)
			ms = append(ms, m)
		}
		for _, m := range ms {
			m.Free()
		}
		if p.kept() != 2 || ms[2].res != nil {
			t.Fatalf("kept %d, the third still mapped: %v", p.kept(), ms[2].res != nil)
		}
	})
	t.Run("after close nothing is kept", func(t *testing.T) {
		p := newMemoryPool(2)
		a := p.Allocate(0, max).(*mmapMemory)
		b := p.Allocate(0, max).(*mmapMemory)
		a.Reallocate(1 << 20)
		b.Reallocate(1 << 20)
		a.Free()
		p.close()
		b.Free()
		if p.kept() != 0 || a.res != nil || b.res != nil {
			t.Fatalf("kept %d after close; unmapped: %v %v", p.kept(), a.res == nil, b.res == nil)
		}
	})
	t.Run("a reservation of another size is not reused", func(t *testing.T) {
		p := newMemoryPool(2)
		defer p.close()
		m := p.Allocate(0, max).(*mmapMemory)
		m.Reallocate(1 << 20)
		m.Free()
		o := p.Allocate(0, max/2).(*mmapMemory)
		defer o.Free()
		if uint64(len(o.res)) != max/2 || p.kept() != 1 {
			t.Fatalf("got a reservation of %d bytes, kept %d", len(o.res), p.kept())
		}
	})
}

// The engine recycles: the instances whose run ended are reset and serve
// the next runs, and the runs still see fresh state; their memories go back
// to the pool when the engine closes.
func TestEngineRecyclesMemory(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, CachedForTests(WithPoolSize(1))...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	l := spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 32 << 20}
	for i := range 5 {
		out, err := e.Evaluate(ctx, spi.Request{
			Script:    `const seen = globalThis.mark; globalThis.mark = 1; const s = "x".repeat(1 << 20); [seen === undefined, s.length]`,
			InputJSON: "null", Limits: l})
		if err != nil || !out.OK || string(out.Value) != "[true,1048576]" {
			t.Fatalf("run %d: %+v %v", i, out, err)
		}
		// the pool's filler resets each run's instance for a next run; on
		// a busy machine it may come to it after the run's answer, so it is
		// waited for (a filler too far behind closes what it has no room
		// for, which the next run would then not find reset)
		for deadline := time.Now().Add(30 * time.Second); e.recycled.Load() < int64(i+1); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("run %d's instance was not reset for another run: %d resets after %d runs", i, e.recycled.Load(), i+1)
			}
		}
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if e.mem.kept() != 0 {
		t.Fatalf("%d mappings kept after Close", e.mem.kept())
	}
}
