// Package jsontext is the one JSON policy of the module: the reader that
// decides what JSON text is acceptable, with the position and path of what is
// not, and the writers of its canonical forms (the ECMAScript round trip,
// RFC 8785 JCS, and the shape skeleton of docs/shape-hash.md).
//
// Acceptable text is RFC 8259 JSON in valid UTF-8, nested at most MaxDepth
// deep, with no object holding one key twice. Keys and strings mean what
// ECMAScript's JSON.parse makes of them: sequences of UTF-16 code units, so a
// lone surrogate escape ("\ud800") is kept as that code unit, and two keys are
// the same key exactly when their code units are. encoding/json is not used
// for either reason: it replaces lone surrogates with U+FFFD (so "\ud800" and
// "\ud801" would be one key) and its number formatting is not ECMAScript's.
//
// Decoded strings are held as WTF-8: UTF-8 in which a lone surrogate code unit
// is encoded as the three bytes a code point in U+D800..U+DFFF would take.
// Two WTF-8 strings from this reader are equal bytes exactly when they are
// equal code unit sequences, because a surrogate pair is always joined into
// its supplementary code point.
package jsontext

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDepth bounds nesting (a container at the top level is depth 1), so that
// hostile text cannot drive a recursive reader into an unbounded stack. It is
// encoding/json's own limit, so text accepted here also decodes there.
const MaxDepth = 10000

// Kind classifies why text is not acceptable.
type Kind uint8

const (
	// KindSyntax: the text is not RFC 8259 JSON.
	KindSyntax Kind = iota
	// KindUTF8: the text is not valid UTF-8.
	KindUTF8
	// KindDepth: the text nests deeper than MaxDepth.
	KindDepth
	// KindDuplicateKey: an object holds one key twice.
	KindDuplicateKey
)

// Segment is one step of a Path: an object member's key, or an array
// element's index when Index >= 0.
type Segment struct {
	Key   string // WTF-8
	Index int
}

// Path names a value inside a text, from the top.
type Path []Segment

// Pointer writes p as an RFC 6901 JSON Pointer ("" is the whole text).
func (p Path) Pointer() string {
	var b strings.Builder
	for _, s := range p {
		b.WriteByte('/')
		if s.Index >= 0 {
			b.WriteString(strconv.Itoa(s.Index))
			continue
		}
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.Key))
	}
	return b.String()
}

// Error reports where and why text is not acceptable. Msg is a predicate
// that reads after a name for the text ("the body is not valid UTF-8").
type Error struct {
	Kind   Kind
	Offset int  // byte offset in the text
	Path   Path // the value at fault; for KindDuplicateKey, the second member; for KindUTF8, the value the invalid byte is in, when known
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("the JSON text %s at byte %d", e.Msg, e.Offset)
}

// Options hooks a caller's checks into the one pass of Check.
type Options struct {
	// Key, when set, is called with each object member's path (its key last)
	// and the offset of its key, once the key is known to be no duplicate
	// and before its value is read. An error it returns ends the pass and is
	// returned as it is.
	Key func(path Path, keyAt int) error
	// Value, when set, is called with each object member's path, the offset
	// of its value and the value's text, once the value is read. An error it
	// returns ends the pass and is returned as it is.
	Value func(path Path, at int, raw []byte) error
	// Element, when set, is called with each array element's path (its
	// index last), the offset of its value and the value's text, once the
	// value is read. An error it returns ends the pass and is returned as
	// it is.
	Element func(path Path, at int, raw []byte) error
}

// Check reads text once, calling opts' hooks on the way, and returns the
// first reason the text is not acceptable: an *Error, or an error of a hook.
func Check(text []byte, opts Options) error {
	p := parser{data: text, sink: nopSink{}, opts: opts}
	return p.top()
}

// Validate reports whether text is acceptable JSON, as an *Error when not.
func Validate(text []byte) error {
	return Check(text, Options{})
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
	return canonical(parser{data: text}, max)
}

// CanonicalWTF8 is Canonical for text whose strings may hold a lone surrogate
// as its WTF-8 bytes rather than as an escape: what a JavaScript engine's
// JSON.stringify writes, converted to bytes, when it copies JSON.rawJSON text
// that holds one. The canonical text writes every lone surrogate as its
// escape, as JSON.stringify writes a lone surrogate of an ordinary string, so
// it is valid UTF-8 with the same value; a surrogate pair split between a raw
// half and an escaped half is one character, as in JSON.parse.
func CanonicalWTF8(text []byte, max int) (out []byte, over bool, err error) {
	return canonical(parser{data: text, wtf8: true}, max)
}

