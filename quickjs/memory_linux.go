package quickjs

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapAllocator backs each guest's linear memory with its own anonymous
// mapping, reserved at the memory's maximum and committed by the kernel page
// by page as the guest touches it. Outside the Go heap, growing it never
// copies and never allocates, so a guest that grows its memory neither pays
// for copies nor triggers a garbage collection: a collection that starts
// while a guest runs native code must wait for the guest to return, and
// stalls every goroutine meanwhile (docs/hard-kill.md). The mapping is
// released when the instance closes.
type mmapAllocator struct{}

func (mmapAllocator) Allocate(_, max uint64) experimental.LinearMemory {
	if max == 0 || max > 4<<30 {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return &mmapMemory{buf: b}
}

type mmapMemory struct{ buf []byte }

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

func (m *mmapMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}

func memoryAllocator() experimental.MemoryAllocator { return mmapAllocator{} }
