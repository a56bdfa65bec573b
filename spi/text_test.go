package spi_test

import (
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

func TestBoundText(t *testing.T) {
	lone := "\xed\xa0\x80"    // WTF-8 lone high surrogate
	loneLow := "\xed\xb0\x80" // WTF-8 lone low surrogate
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short and clean", "hello", 10, "hello"},
		{"cut ASCII", "hello", 3, "hel"},
		{"units, not bytes", "ééé", 2, "éé"},
		{"pair fits", "ab😀", 4, "ab😀"},
		{"pair never split", "ab😀c", 3, "ab"},
		{"NUL", "a\x00b", 10, "a\uFFFDb"},
		{"lone high surrogate is one U+FFFD", "a" + lone + "b", 10, "a\uFFFDb"},
		{"lone low surrogate", loneLow + "b", 10, "\uFFFDb"},
		{"surrogate halves encoded apart stay lone", lone + loneLow, 10, "\uFFFD\uFFFD"},
		{"invalid byte", "a\xffb", 10, "a\uFFFDb"},
		{"truncated sequence", "a\xe2\x82", 10, "a\uFFFD\uFFFD"},
		{"U+FFFD kept", "\uFFFD", 1, "\uFFFD"},
		{"replacement counts one unit", lone + lone + "x", 2, "\uFFFD\uFFFD"},
		{"zero max", "abc", 0, ""},
		{"negative max", "abc", -1, ""},
		{"empty", "", 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := spi.BoundText(tc.in, tc.max); got != tc.want {
				t.Errorf("BoundText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
	t.Run("5 MB", func(t *testing.T) {
		got := spi.BoundText(strings.Repeat("x😀\x00", 2<<20), spi.MaxMessageUnits)
		if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 {
			t.Errorf("not storable: %q…", got[:64])
		}
		if n := len(utf16.Encode([]rune(got))); n != 2048 {
			t.Errorf("%d units, want 2048", n)
		}
	})
	t.Run("clean text is not copied", func(t *testing.T) {
		s := strings.Repeat("ok ", 100)
		if n := testing.AllocsPerRun(100, func() { _ = spi.BoundText(s, 2048) }); n != 0 {
			t.Errorf("%v allocations", n)
		}
	})
}