func canonical(p parser, max int) (out []byte, over bool, err error) {
	w := &writer{max: max}
	p.sink = w
	if err := p.top(); err != nil {
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

// sink receives the values of a text as the parser reads them.
type sink interface {
	open(c byte) // '{' or '['
	close(c byte)
	key(k []byte) // WTF-8
	str(s []byte) // WTF-8
	num(f float64)
	lit(s string) // true, false, null
}

type nopSink struct{}

func (nopSink) open(byte)   {}
func (nopSink) close(byte)  {}
func (nopSink) key([]byte)  {}
func (nopSink) str([]byte)  {}
func (nopSink) num(float64) {}
func (nopSink) lit(string)  {}

// writer accumulates canonical text, up to max bytes when max >= 0.
type writer struct {
	buf  []byte
	max  int
	over bool
}

// sep writes the comma a value or key needs after the previous one.
func (w *writer) sep() {
	if n := len(w.buf); n > 0 {
		if c := w.buf[n-1]; c != '{' && c != '[' && c != ':' {
			w.buf = append(w.buf, ',')
		}
	}
}

// done reports whether nothing more is written; it drops the text once it
// is over the bound.
func (w *writer) done() bool {
	if !w.over && w.max >= 0 && len(w.buf) > w.max {
		w.over, w.buf = true, nil
	}
	return w.over
}

func (w *writer) open(c byte) {
	if !w.done() {
		w.sep()
		w.buf = append(w.buf, c)
	}
}

func (w *writer) close(c byte) {
	if !w.done() {
		w.buf = append(w.buf, c)
	}
	w.done()
}

func (w *writer) key(k []byte) {
	if !w.done() {
		w.sep()
		w.buf = append(AppendQuote(w.buf, string(k)), ':')
	}
}

func (w *writer) str(s []byte) {
	if !w.done() {
		w.sep()
		w.buf = AppendQuote(w.buf, string(s))
	}
	w.done()
}

func (w *writer) num(f float64) {
	if !w.done() {
		w.sep()
		w.buf = AppendNumber(w.buf, f)
	}
	w.done()
}

func (w *writer) lit(s string) {
	if !w.done() {
		w.sep()
		w.buf = append(w.buf, s...)
	}
	w.done()
}

type parser struct {
	data    []byte
	pos     int
	sink    sink
	opts    Options
	path    Path
	scratch []byte
	wtf8    bool // strings may hold lone surrogates as WTF-8 (CanonicalWTF8)
}

func (p *parser) fail(kind Kind, at int, msg string) error {
	return &Error{Kind: kind, Offset: at, Path: append(Path(nil), p.path...), Msg: msg}
}

func (p *parser) syntax(at int, msg string) error { return p.fail(KindSyntax, at, msg) }

// describe names the byte at pos for a message.
func (p *parser) describe() string {
	if p.pos >= len(p.data) {
		return "unexpected end of JSON"
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return fmt.Sprintf("unexpected %q", r)
}

func (p *parser) top() error {
	if !utf8.Valid(p.data) && !(p.wtf8 && validWTF8(p.data)) {
		at := firstInvalidUTF8(p.data)
		msg := "is not valid UTF-8"
		if r, _ := DecodeWTF8(string(p.data[at:])); r >= 0xD800 && r < 0xE000 {
			// Text decoded from a JSON string holds a lone surrogate escape
			// so (WTF-8); as JSON text it must be an escape again.
			msg += fmt.Sprintf(": it holds the lone surrogate U+%04X as a character; write it as the escape \\u%04x", r, r)
		}
		p.path = pathTo(p.data[:at])
		return p.fail(KindUTF8, at, msg)
	}
	p.skipWS()
	if p.pos == len(p.data) {
		return p.syntax(p.pos, "is empty; expected a JSON value")
	}
	if err := p.value(0); err != nil {
		return err
	}
	p.skipWS()
	if p.pos < len(p.data) {
		return p.syntax(p.pos, "has data after the JSON value: "+p.describe())
	}
	return nil
}

// pathTo is the path of the value that the end of prefix is inside, for a
// fault found before the text is parsed (invalid UTF-8 just after prefix):
// where reading prefix stops for want of more. It is nil when prefix stops
// for a fault of its own before its last byte, so that no path is named
// for a place the fault is not.
func pathTo(prefix []byte) Path {
	q := parser{data: prefix, sink: nopSink{}}
	var e *Error
	if err := q.top(); !errors.As(err, &e) || q.pos < len(prefix)-1 {
		return nil
	}
	return e.Path
}

// validWTF8 is ValidWTF8 for bytes.
func validWTF8(b []byte) bool {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			if len(b)-i < 3 || b[i] != 0xED || b[i+1] < 0xA0 || b[i+1] > 0xBF || b[i+2]&0xC0 != 0x80 {
				return false
			}
			n = 3
		}
		i += n
	}
	return true
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
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

// value reads one value at pos; depth counts the containers around it.
func (p *parser) value(depth int) error {
	p.skipWS()
	if p.pos >= len(p.data) {
		return p.syntax(p.pos, "ends early; expected a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str(p.scratch[:0])
		if err != nil {
			return err
		}
		p.scratch = s[:0]
		p.sink.str(s)
		return nil
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := p.number()
		if err != nil {
			return err
		}
		p.sink.num(f)
		return nil
	default:
		return p.syntax(p.pos, "has "+p.describe()+" where a value was expected")
	}
}

func (p *parser) literal(lit string) error {
	if !strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(lit))]), lit) {
		return p.syntax(p.pos, "has an invalid literal; expected "+lit)
	}
	p.pos += len(lit)
	p.sink.lit(lit)
	return nil
}

