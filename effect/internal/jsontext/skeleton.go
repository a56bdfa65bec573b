package jsontext

import (
	"slices"
	"strings"
)

// Skeleton returns the RFC 8785 canonical text of text's structural skeleton
// (docs/shape-hash.md): null, booleans, numbers and strings become the strings
// "null", "boolean", "number" and "string"; an object keeps its keys, each
// mapped to the skeleton of its value, written in UTF-16 key order; an array
// becomes the distinct skeletons of its elements, sorted by their canonical
// text compared as UTF-16 code units.
//
// The skeleton is built bottom-up as canonical text, because the array rule
// compares and deduplicates exactly that text.
func Skeleton(text []byte) (string, error) {
	p := parser{data: text}
	s, err := p.skeleton(0)
	if err != nil {
		return "", err
	}
	p.skipWS()
	if p.pos != len(p.data) {
		return "", p.fail("unexpected data after the top-level value")
	}
	return s, nil
}

func (p *parser) skeleton(depth int) (string, error) {
	p.skipWS()
	if p.pos >= len(p.data) {
		return "", p.fail("unexpected end of JSON text")
	}
	discard := writer{discard: true}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.objectSkeleton(depth)
	case c == '[':
		return p.arraySkeleton(depth)
	case c == '"':
		if _, err := p.str(p.scratch[:0]); err != nil {
			return "", err
		}
		return `"string"`, nil
	case c == 't':
		return `"boolean"`, p.literal(&discard, "true")
	case c == 'f':
		return `"boolean"`, p.literal(&discard, "false")
	case c == 'n':
		return `"null"`, p.literal(&discard, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		if _, err := p.number(); err != nil {
			return "", err
		}
		return `"number"`, nil
	default:
		return "", p.fail("unexpected character %q", c)
	}
}

func (p *parser) objectSkeleton(depth int) (string, error) {
	if depth >= MaxDepth {
		return "", p.fail("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // {
	type member struct{ key, skel string }
	var members []member
	seen := map[string]struct{}{}
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return "{}", nil
	}
	for {
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return "", p.fail("expected a string object key")
		}
		keyAt := p.pos
		k, err := p.str(nil)
		if err != nil {
			return "", err
		}
		key := string(k)
		if _, dup := seen[key]; dup {
			p.pos = keyAt
			return "", p.fail("duplicate object key %s", quoteShort(key))
		}
		seen[key] = struct{}{}
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return "", p.fail("expected ':' after an object key")
		}
		p.pos++
		s, err := p.skeleton(depth + 1)
		if err != nil {
			return "", err
		}
		members = append(members, member{key, s})
		p.skipWS()
		if p.pos >= len(p.data) {
			return "", p.fail("unterminated object")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] != '}' {
			return "", p.fail("expected ',' or '}' in an object")
		}
		p.pos++
		break
	}
	slices.SortFunc(members, func(a, b member) int { return CompareUTF16(a.key, b.key) })
	var b []byte
	b = append(b, '{')
	for i, m := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendQuote(b, m.key)
		b = append(b, ':')
		b = append(b, m.skel...)
	}
	b = append(b, '}')
	return string(b), nil
}

func (p *parser) arraySkeleton(depth int) (string, error) {
	if depth >= MaxDepth {
		return "", p.fail("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // [
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return "[]", nil
	}
	seen := map[string]struct{}{}
	var distinct []string
	for {
		s, err := p.skeleton(depth + 1)
		if err != nil {
			return "", err
		}
		if _, dup := seen[s]; !dup {
			seen[s] = struct{}{}
			distinct = append(distinct, s)
		}
		p.skipWS()
		if p.pos >= len(p.data) {
			return "", p.fail("unterminated array")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] != ']' {
			return "", p.fail("expected ',' or ']' in an array")
		}
		p.pos++
		break
	}
	slices.SortFunc(distinct, CompareUTF16)
	return "[" + strings.Join(distinct, ",") + "]", nil
}
