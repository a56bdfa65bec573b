// Package jsontext reads and writes JSON text the way the effect needs it and
// encoding/json does not: strictly (RFC 8259 grammar, valid UTF-8, no duplicate
// keys), keeping lone surrogate escapes instead of replacing them with U+FFFD,
// and writing numbers and strings exactly as ECMAScript's JSON.stringify and
// RFC 8785 (JCS) do.
//
// Why not encoding/json: its decoder turns "\ud800" into U+FFFD and its number
// formatting is not ECMAScript's, so neither the output round-trip (ADR 0144 D3)
// nor the shape hash (docs/shape-hash.md) could match loom's TypeScript effect
// byte for byte.
//
// Decoded strings are held as WTF-8: UTF-8 in which a lone surrogate code unit
// is encoded as the three bytes a code point in U+D800..U+DFFF would take.
package jsontext

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDepth bounds nesting, as encoding/json does, so that hostile text cannot
// drive the recursive parser into an unbounded stack.
const MaxDepth = 10000

// SyntaxError reports where and why text is not acceptable JSON.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// Canonical validates text and returns its round-trip form: what
// JSON.stringify(JSON.parse(text)) gives in ECMAScript, for text without
// duplicate keys. Whitespace is dropped, strings and numbers are rewritten in
// their ECMAScript form (so -0 becomes 0 and 1e400 becomes null, as in
// JavaScript), and object members keep their order.
//
// When max >= 0 and the canonical text would exceed max bytes, Canonical stops
// writing, still validates the rest, and reports over = true with a nil out.
func Canonical(text []byte, max int) (out []byte, over bool, err error) {
	w := writer{max: max}
	if err := parseTop(text, &w, false); err != nil {
		return nil, false, err
	}
	if w.over {
		return nil, true, nil
	}
	if w.buf == nil {
		w.buf = []byte{}
	}
	return w.buf, false, nil
}

// Validate reports whether text is acceptable JSON, without building anything.
func Validate(text []byte) error {
	w := writer{discard: true}
	return parseTop(text, &w, false)
}

// JCS returns the RFC 8785 canonical form of text: Canonical with object
// members sorted by their keys' UTF-16 code units. Two texts carry the same
// JSON value exactly when their JCS forms are equal bytes.
func JCS(text []byte) ([]byte, error) {
	w := writer{max: -1}
	if err := parseTop(text, &w, true); err != nil {
		return nil, err
	}
	return w.buf, nil
}

func parseTop(text []byte, w *writer, sortKeys bool) error {
	p := parser{data: text, sortKeys: sortKeys}
	if err := p.value(w, 0); err != nil {
		return err
	}
	p.skipWS()
	if p.pos != len(p.data) {
		return p.fail("unexpected data after the top-level value")
	}
	return nil
}

// writer accumulates canonical text, or only measures it.
type writer struct {
	buf     []byte
	max     int // < 0: unbounded
	over    bool
	discard bool
}

func (w *writer) grow(n int) bool {
	if w.discard || w.over {
		return false
	}
	if w.max >= 0 && len(w.buf)+n > w.max {
		w.over = true
		w.buf = nil
		return false
	}
	return true
}

func (w *writer) byte(c byte) {
	if w.grow(1) {
		w.buf = append(w.buf, c)
	}
}

func (w *writer) bytes(b []byte) {
	if w.grow(len(b)) {
		w.buf = append(w.buf, b...)
	}
}

func (w *writer) string(s string) {
	if w.grow(len(s)) {
		w.buf = append(w.buf, s...)
	}
}

type parser struct {
	data     []byte
	pos      int
	sortKeys bool
	scratch  []byte
}

