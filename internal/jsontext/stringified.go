package jsontext

import (
	"bytes"
	"math"
	"strconv"
)

// Stringified reads text that a JSON serialiser wrote (an engine's
// JSON.stringify) in one pass cheap enough for every result. deeper reports
// whether the text nests more than maxDepth levels; canonical, whether it is
// already the text CanonicalWTF8 writes for it, so that a caller can skip
// rewriting it: no whitespace, strings escaped exactly as JSON.stringify
// escapes them and valid UTF-8, numbers in their ECMAScript form.
//
// JSON.stringify writes canonical text for every ordinary value; only what it
// copies verbatim, a JSON.rawJSON text, can be otherwise (a lone surrogate as
// a character, 1e1000, -0, 1.50, "\u0041"). Stringified does not validate:
// for text that is not JSON its answers mean nothing.
func Stringified(text []byte, maxDepth int) (deeper, canonical bool) {
	canonical = true
	depth := 0
	for i := 0; i < len(text); {
		switch c := text[i]; {
		case c == '"':
			var ok bool
			i, ok = stringifiedString(text, i+1)
			canonical = canonical && ok
		case c == '[' || c == '{':
			if depth++; depth > maxDepth {
				return true, false
			}
			i++
		case c == ']' || c == '}':
			depth--
			i++
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(text) && numberByte[text[j]] {
				j++
			}
			canonical = canonical && canonicalNumber(text[i:j])
			i = j
		case c == ',' || c == ':' || (c >= 'a' && c <= 'z'): // the literals' letters
			i++
		default: // whitespace, or not JSON
			canonical = false
			i++
		}
	}
	return false, canonical
}

// numberByte holds the bytes a JSON number token is made of.
var numberByte = [256]bool{'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true, '8': true, '9': true,
	'.': true, 'e': true, 'E': true, '+': true, '-': true}

// stringByte holds the bytes that end a run of a string's literal bytes: its
// end, an escape, and the first byte of a lone surrogate's WTF-8 form (also
// the first byte of U+D000..U+D7FF, which the caller tells apart).
var stringByte = [256]bool{'"': true, '\\': true, 0xED: true}

// stringifiedString skips the string whose contents start at text[i] and
// returns the index after its closing quote and whether the string is written
// as AppendQuote writes it.
func stringifiedString(text []byte, i int) (int, bool) {
	ok := true
	for i < len(text) {
		for i < len(text) && !stringByte[text[i]] {
			i++
		}
		if i == len(text) {
			break
		}
		switch text[i] {
		case '"':
			return i + 1, ok
		case '\\':
			if i+1 == len(text) {
				return len(text), false
			}
			switch text[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
			case 'u':
				ok = ok && canonicalEscape(text[i:])
			default: // \/, or not JSON
				ok = false
			}
			i += 2 // a \u escape's hex digits are literal bytes
		default: // 0xED
			if i+1 < len(text) && text[i+1] >= 0xA0 {
				ok = false // a lone surrogate as a character (WTF-8)
			}
			i++
		}
	}
	return i, false
}

// canonicalEscape reports whether the \u escape at the start of e is one
// AppendQuote writes: lowercase, for a control character without a short
// escape or for a lone surrogate.
func canonicalEscape(e []byte) bool {
	if len(e) < 6 || bytes.ContainsAny(e[2:6], "ABCDEF") {
		return false
	}
	u, ok := hex4(e[2:6])
	switch {
	case !ok:
		return false
	case u < 0x20:
		return shortEscapes[u] == 0
	case u >= 0xD800 && u < 0xDC00:
		// lone unless an escaped low surrogate follows: a pair is one
		// character, which JSON.stringify writes as itself
		if len(e) >= 12 && e[6] == '\\' && e[7] == 'u' {
			if lo, ok := hex4(e[8:12]); ok && lo >= 0xDC00 && lo < 0xE000 {
				return false
			}
		}
		return true
	case u >= 0xDC00 && u < 0xE000:
		return true // an escaped high surrogate before it was seen first
	}
	return false
}

