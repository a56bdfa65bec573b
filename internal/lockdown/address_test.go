package lockdown

import "testing"

func TestAddressSpaceFor(t *testing.T) {
	if got := LinearMemoryBytes(256 << 20); got != 320<<20 {
		t.Errorf("LinearMemoryBytes(256 MiB) = %d, want 320 MiB", got)
	}
	if got := LinearMemoryBytes(1<<20 + 1); got != 65<<20+64<<10 {
		t.Errorf("LinearMemoryBytes(1 MiB + 1) = %d, want rounded up to a wasm page", got)
	}
	want := 6*uint64(320<<20) + RuntimeMargin + cMargin()
	if got := AddressSpaceFor(256<<20, 6); got != want {
		t.Errorf("AddressSpaceFor(256 MiB, 6) = %d, want %d", got, want)
	}
}
