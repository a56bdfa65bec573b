package spi

import (
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// FuzzBoundText: the result is storable, within the bound, and a prefix of
// the unbounded scrub, so truncation only ever drops whole characters from
// the end. Seeds: testdata/fuzz/FuzzBoundText.
func FuzzBoundText(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 4096
		got := BoundText(s, max)
		if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("not storable: %q", got)
		}
		if n := len(utf16.Encode([]rune(got))); n > max && n > 0 {
			t.Fatalf("%d units over %d", n, max)
		}
		full := BoundText(s, 2*len(s)+1)
		if !strings.HasPrefix(full, got) {
			t.Fatalf("%q is not a prefix of %q", got, full)
		}
	})
}
