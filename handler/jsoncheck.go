package handler

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxJSONDepth bounds nesting in a request body and in an SPI inputJson. It
// is encoding/json's own limit, so a body that passes the check also
// decodes.
const maxJSONDepth = 10000

// jsonChecker checks that data is exactly one JSON value (RFC 8259), in valid
// UTF-8, nested at most maxJSONDepth deep, with no duplicate keys in any
// object, and, for the objects at the paths fields knows, no keys but the
// allowed ones. It reports the first problem with its byte offset.
//
// encoding/json accepts duplicate keys (the last wins) and invalid UTF-8, and
// reports unknown fields without a position, so this pass runs first; the
// typed decode that follows cannot then fail but on a member's type.
type jsonChecker struct {
	data []byte
	pos  int
	// fields returns the allowed keys of the object at path ("" is the
	// top level, "limits" the object under the top-level key "limits"), or
	// nil when any key is allowed there.
	fields func(path string) []string
	// what names the text in details: "the body", "inputJson".
	what string
	// field is the problem's field member for every problem ("inputJson"),
	// or "" to name the member at fault.
	field string
}

// check runs the checker; nil means data is a valid JSON value.
func (c *jsonChecker) check() *problem {
	if i := invalidUTF8(c.data); i >= 0 {
		return c.fail(i, "is not valid UTF-8")
	}
	c.skipSpace()
	if c.pos == len(c.data) {
		return c.fail(c.pos, "is empty; expected a JSON value")
	}
	if p := c.value("", 0); p != nil {
		return p
	}
	c.skipSpace()
	if c.pos < len(c.data) {
		return c.fail(c.pos, "has data after the JSON value: "+c.describe())
	}
	return nil
}

func (c *jsonChecker) fail(at int, msg string) *problem {
	p := newProblem(pMalformedJSON, 400, "").at(c.data, at)
	p.detail = c.what + " " + msg + p.where()
	if c.field != "" {
		p.field = c.field
	}
	return p
}

// describe names the byte at pos for an error message.
func (c *jsonChecker) describe() string {
	if c.pos >= len(c.data) {
		return "unexpected end of JSON"
	}
	r, _ := utf8.DecodeRune(c.data[c.pos:])
	return fmt.Sprintf("unexpected %q", r)
}

func (c *jsonChecker) skipSpace() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// value checks one value at pos; path is the member path of that value.
func (c *jsonChecker) value(path string, depth int) *problem {
	c.skipSpace()
	if c.pos >= len(c.data) {
		return c.fail(c.pos, "ends early; expected a value")
	}
	switch b := c.data[c.pos]; {
	case b == '{':
		return c.object(path, depth+1)
	case b == '[':
		return c.array(path, depth+1)
	case b == '"':
		_, p := c.str()
		return p
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	default:
		return c.fail(c.pos, "has "+c.describe()+" where a value was expected")
	}
}

func (c *jsonChecker) literal(word string) *problem {
	if !strings.HasPrefix(string(c.data[c.pos:min(len(c.data), c.pos+len(word))]), word) {
		return c.fail(c.pos, "has an invalid literal; expected "+word)
	}
	c.pos += len(word)
	return nil
}