// maxNumberLen is the longest text AppendNumber writes,
// "-0.0000012345678901234567" or "-1.2345678901234567e-308".
const maxNumberLen = 25

// canonicalNumber reports whether num, a JSON number token, is written as
// AppendNumber writes its value. It reads the token as one of the layouts of
// Number::toString, with its significant digits and its exponent; a token in
// none of them is not canonical. A value of at most 15 significant digits
// (DBL_DIG) in the range of normal doubles is canonical in its layout, since
// no shorter text reads as the same double; only longer ones, and those near
// the ends of the range, are parsed and formatted again.
func canonicalNumber(num []byte) bool {
	if len(num) > maxNumberLen {
		return false
	}
	s := num
	if s[0] == '-' {
		s = s[1:]
	}
	var digitBuf [maxNumberLen]byte
	digits, n, ok := numberLayout(s, digitBuf[:0])
	switch {
	case !ok:
		return false
	case len(digits) == 0:
		return len(s) == len(num) // 0, never -0
	case len(digits) <= 15 && n > -300 && n < 300:
		return true
	case len(digits) > 17:
		return false // the shortest digits of a double are at most 17
	}
	f, _ := strconv.ParseFloat(string(num), 64)
	if math.IsInf(f, 0) {
		return false
	}
	// The shortest digits and exponent of f, as "d.ddde±xx".
	var buf [32]byte
	short := strconv.AppendFloat(buf[:0], math.Abs(f), 'e', -1, 64)
	at := bytes.IndexByte(short, 'e')
	mant := short[:at]
	if len(mant) > 1 {
		if mant[0] != digits[0] || string(mant[2:]) != string(digits[1:]) {
			return false
		}
	} else if len(digits) != 1 || mant[0] != digits[0] {
		return false
	}
	e, err := strconv.Atoi(string(short[at+1:]))
	return err == nil && e == n-1
}

// numberLayout reads s, a number token without its sign, as one of the
// layouts Number::toString writes for a value 0.d1…dk × 10^n: its digits
// (none for 0) appended to buf, and n. ok is false for any other text.
func numberLayout(s, buf []byte) (digits []byte, n int, ok bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	whole := s[:i]
	if len(whole) == 0 || (whole[0] == '0' && len(whole) > 1) {
		return nil, 0, false
	}
	var frac []byte
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		frac, i = s[i+1:j], j
		if len(frac) == 0 || frac[len(frac)-1] == '0' {
			return nil, 0, false
		}
	}
	if i == len(s) { // no exponent: -6 < n <= 21
		switch {
		case frac == nil && whole[0] == '0':
			return buf, 0, true // 0
		case frac == nil: // d1…dk followed by n-k zeros
			digits = append(buf, bytes.TrimRight(whole, "0")...)
			return digits, len(whole), len(whole) <= 21
		case whole[0] != '0': // d1…dn.dn+1…dk
			return append(append(buf, whole...), frac...), len(whole), len(whole) <= 21
		default: // 0.000d1…dk, at most five zeros
			digits = bytes.TrimLeft(frac, "0")
			zeros := len(frac) - len(digits)
			return append(buf, digits...), -zeros, zeros <= 5
		}
	}
	// d1[.d2…dk]e±x, for n <= -6 or n > 21
	if len(whole) != 1 || whole[0] == '0' || len(s)-i < 3 || s[i] != 'e' || (s[i+1] != '+' && s[i+1] != '-') {
		return nil, 0, false
	}
	x := s[i+2:]
	if x[0] == '0' || len(x) > 4 {
		return nil, 0, false
	}
	e := 0
	for _, c := range x {
		if c < '0' || c > '9' {
			return nil, 0, false
		}
		e = 10*e + int(c-'0')
	}
	if s[i+1] == '-' {
		e = -e
	}
	n = e + 1
	return append(append(buf, whole...), frac...), n, n <= -6 || n > 21
}
