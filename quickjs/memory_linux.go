package quickjs

import (
	"sync"
	"syscall"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryPool backs each guest's linear memory with its own anonymous mapping,
// reserved at the memory's maximum and committed by the kernel page by page
// as the guest touches it. Outside the Go heap, growing it never copies and
// never allocates, so a guest that grows its memory neither pays for copies
// nor triggers a garbage collection: a collection that starts while a guest
// runs native code must wait for the guest to return, and stalls every
// goroutine meanwhile (docs/hard-kill.md).
//
// Mappings are recycled. When an instance closes, its mapping is zeroed over
// every byte its guest could ever reach (the largest size wazero gave it:
// the guest's loads and stores are bounds-checked against the current size,
// and the host reads and writes only through the slices wazero hands out)
// and kept for the next instance, which then starts on pages already mapped
// instead of taking a page fault on each page it touches, which costs far
// more than clearing the pages (docs/benchmarks.md has the figures). A next
// guest therefore sees exactly what a fresh mapping shows, zeros, under its
// own data segments. The zeroing runs when the instance closes, after its
// result was delivered. Mappings whose guest grew past recycleMaxBytes are
// unmapped, and a kept one stays resident only over its first
// recycleResidentBytes.
type memoryPool struct {
	mu     sync.Mutex
	free   []*mmapMemory
	keep   int
	closed bool
	reused int // mappings handed out again
}

// recycleMaxBytes is the largest high-water size of a mapping that is kept.
const recycleMaxBytes = 8 << 20

func newMemoryPool(keep int) *memoryPool { return &memoryPool{keep: keep} }

// allocator is what instantiation is given.
func (p *memoryPool) allocator() experimental.MemoryAllocator { return p }

// Allocate implements experimental.MemoryAllocator.
func (p *memoryPool) Allocate(_, max uint64) experimental.LinearMemory {
	if max == 0 || max > 4<<30 {
		return nil
	}
	p.mu.Lock()
	for i, m := range p.free {
		if uint64(len(m.res)) == max {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.reused++
			p.mu.Unlock()
			m.buf = m.res
			return m
		}
	}
	p.mu.Unlock()
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return &mmapMemory{pool: p, buf: b, res: b}
}

// recycleResidentBytes is how much of a kept mapping stays resident: the
// first bytes, which every instance uses (the 1 MiB stack and the set-up's
// heap are 1.25 MiB), are zeroed in place; the rest is handed back to the
// kernel with MADV_DONTNEED, after which it reads as zeros again (a private
// anonymous mapping is refilled from the zero page), so a kept mapping holds
// at most this much memory whatever its last guest grew to.
const recycleResidentBytes = 2 << 20

// hasRoom reports whether a freed mapping would be kept now.
func (p *memoryPool) hasRoom() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && len(p.free) < p.keep
}

// release takes back a freed mapping: zeroed and kept, or unmapped. One that
// will not be kept is not zeroed first; room is checked again after the
// zeroing, since another release may have taken it meanwhile.
func (p *memoryPool) release(m *mmapMemory) {
	if m.high <= recycleMaxBytes && p.hasRoom() {
		resident := min(m.high, recycleResidentBytes)
		clear(m.res[:resident])
		if m.high > resident {
			if err := syscall.Madvise(m.res[resident:m.high], syscall.MADV_DONTNEED); err != nil {
				clear(m.res[resident:m.high])
			}
		}
		m.high = 0
		p.mu.Lock()
		if !p.closed && len(p.free) < p.keep {
			p.free = append(p.free, m)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	_ = syscall.Munmap(m.res)
	m.res = nil
}

// close unmaps the kept mappings; mappings freed later are unmapped at once.
func (p *memoryPool) close() {
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	for _, m := range free {
		_ = syscall.Munmap(m.res)
		m.res = nil
	}
}

// kept is the number of mappings waiting for reuse.
func (p *memoryPool) kept() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// reuses is the number of mappings handed out again.
func (p *memoryPool) reuses() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reused
}

type mmapMemory struct {
	pool *memoryPool
	buf  []byte // what the guest may use now; nil once freed
	res  []byte // the whole reservation
	high uint64 // the largest size the guest was given
}

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	m.high = max(m.high, size)
	return m.buf[:size:size]
}

func (m *mmapMemory) Free() {
	if m.buf == nil {
		return
	}
	m.buf = nil
	m.pool.release(m)
}

// discardPages makes b, whole pages of a guest's memory, read as zeros by
// handing them back to the kernel: a private anonymous mapping reads as
// zeros where it holds no page, and a page touched again is a new one. It
// costs nothing for the pages no one touched, where clearing would write
// them all. Clears b when the kernel refuses.
func discardPages(b []byte) {
	if len(b) == 0 {
		return
	}
	if uintptr(unsafe.Pointer(&b[0]))%imagePage != 0 || len(b)%imagePage != 0 ||
		syscall.Madvise(b, syscall.MADV_DONTNEED) != nil {
		clear(b)
	}
}

// allocOffHeap maps n bytes, rounded up to whole pages, outside the Go
// heap, for a kept compiled script (scripts.go): held there, a cache of
// tens of MiB adds nothing to the heap the collector paces itself by, and
// the bytes can be sealed read-only once written (sealOffHeap).
func allocOffHeap(n int) ([]byte, error) {
	n = (n + imagePage - 1) / imagePage * imagePage
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// sealOffHeap makes b, from allocOffHeap, read-only: a write to it faults.
func sealOffHeap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return syscall.Mprotect(b, syscall.PROT_READ)
}

// freeOffHeap unmaps b, from allocOffHeap.
func freeOffHeap(b []byte) {
	if len(b) > 0 {
		_ = syscall.Munmap(b)
	}
}
