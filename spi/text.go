package spi

import (
	"strings"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// Bounds on script-authored and error text (docs/spi.md, "Bounds"), in UTF-16
// code units because that is how loom's TypeScript side measures the same
// text.
const (
	MaxNameUnits    = 128
	MaxMessageUnits = 2048
)

// BoundText makes s storable and bounded: at most maxUnits UTF-16 code units,
// cut only between characters so that a surrogate pair is never split, with
// NUL and every lone surrogate replaced by U+FFFD.
//
// Why: the text lands in an append-only log and in Postgres jsonb, which
// rejects NUL and unpaired surrogates, and it is authored by a script (often a
// model), so it may be any size. In Go a lone surrogate arrives either as the
// WTF-8 bytes an engine writes for it (ED A0..BF xx, one U+FFFD) or as any
// other invalid UTF-8 byte (one U+FFFD per byte).
func BoundText(s string, maxUnits int) string {
	if maxUnits <= 0 {
		return ""
	}
	// Valid UTF-8 never takes fewer bytes than UTF-16 units, so short clean
	// text needs no copy.
	if len(s) <= maxUnits && utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), 3*maxUnits))
	units := 0
	for i := 0; i < len(s); {
		r, size := jsontext.DecodeWTF8(s[i:])
		clean := r != 0 && !(r >= 0xD800 && r < 0xE000) && !(r == utf8.RuneError && size == 1)
		n := 1
		if r >= 0x10000 {
			n = 2
		}
		if units+n > maxUnits {
			break
		}
		units += n
		if clean {
			b.WriteString(s[i : i+size])
		} else {
			b.WriteRune(utf8.RuneError)
		}
		i += size
	}
	return b.String()
}
