//go:build !linux

package quickjs

import "github.com/tetratelabs/wazero/experimental"

// memoryPool is empty off Linux: guests get wazero's default, Go-heap memory.
type memoryPool struct{}

func newMemoryPool(int) *memoryPool { return &memoryPool{} }

func (*memoryPool) allocator() experimental.MemoryAllocator { return nil }

func (*memoryPool) close() {}

func (*memoryPool) kept() int { return 0 }

func (*memoryPool) reuses() int { return 0 }

// discardPages makes b read as zeros.
func discardPages(b []byte) { clear(b) }

// allocOffHeap, sealOffHeap and freeOffHeap are memory_linux.go's; here
// the bytes are the Go heap's, and are not sealed.
func allocOffHeap(n int) ([]byte, error) { return make([]byte, n), nil }

func sealOffHeap([]byte) error { return nil }

func freeOffHeap([]byte) {}
