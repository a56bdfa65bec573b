package quickjs_test

import (
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
)

// A guest's linear memory reserves the maximum memory limit and the fixed
// headroom, in whole wasm pages: the figure a worker's address-space limit
// is built from (internal/lockdown.AddressSpaceFor).
func TestLinearMemoryBytes(t *testing.T) {
	if got := quickjs.LinearMemoryBytes(256 << 20); got != 320<<20 {
		t.Errorf("LinearMemoryBytes(256 MiB) = %d, want 320 MiB", got)
	}
	if got := quickjs.LinearMemoryBytes(1<<20 + 1); got != 65<<20+64<<10 {
		t.Errorf("LinearMemoryBytes(1 MiB + 1) = %d, want rounded up to a wasm page", got)
	}
}
