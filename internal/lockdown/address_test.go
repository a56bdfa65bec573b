package lockdown

import "testing"

func TestAddressSpaceFor(t *testing.T) {
	want := 6*uint64(320<<20) + RuntimeMargin + cMargin()
	if got := AddressSpaceFor(320<<20, 6); got != want {
		t.Errorf("AddressSpaceFor(320 MiB, 6) = %d, want %d", got, want)
	}
}