func (p *parser) fail(format string, args ...any) error {
	return &SyntaxError{Offset: p.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) skipWS() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(w *writer, depth int) error {
	p.skipWS()
	if p.pos >= len(p.data) {
		return p.fail("unexpected end of JSON text")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(w, depth)
	case c == '[':
		return p.array(w, depth)
	case c == '"':
		s, err := p.str(p.scratch[:0])
		if err != nil {
			return err
		}
		p.scratch = s[:0]
		if w.grow(0) {
			w.buf = AppendQuote(w.buf, string(s))
			if w.max >= 0 && len(w.buf) > w.max {
				w.over, w.buf = true, nil
			}
		}
		return nil
	case c == 't':
		return p.literal(w, "true")
	case c == 'f':
		return p.literal(w, "false")
	case c == 'n':
		return p.literal(w, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := p.number()
		if err != nil {
			return err
		}
		if w.grow(0) {
			w.string(FormatNumber(f))
		}
		return nil
	default:
		return p.fail("unexpected character %q", c)
	}
}

func (p *parser) literal(w *writer, lit string) error {
	if len(p.data)-p.pos < len(lit) || string(p.data[p.pos:p.pos+len(lit)]) != lit {
		return p.fail("invalid literal (expected %s)", lit)
	}
	p.pos += len(lit)
	w.string(lit)
	return nil
}

func (p *parser) object(w *writer, depth int) error {
	if depth >= MaxDepth {
		return p.fail("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // {
	var seen map[string]struct{}
	type member struct {
		key string
		val []byte
	}
	var members []member // only when sorting keys
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		w.string("{}")
		return nil
	}
	if !p.sortKeys {
		w.byte('{')
	}
	for i := 0; ; i++ {
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.fail("expected a string object key")
		}
		keyAt := p.pos
		k, err := p.str(nil)
		if err != nil {
			return err
		}
		key := string(k)
		if seen == nil {
			seen = make(map[string]struct{})
		}
		if _, dup := seen[key]; dup {
			p.pos = keyAt
			return p.fail("duplicate object key %s", quoteShort(key))
		}
		seen[key] = struct{}{}
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.fail("expected ':' after an object key")
		}
		p.pos++
		if p.sortKeys {
			sub := writer{max: -1, discard: w.discard}
			if err := p.value(&sub, depth+1); err != nil {
				return err
			}
			members = append(members, member{key: key, val: sub.buf})
		} else {
			if i > 0 {
				w.byte(',')
			}
			if w.grow(0) {
				w.buf = AppendQuote(w.buf, key)
				if w.max >= 0 && len(w.buf) > w.max {
					w.over, w.buf = true, nil
				}
			}
			w.byte(':')
			if err := p.value(w, depth+1); err != nil {
				return err
			}
		}
		p.skipWS()
		if p.pos >= len(p.data) {
			return p.fail("unterminated object")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] != '}' {
			return p.fail("expected ',' or '}' in an object")
		}
		p.pos++
		break
	}
	if !p.sortKeys {
		w.byte('}')
		return nil
	}
	slices.SortFunc(members, func(a, b member) int { return CompareUTF16(a.key, b.key) })
	w.byte('{')
	for i, m := range members {
		if i > 0 {
			w.byte(',')
		}
		if w.grow(0) {
			w.buf = AppendQuote(w.buf, m.key)
		}
		w.byte(':')
		w.bytes(m.val)
	}
	w.byte('}')
	return nil
}

func (p *parser) array(w *writer, depth int) error {
	if depth >= MaxDepth {
		return p.fail("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // [
	w.byte('[')
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		w.byte(']')
		return nil
	}
	for i := 0; ; i++ {
		if i > 0 {
			w.byte(',')
		}
		if err := p.value(w, depth+1); err != nil {
			return err
		}
		p.skipWS()
		if p.pos >= len(p.data) {
			return p.fail("unterminated array")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] != ']' {
			return p.fail("expected ',' or ']' in an array")
		}
		p.pos++
		w.byte(']')
		return nil
	}
}

// str decodes the string starting at p.pos (a '"') and appends its WTF-8 form
// to buf.
func (p *parser) str(buf []byte) ([]byte, error) {
	p.pos++ // opening quote
	start := p.pos
	for {
		if p.pos >= len(p.data) {
			return nil, p.fail("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			buf = append(buf, p.data[start:p.pos]...)
			p.pos++
			return buf, nil
		case c == '\\':
			buf = append(buf, p.data[start:p.pos]...)
			var err error
			if buf, err = p.escape(buf); err != nil {
				return nil, err
			}
			start = p.pos
		case c < 0x20:
			return nil, p.fail("control character %#02x in a string must be escaped", c)
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, p.fail("invalid UTF-8 in a string")
			}
			p.pos += size
		}
	}
}

func (p *parser) escape(buf []byte) ([]byte, error) {
	p.pos++ // backslash
	if p.pos >= len(p.data) {
		return nil, p.fail("unterminated escape")
	}
	e := p.data[p.pos]
	p.pos++
	switch e {
	case '"', '\\', '/':
		return append(buf, e), nil
	case 'b':
		return append(buf, '\b'), nil
	case 'f':
		return append(buf, '\f'), nil
	case 'n':
		return append(buf, '\n'), nil
	case 'r':
		return append(buf, '\r'), nil
	case 't':
		return append(buf, '\t'), nil
	case 'u':
		u, ok := hex4(p.data[p.pos:])
		if !ok {
			return nil, p.fail(`\u must be followed by four hex digits`)
		}
		p.pos += 4
		if u >= 0xD800 && u < 0xDC00 && len(p.data)-p.pos >= 6 && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
			if lo, ok := hex4(p.data[p.pos+2:]); ok && lo >= 0xDC00 && lo < 0xE000 {
				p.pos += 6
				return utf8.AppendRune(buf, 0x10000+(rune(u)-0xD800)<<10+(rune(lo)-0xDC00)), nil
			}
		}
		return AppendWTF8(buf, rune(u)), nil
	default:
		p.pos--
		return nil, p.fail("invalid escape character %q", e)
	}
}

func hex4(b []byte) (uint16, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var u uint16
	for _, c := range b[:4] {
		u <<= 4
		switch {
		case c >= '0' && c <= '9':
			u |= uint16(c - '0')
		case c >= 'a' && c <= 'f':
			u |= uint16(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			u |= uint16(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return u, true
}

func (p *parser) number() (float64, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case p.pos < len(p.data) && p.data[p.pos] >= '1' && p.data[p.pos] <= '9':
		digits()
	default:
		return 0, p.fail("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return 0, p.fail("invalid number: no digits after '.'")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return 0, p.fail("invalid number: no digits in the exponent")
		}
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.pos]), 64)
	if err != nil {
		// Out of range: ParseFloat already gives ±Inf (or 0), as JSON.parse does.
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, p.fail("invalid number: %v", err)
		}
	}
	return f, nil
}

// FormatNumber writes f as ECMAScript's Number::toString does, which is also
// RFC 8785's number serialisation. Non-finite values, which JSON cannot carry,
// become null, as in JSON.stringify.
func FormatNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	if f == 0 {
		return "0" // both zeros, as in ECMAScript
	}
	var sign string
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-tripping digits d1…dk and exponent e, f = d1.d2…dk × 10^e.
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expText, _ := strings.Cut(s, "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, _ := strconv.Atoi(expText)
	k := len(digits)
	n := e + 1 // ECMAScript's n: f = 0.d1…dk × 10^n
	var b strings.Builder
	b.WriteString(sign)
	switch {
	case k <= n && n <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case -6 < n && n <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(n - 1))
	}
	return b.String()
}

// AppendQuote appends s (WTF-8) as a JSON string literal escaped as RFC 8785
// and ECMAScript's JSON.stringify escape it: '"' and '\\', the short escapes
// \b \t \n \f \r, other controls below U+0020 as lowercase \u00xx, and
// everything else literally — except a lone surrogate, which I-JSON forbids and
// JCS therefore leaves undefined, and which is written as a lowercase \udxxx
// escape exactly as well-formed JSON.stringify (ES2019) writes it. Bytes that
// are not WTF-8 are written as U+FFFD; the parser never produces them.
func AppendQuote(buf []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				buf = append(buf, '\\', '"')
			case c == '\\':
				buf = append(buf, '\\', '\\')
			case c == '\b':
				buf = append(buf, '\\', 'b')
			case c == '\t':
				buf = append(buf, '\\', 't')
			case c == '\n':
				buf = append(buf, '\\', 'n')
			case c == '\f':
				buf = append(buf, '\\', 'f')
			case c == '\r':
				buf = append(buf, '\\', 'r')
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

// quoteShort quotes a key for an error message, cut so that hostile text
// cannot make the message large.
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}