func (c *jsonChecker) number() *problem {
	start := c.pos
	digits := func() int {
		n := 0
		for c.pos < len(c.data) && c.data[c.pos] >= '0' && c.data[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	if c.data[c.pos] == '-' {
		c.pos++
	}
	if c.pos < len(c.data) && c.data[c.pos] == '0' {
		c.pos++
	} else if digits() == 0 {
		return c.fail(start, "has an invalid number")
	}
	if c.pos < len(c.data) && c.data[c.pos] == '.' {
		c.pos++
		if digits() == 0 {
			return c.fail(start, "has an invalid number (no digits after the decimal point)")
		}
	}
	if c.pos < len(c.data) && (c.data[c.pos] == 'e' || c.data[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.data) && (c.data[c.pos] == '+' || c.data[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return c.fail(start, "has an invalid number (no digits in the exponent)")
		}
	}
	return nil
}

// str checks a string at pos and returns its raw text, quotes included.
func (c *jsonChecker) str() ([]byte, *problem) {
	start := c.pos
	c.pos++ // opening quote
	for c.pos < len(c.data) {
		b := c.data[c.pos]
		switch {
		case b == '"':
			c.pos++
			return c.data[start:c.pos], nil
		case b == '\\':
			if c.pos+1 >= len(c.data) {
				return nil, c.fail(c.pos, "ends inside a string escape")
			}
			switch c.data[c.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				c.pos += 2
			case 'u':
				if c.pos+6 > len(c.data) || !isHex4(c.data[c.pos+2:c.pos+6]) {
					return nil, c.fail(c.pos, `has an invalid \u escape; expected four hex digits`)
				}
				c.pos += 6
			default:
				return nil, c.fail(c.pos, "has an invalid escape in a string")
			}
		case b < 0x20:
			return nil, c.fail(c.pos, fmt.Sprintf("has an unescaped control character 0x%02x in a string", b))
		default:
			c.pos++
		}
	}
	return nil, c.fail(start, "ends inside a string")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func (c *jsonChecker) tooDeep(depth int) *problem {
	if depth > maxJSONDepth {
		return c.fail(c.pos, fmt.Sprintf("is nested more than %d levels deep", maxJSONDepth))
	}
	return nil
}

func (c *jsonChecker) object(path string, depth int) *problem {
	if p := c.tooDeep(depth); p != nil {
		return p
	}
	c.pos++ // {
	var allowed []string
	if c.fields != nil {
		allowed = c.fields(path)
	}
	var seen map[string]struct{}
	c.skipSpace()
	if c.pos < len(c.data) && c.data[c.pos] == '}' {
		c.pos++
		return nil
	}
	for {
		c.skipSpace()
		if c.pos >= len(c.data) || c.data[c.pos] != '"' {
			return c.fail(c.pos, "has "+c.describe()+" where an object key was expected")
		}
		keyAt := c.pos
		raw, p := c.str()
		if p != nil {
			return p
		}
		key := unquote(raw)
		member := key
		if path != "" {
			member = path + "." + key
		}
		if _, dup := seen[key]; dup {
			p := newProblem(pDuplicateKey, 400, "").at(c.data, keyAt)
			p.detail = fmt.Sprintf("%s has the key %s twice in one object%s; JSON parsers disagree on which one counts, so the request is refused",
				c.what, quoteField(member), p.where())
			p.field = c.fieldOr(member)
			return p
		}
		if seen == nil {
			seen = make(map[string]struct{})
		}
		seen[key] = struct{}{}
		if allowed != nil && !slices.Contains(allowed, key) {
			p := newProblem(pUnknownField, 400, "").at(c.data, keyAt)
			where := "the request"
			if path != "" {
				where = quoteField(path)
			}
			p.detail = fmt.Sprintf("unknown field %s%s; %s accepts %s", quoteField(member), p.where(), where, strings.Join(allowed, ", "))
			p.field = c.fieldOr(member)
			return p
		}
		c.skipSpace()
		if c.pos >= len(c.data) || c.data[c.pos] != ':' {
			return c.fail(c.pos, "has "+c.describe()+" where ':' was expected after an object key")
		}
		c.pos++
		if p := c.value(member, depth); p != nil {
			return p
		}
		c.skipSpace()
		if c.pos >= len(c.data) {
			return c.fail(c.pos, "ends inside an object")
		}
		switch c.data[c.pos] {
		case ',':
			c.pos++
		case '}':
			c.pos++
			return nil
		default:
			return c.fail(c.pos, "has "+c.describe()+" where ',' or '}' was expected in an object")
		}
	}
}

func (c *jsonChecker) array(path string, depth int) *problem {
	if p := c.tooDeep(depth); p != nil {
		return p
	}
	c.pos++ // [
	c.skipSpace()
	if c.pos < len(c.data) && c.data[c.pos] == ']' {
		c.pos++
		return nil
	}
	// Elements have no member path of their own: no object inside an array
	// has a field list.
	elem := path + "[]"
	for {
		if p := c.value(elem, depth); p != nil {
			return p
		}
		c.skipSpace()
		if c.pos >= len(c.data) {
			return c.fail(c.pos, "ends inside an array")
		}
		switch c.data[c.pos] {
		case ',':
			c.pos++
		case ']':
			c.pos++
			return nil
		default:
			return c.fail(c.pos, "has "+c.describe()+" where ',' or ']' was expected in an array")
		}
	}
}

func (c *jsonChecker) fieldOr(member string) string {
	if c.field != "" {
		return c.field
	}
	return member
}

// unquote decodes a checked JSON string (quotes included). Lone surrogate
// escapes become U+FFFD, as encoding/json does, so two keys equal after
// decoding are duplicates.
func unquote(raw []byte) string {
	if !slices.Contains(raw, '\\') {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw) // cannot happen for a checked string
	}
	return s
}

// quoteField quotes a member name for a detail, cut to a readable length.
func quoteField(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}

// invalidUTF8 returns the offset of the first byte that is not valid UTF-8,
// or -1.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}
