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