// open reads the opener of a container at depth, and its closer too when
// the container is empty.
func (p *parser) open(opener, closer byte, depth int) (empty bool, err error) {
	if depth > MaxDepth {
		return false, p.fail(KindDepth, p.pos, fmt.Sprintf("is nested more than %d levels deep", MaxDepth))
	}
	p.pos++
	p.sink.open(opener)
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == closer {
		p.pos++
		p.sink.close(closer)
		return true, nil
	}
	return false, nil
}

func (p *parser) object(depth int) error {
	if empty, err := p.open('{', '}', depth); empty || err != nil {
		return err
	}
	var seen map[string]struct{}
	for {
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.syntax(p.pos, "has "+p.describe()+" where an object key was expected")
		}
		keyAt := p.pos
		k, err := p.str(nil)
		if err != nil {
			return err
		}
		key := string(k)
		p.path = append(p.path, Segment{Key: key, Index: -1})
		if _, dup := seen[key]; dup {
			return p.fail(KindDuplicateKey, keyAt, "has the key "+QuoteShort(key)+" twice in one object")
		}
		if seen == nil {
			seen = make(map[string]struct{})
		}
		seen[key] = struct{}{}
		if p.opts.Key != nil {
			if err := p.opts.Key(p.path, keyAt); err != nil {
				return err
			}
		}
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.syntax(p.pos, "has "+p.describe()+" where ':' was expected after an object key")
		}
		p.pos++
		p.sink.key(k)
		p.skipWS()
		start := p.pos
		if err := p.value(depth); err != nil {
			return err
		}
		if p.opts.Value != nil {
			if err := p.opts.Value(p.path, start, p.data[start:p.pos]); err != nil {
				return err
			}
		}
		p.path = p.path[:len(p.path)-1]
		if more, err := p.more('}', "an object"); !more {
			return err
		}
	}
}

func (p *parser) array(depth int) error {
	if empty, err := p.open('[', ']', depth); empty || err != nil {
		return err
	}
	for i := 0; ; i++ {
		p.path = append(p.path, Segment{Index: i})
		p.skipWS()
		start := p.pos
		if err := p.value(depth); err != nil {
			return err
		}
		if p.opts.Element != nil {
			if err := p.opts.Element(p.path, start, p.data[start:p.pos]); err != nil {
				return err
			}
		}
		p.path = p.path[:len(p.path)-1]
		if more, err := p.more(']', "an array"); !more {
			return err
		}
	}
}

// more reads what follows a member or an element: true after a ',', false
// after the closer of the container, which is in ("an object").
func (p *parser) more(closer byte, in string) (bool, error) {
	p.skipWS()
	if p.pos >= len(p.data) {
		return false, p.syntax(p.pos, "ends inside "+in)
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		return true, nil
	case closer:
		p.pos++
		p.sink.close(closer)
		return false, nil
	}
	return false, p.syntax(p.pos, "has "+p.describe()+" where ',' or '"+string(closer)+"' was expected in "+in)
}

