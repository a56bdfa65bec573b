package jsontext

import (
	"slices"
	"strings"
)

// JCS returns the RFC 8785 canonical form of text: Canonical with object
// members sorted by their keys' UTF-16 code units. Two texts carry the same
// JSON value exactly when their JCS forms are equal bytes.
func JCS(text []byte) ([]byte, error) {
	n, err := parseTree(text)
	if err != nil {
		return nil, err
	}
	return n.appendJCS(nil), nil
}

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
	n, err := parseTree(text)
	if err != nil {
		return "", err
	}
	return n.skeleton(), nil
}

// node is a value read into memory: a container with its members, or a
// scalar with its canonical text.
type node struct {
	kind byte   // '{', '[', '"' (string), '0' (number), 'b' (boolean), 'n' (null)
	text string // a scalar's canonical text
	keys []string
	kids []*node
}

func parseTree(text []byte) (*node, error) {
	t := &tree{}
	p := parser{data: text, sink: t}
	if err := p.top(); err != nil {
		return nil, err
	}
	return t.root, nil
}

// tree is the sink that builds nodes.
type tree struct {
	root  *node
	stack []*node
}

func (t *tree) add(n *node) {
	if len(t.stack) == 0 {
		t.root = n
		return
	}
	top := t.stack[len(t.stack)-1]
	top.kids = append(top.kids, n)
}

func (t *tree) open(c byte) {
	n := &node{kind: c}
	t.add(n)
	t.stack = append(t.stack, n)
}

func (t *tree) close(byte) { t.stack = t.stack[:len(t.stack)-1] }

func (t *tree) key(k []byte) {
	top := t.stack[len(t.stack)-1]
	top.keys = append(top.keys, string(k))
}

func (t *tree) str(s []byte) { t.add(&node{kind: '"', text: string(AppendQuote(nil, string(s)))}) }

func (t *tree) num(f float64) { t.add(&node{kind: '0', text: FormatNumber(f)}) }

func (t *tree) lit(s string) {
	kind := byte('b')
	if s == "null" {
		kind = 'n'
	}
	t.add(&node{kind: kind, text: s})
}

// byKey returns the member indices of an object in UTF-16 key order.
func (n *node) byKey() []int {
	order := make([]int, len(n.keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return CompareUTF16(n.keys[a], n.keys[b]) })
	return order
}

func (n *node) appendJCS(b []byte) []byte {
	switch n.kind {
	case '{':
		b = append(b, '{')
		for i, m := range n.byKey() {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(AppendQuote(b, n.keys[m]), ':')
			b = n.kids[m].appendJCS(b)
		}
		return append(b, '}')
	case '[':
		b = append(b, '[')
		for i, k := range n.kids {
			if i > 0 {
				b = append(b, ',')
			}
			b = k.appendJCS(b)
		}
		return append(b, ']')
	}
	return append(b, n.text...)
}

func (n *node) skeleton() string {
	switch n.kind {
	case '{':
		b := []byte{'{'}
		for i, m := range n.byKey() {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(AppendQuote(b, n.keys[m]), ':')
			b = append(b, n.kids[m].skeleton()...)
		}
		return string(append(b, '}'))
	case '[':
		var distinct []string
		seen := make(map[string]struct{}, len(n.kids))
		for _, k := range n.kids {
			s := k.skeleton()
			if _, dup := seen[s]; !dup {
				seen[s] = struct{}{}
				distinct = append(distinct, s)
			}
		}
		slices.SortFunc(distinct, CompareUTF16)
		return "[" + strings.Join(distinct, ",") + "]"
	case '"':
		return `"string"`
	case '0':
		return `"number"`
	case 'b':
		return `"boolean"`
	}
	return `"null"`
}
