package jsontext

import (
	"bytes"
	"cmp"
	"math"
	"strconv"
	"unicode/utf8"
)

// FormatNumber writes f as ECMAScript's Number::toString does, which is also
// RFC 8785's number serialisation. Non-finite values, which JSON cannot carry,
// become null, as in JSON.stringify.
func FormatNumber(f float64) string {
	var buf [32]byte
	return string(AppendNumber(buf[:0], f))
}

// AppendNumber appends f as FormatNumber writes it. It allocates nothing
// beyond dst's growth, for writers that format every number of a text.
func AppendNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0') // both zeros, as in ECMAScript
	}
	if f < 0 {
		dst, f = append(dst, '-'), -f
	}
	// Shortest round-tripping digits d1…dk and exponent e, f = d1.d2…dk × 10^e.
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	at := bytes.IndexByte(s, 'e')
	var digitBuf [24]byte
	digits := append(digitBuf[:0], s[0])
	if at > 1 {
		digits = append(digits, s[2:at]...) // after "d."
	}
	e := 0
	for _, c := range s[at+2:] { // after "e+" or "e-"
		e = 10*e + int(c-'0')
	}
	if s[at+1] == '-' {
		e = -e
	}
	k := len(digits)
	n := e + 1 // ECMAScript's n: f = 0.d1…dk × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(append(append(dst, digits[:n]...), '.'), digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(append(dst, '.'), digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// AppendQuote appends s (WTF-8) as a JSON string literal escaped as RFC 8785
// and ECMAScript's JSON.stringify escape it: '"' and '\\', the short escapes
// \b \t \n \f \r, other controls below U+0020 as lowercase \u00xx, and
// everything else literally — except a lone surrogate, which I-JSON forbids and
// JCS therefore leaves undefined, and which is written as a lowercase \udxxx
// escape exactly as well-formed JSON.stringify (ES2019) writes it. Bytes that
// are not WTF-8 are written as U+FFFD; the parser never produces them.
// shortEscapes holds the letter of each control character's short escape.
var shortEscapes = [0x20]byte{'\b': 'b', '\t': 't', '\n': 'n', '\f': 'f', '\r': 'r'}

func AppendQuote(buf []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c < 0x20 && shortEscapes[c] != 0:
				buf = append(buf, '\\', shortEscapes[c])
			case c < 0x20:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := DecodeWTF8(s[i:])
		switch {
		case r >= 0xD800 && r < 0xE000:
			buf = append(buf, '\\', 'u', hexDigits[r>>12], hexDigits[(r>>8)&0xF], hexDigits[(r>>4)&0xF], hexDigits[r&0xF])
		case r == utf8.RuneError && size == 1:
			buf = utf8.AppendRune(buf, utf8.RuneError)
		default:
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return append(buf, '"')
}

// DecodeWTF8 decodes the first code point of s. It is utf8.DecodeRuneInString
// except that the three-byte encoding of a surrogate (ED A0..BF 80..BF), which
// UTF-8 forbids and WTF-8 uses for a lone surrogate, decodes to that surrogate.
// Any other invalid byte gives (utf8.RuneError, 1).
func DecodeWTF8(s string) (rune, int) {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 && len(s) >= 3 && s[0] == 0xED &&
		s[1] >= 0xA0 && s[1] <= 0xBF && s[2]&0xC0 == 0x80 {
		return 0xD000 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), 3
	}
	return r, size
}

// ValidWTF8 reports whether s is WTF-8: UTF-8 in which a lone surrogate
// may stand as its three-byte form, the text AppendQuote writes without
// replacing anything.
func ValidWTF8(s string) bool {
	for i := 0; i < len(s); {
		r, n := DecodeWTF8(s[i:])
		if r == utf8.RuneError && n == 1 {
			return false
		}
		i += n
	}
	return true
}

// AppendWTF8 appends r in WTF-8: UTF-8, and the generalised three-byte form
// for a surrogate code unit.
func AppendWTF8(buf []byte, r rune) []byte {
	if r >= 0xD800 && r < 0xE000 {
		return append(buf, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return utf8.AppendRune(buf, r)
}

// CompareUTF16 orders two WTF-8 strings by their UTF-16 code units, as
// ECMAScript's default sort and RFC 8785's key ordering do. It differs from
// byte order where a supplementary character (a surrogate pair, units
// D800..DBFF first) meets a character in U+E000..U+FFFF, and where a lone
// surrogate meets a pair.
func CompareUTF16(a, b string) int {
	ua, ub := units{s: a}, units{s: b}
	for {
		x, okA := ua.next()
		y, okB := ub.next()
		switch {
		case !okA && !okB:
			return 0
		case !okA:
			return -1
		case !okB:
			return 1
		case x != y:
			return cmp.Compare(x, y)
		}
	}
}

// units walks a WTF-8 string as UTF-16 code units.
type units struct {
	s       string
	pending uint16
	has     bool
}

func (u *units) next() (uint16, bool) {
	if u.has {
		u.has = false
		return u.pending, true
	}
	if len(u.s) == 0 {
		return 0, false
	}
	r, n := DecodeWTF8(u.s)
	u.s = u.s[n:]
	if r >= 0x10000 {
		r -= 0x10000
		u.pending, u.has = uint16(0xDC00+r&0x3FF), true
		return uint16(0xD800 + r>>10), true
	}
	return uint16(r), true
}
