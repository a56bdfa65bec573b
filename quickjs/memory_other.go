//go:build !linux

package quickjs

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is nil off Linux: wazero's default, Go-heap memory.
func memoryAllocator() experimental.MemoryAllocator { return nil }