// str decodes the string starting at p.pos (a '"') and appends its WTF-8 form
// to buf. The text is known to be valid UTF-8.
func (p *parser) str(buf []byte) ([]byte, error) {
	start := p.pos
	from := len(buf)
	p.pos++ // opening quote
	run := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			buf = append(buf, p.data[run:p.pos]...)
			p.pos++
			if p.wtf8 {
				buf = joinSurrogates(buf, from)
			}
			return buf, nil
		case c == '\\':
			buf = append(buf, p.data[run:p.pos]...)
			var err error
			if buf, err = p.escape(buf); err != nil {
				return nil, err
			}
			run = p.pos
		case c < 0x20:
			return nil, p.syntax(p.pos, fmt.Sprintf("has an unescaped control character 0x%02x in a string", c))
		default:
			p.pos++
		}
	}
	return nil, p.syntax(start, "ends inside a string")
}

func (p *parser) escape(buf []byte) ([]byte, error) {
	at := p.pos // the backslash
	if p.pos+1 >= len(p.data) {
		return nil, p.syntax(at, "ends inside a string escape")
	}
	e := p.data[p.pos+1]
	p.pos += 2
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
			return nil, p.syntax(at, `has an invalid \u escape; expected four hex digits`)
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
		return nil, p.syntax(at, "has an invalid escape in a string")
	}
}

// joinSurrogates rewrites, in buf[from:] (WTF-8), each high surrogate
// followed by a low one as the character they make, so that equal code unit
// sequences stay equal bytes when a raw half meets an escaped half.
func joinSurrogates(buf []byte, from int) []byte {
	i := bytes.IndexByte(buf[from:], 0xED)
	if i < 0 {
		return buf
	}
	out := from + i
	for in := out; in < len(buf); {
		if in+6 <= len(buf) && buf[in] == 0xED && buf[in+1]&0xF0 == 0xA0 && buf[in+3] == 0xED && buf[in+4]&0xF0 == 0xB0 {
			hi, _ := DecodeWTF8(string(buf[in : in+3]))
			lo, _ := DecodeWTF8(string(buf[in+3 : in+6]))
			out += utf8.EncodeRune(buf[out:], 0x10000+(hi-0xD800)<<10+(lo-0xDC00))
			in += 6
			continue
		}
		buf[out] = buf[in]
		out++
		in++
	}
	return buf[:out]
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
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return 0, p.syntax(start, "has an invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return 0, p.syntax(start, "has an invalid number (no digits after the decimal point)")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return 0, p.syntax(start, "has an invalid number (no digits in the exponent)")
		}
	}
	if _, ok := p.sink.(nopSink); ok {
		return 0, nil // the value is not wanted
	}
	// Out of range, ParseFloat gives ±Inf (or 0), as JSON.parse does; the
	// grammar is already checked, so that is its only error.
	f, _ := strconv.ParseFloat(string(p.data[start:p.pos]), 64)
	return f, nil
}

// Text is JSON text this package has accepted, whole or a value inside an
// accepted text; code converts to it only such text, so that a reader
// further on can skip checking it again.
type Text []byte

// MarshalJSON writes t as it is.
func (t Text) MarshalJSON() ([]byte, error) { return t, nil }

// Unquote decodes raw, a string literal this package has accepted (quotes
// included), to WTF-8.
func Unquote(raw []byte) string {
	if len(raw) < 2 {
		return ""
	}
	if !strings.Contains(string(raw[1:len(raw)-1]), `\`) {
		return string(raw[1 : len(raw)-1])
	}
	p := parser{data: raw, sink: nopSink{}}
	s, err := p.str(nil)
	if err != nil {
		return "" // not a literal this package accepted
	}
	return string(s)
}

// shortBytes is the most of a value's text a message shows (QuoteShort,
// ShowValue).
const shortBytes = 64

// QuoteShort quotes s (Go syntax) for a message, cut so that hostile text
// cannot make the message large. A lone surrogate (WTF-8) is written as its
// \uXXXX escape, the way JSON and JavaScript write it.
func QuoteShort(s string) string {
	ellipsis := ""
	if len(s) > shortBytes {
		cut := shortBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, ellipsis = s[:cut], "…"
	}
	var b strings.Builder
	b.WriteByte('"')
	for len(s) > 0 {
		i := 0
		var r rune
		for i < len(s) {
			var n int
			if r, n = DecodeWTF8(s[i:]); r >= 0xD800 && r < 0xE000 {
				break
			}
			i += n
		}
		q := strconv.Quote(s[:i])
		b.WriteString(q[1 : len(q)-1])
		if i == len(s) {
			break
		}
		fmt.Fprintf(&b, `\u%04x`, r)
		s = s[i+3:]
	}
	b.WriteByte('"')
	return b.String() + ellipsis
}
