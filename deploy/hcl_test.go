package deploy

// A reader of the Terraform module's .tf files, as far as the checks of its
// log filters need (logs_test.go): OpenTofu's native syntax lexed and its
// block structure parsed whole, and the expressions of the attributes those
// checks ask for parsed and evaluated: strings and their templates,
// numbers, booleans, null, tuples, objects, traversals of var, local and
// each, conditionals, and the function join. A variable is unknown and
// reads as its own reference ("${var.name}"), a condition on an unknown is
// both of its results (objects merged), and what the reader cannot do it
// says, naming the file and line, rather than guess.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokenKind int

const (
	tIdent tokenKind = iota
	tNumber
	tString  // a quoted template
	tHeredoc // a heredoc template, kept as its text
	tPunct
	tNewline
	tEOF
)

type token struct {
	kind tokenKind
	text string // an identifier, a number, punctuation, a heredoc's text
	// parts are a quoted template's: literal text, or an interpolation's
	// tokens (ending in tEOF)
	parts []tplPart
	file  string
	line  int
}

type tplPart struct {
	lit    string
	interp []token
}

func (t token) at() string { return fmt.Sprintf("%s:%d", t.file, t.line) }

// lexer reads one file's tokens.
type lexer struct {
	file string
	src  string
	pos  int
	line int
}

func (lx *lexer) errf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", lx.file, lx.line, fmt.Sprintf(format, args...))
}

func (lx *lexer) tok(kind tokenKind, text string) token {
	return token{kind: kind, text: text, file: lx.file, line: lx.line}
}

// tokens lexes until the end of the source or, inside an interpolation,
// until the "}" that closes it (consumed, not returned).
func (lx *lexer) tokens(interp bool) ([]token, error) {
	var out []token
	depth := 0
	for {
		if lx.pos >= len(lx.src) {
			if interp {
				return nil, lx.errf("an interpolation is not closed")
			}
			return append(out, lx.tok(tEOF, "")), nil
		}
		c := lx.src[lx.pos]
		rest := lx.src[lx.pos:]
		switch {
		case c == '\n':
			out = append(out, lx.tok(tNewline, "\n"))
			lx.pos++
			lx.line++
		case c == ' ' || c == '\t' || c == '\r':
			lx.pos++
		case c == '#' || strings.HasPrefix(rest, "//"):
			for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
				lx.pos++
			}
		case strings.HasPrefix(rest, "/*"):
			end := strings.Index(rest, "*/")
			if end < 0 {
				return nil, lx.errf("a comment is not closed")
			}
			lx.line += strings.Count(rest[:end], "\n")
			lx.pos += end + 2
		case c == '"':
			t, err := lx.quoted()
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		case strings.HasPrefix(rest, "<<"):
			t, err := lx.heredoc()
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		case c == '_' || unicode.IsLetter(rune(c)):
			end := lx.pos
			for end < len(lx.src) && (lx.src[end] == '_' || lx.src[end] == '-' || unicode.IsLetter(rune(lx.src[end])) || unicode.IsDigit(rune(lx.src[end]))) {
				end++
			}
			out = append(out, lx.tok(tIdent, lx.src[lx.pos:end]))
			lx.pos = end
		case c >= '0' && c <= '9':
			end := lx.pos
			for end < len(lx.src) && (lx.src[end] >= '0' && lx.src[end] <= '9' || lx.src[end] == '.' ||
				lx.src[end] == 'e' || lx.src[end] == 'E' || (lx.src[end] == '+' || lx.src[end] == '-') && (lx.src[end-1] == 'e' || lx.src[end-1] == 'E')) {
				end++
			}
			out = append(out, lx.tok(tNumber, lx.src[lx.pos:end]))
			lx.pos = end
		default:
			p := ""
			for _, op := range []string{"...", "=>", "==", "!=", "<=", ">=", "&&", "||"} {
				if strings.HasPrefix(rest, op) {
					p = op
					break
				}
			}
			if p == "" {
				if !strings.ContainsRune("{}[](),=:?.*!<>+-/%", rune(c)) {
					return nil, lx.errf("unexpected %q", c)
				}
				p = string(c)
			}
			switch p {
			case "{", "[", "(":
				depth++
			case "}", "]", ")":
				if p == "}" && depth == 0 && interp {
					lx.pos++
					return append(out, lx.tok(tEOF, "")), nil
				}
				depth--
			}
			out = append(out, lx.tok(tPunct, p))
			lx.pos += len(p)
		}
	}
}

// quoted lexes a quoted template from its opening quote.
func (lx *lexer) quoted() (token, error) {
	t := lx.tok(tString, "")
	lx.pos++ // the opening quote
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, tplPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for {
		if lx.pos >= len(lx.src) || lx.src[lx.pos] == '\n' {
			return t, lx.errf("a string is not closed")
		}
		rest := lx.src[lx.pos:]
		switch {
		case rest[0] == '"':
			lx.pos++
			flush()
			return t, nil
		case strings.HasPrefix(rest, "$${"), strings.HasPrefix(rest, "%%{"):
			lit.WriteString(rest[1:3])
			lx.pos += 3
		case strings.HasPrefix(rest, "%{"):
			return t, lx.errf("template directives (%%{…}) are not read by these tests")
		case strings.HasPrefix(rest, "${"):
			flush()
			lx.pos += 2
			toks, err := lx.tokens(true)
			if err != nil {
				return t, err
			}
			t.parts = append(t.parts, tplPart{interp: toks})
		case rest[0] == '\\':
			if len(rest) < 2 {
				return t, lx.errf("a string ends in a backslash")
			}
			switch rest[1] {
			case 'n':
				lit.WriteByte('\n')
			case 'r':
				lit.WriteByte('\r')
			case 't':
				lit.WriteByte('\t')
			case '"', '\\':
				lit.WriteByte(rest[1])
			case 'u', 'U':
				n := map[byte]int{'u': 4, 'U': 8}[rest[1]]
				if len(rest) < 2+n {
					return t, lx.errf("a short escape")
				}
				r, err := strconv.ParseUint(rest[2:2+n], 16, 32)
				if err != nil {
					return t, lx.errf("escape %s: %v", rest[:2+n], err)
				}
				lit.WriteRune(rune(r))
				lx.pos += n
			default:
				return t, lx.errf("unknown escape \\%c", rest[1])
			}
			lx.pos += 2
		default:
			r, n := utf8.DecodeRuneInString(rest)
			lit.WriteRune(r)
			lx.pos += n
		}
	}
}

// heredoc lexes a heredoc, whose text these tests never evaluate.
func (lx *lexer) heredoc() (token, error) {
	t := lx.tok(tHeredoc, "")
	nl := strings.IndexByte(lx.src[lx.pos:], '\n')
	if nl < 0 {
		return t, lx.errf("a heredoc without a body")
	}
	marker := strings.TrimPrefix(strings.TrimPrefix(lx.src[lx.pos:lx.pos+nl], "<<"), "-")
	lx.pos += nl + 1
	lx.line++
	var body strings.Builder
	for lx.pos < len(lx.src) {
		end := strings.IndexByte(lx.src[lx.pos:], '\n')
		if end < 0 {
			end = len(lx.src) - lx.pos
		}
		line := lx.src[lx.pos : lx.pos+end]
		lx.pos += end
		if strings.TrimSpace(line) == marker {
			t.text = body.String()
			return t, nil
		}
		body.WriteString(line + "\n")
		lx.pos++
		lx.line++
	}
	return t, lx.errf("heredoc %s is not closed", marker)
}

// block is a block of a file, or a file's body.
type block struct {
	typ    string
	labels []string
	attrs  map[string]expr
	blocks []*block
	at     string
}

// parseFile reads a .tf file's blocks and attributes.
func parseFile(name, src string) (*block, error) {
	lx := &lexer{file: name, src: src, line: 1}
	toks, err := lx.tokens(false)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	b := &block{at: name}
	if err := p.body(b, true); err != nil {
		return nil, err
	}
	return b, nil
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) is(kind tokenKind, text string) bool {
	t := p.peek()
	return t.kind == kind && (text == "" || t.text == text)
}

func (p *parser) expect(kind tokenKind, text string) (token, error) {
	t := p.next()
	if t.kind != kind || text != "" && t.text != text {
		return t, fmt.Errorf("%s: want %q, found %q", t.at(), text, t.text)
	}
	return t, nil
}

// body reads attributes and blocks up to the closing brace (or the end of
// the file, top).
func (p *parser) body(b *block, top bool) error {
	b.attrs = map[string]expr{}
	for {
		for p.is(tNewline, "") {
			p.next()
		}
		switch t := p.peek(); {
		case top && t.kind == tEOF:
			return nil
		case !top && p.is(tPunct, "}"):
			p.next()
			return nil
		case t.kind != tIdent:
			return fmt.Errorf("%s: want an attribute or a block, found %q", t.at(), t.text)
		}
		name := p.next()
		if p.is(tPunct, "=") {
			p.next()
			e, err := p.expr()
			if err != nil {
				return err
			}
			if !p.is(tNewline, "") && !p.is(tEOF, "") && !p.is(tPunct, "}") {
				return fmt.Errorf("%s: the attribute %s goes on past its expression", p.peek().at(), name.text)
			}
			b.attrs[name.text] = e
			continue
		}
		child := &block{typ: name.text, at: name.at()}
		for !p.is(tPunct, "{") {
			l := p.next()
			switch l.kind {
			case tIdent:
				child.labels = append(child.labels, l.text)
			case tString:
				child.labels = append(child.labels, literal(l))
			default:
				return fmt.Errorf("%s: a block label %q", l.at(), l.text)
			}
		}
		p.next()
		if err := p.body(child, false); err != nil {
			return err
		}
		b.blocks = append(b.blocks, child)
	}
}

// literal is a template without interpolations as its text.
func literal(t token) string {
	var b strings.Builder
	for _, part := range t.parts {
		b.WriteString(part.lit)
	}
	return b.String()
}

// An expression, parsed.
type expr interface{ pos() string }

type (
	litExpr struct {
		v  any
		at string
	}
	tplExpr struct {
		tok   token
		parts []any
	} // string or expr
	tupleExpr struct {
		items []expr
		at    string
	}
	objectExpr struct {
		keys, values []expr
		at           string
	}
	// traversal: a root name, then attributes and indexes
	travExpr struct {
		root string
		path []step
		at   string
	}
	callExpr struct {
		name string
		args []expr
		at   string
	}
	condExpr   struct{ cond, yes, no expr }
	opaqueExpr struct{ what, at string } // parsed, but not evaluated by these tests
)

type step struct {
	attr  string // an attribute, or "" for an index
	index expr   // nil with attr "" for a splat
}

func (e litExpr) pos() string    { return e.at }
func (e tplExpr) pos() string    { return e.tok.at() }
func (e tupleExpr) pos() string  { return e.at }
func (e objectExpr) pos() string { return e.at }
func (e travExpr) pos() string   { return e.at }
func (e callExpr) pos() string   { return e.at }
func (e condExpr) pos() string   { return e.cond.pos() }
func (e opaqueExpr) pos() string { return e.at }

// expr reads an expression: newlines inside brackets are spaces, and only
// there.
func (p *parser) expr() (expr, error) {
	cond, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if !p.is(tPunct, "?") {
		return cond, nil
	}
	p.next()
	yes, err := p.expr()
	if err != nil {
		return nil, err
	}
	p.skipNewlines()
	if _, err := p.expect(tPunct, ":"); err != nil {
		return nil, err
	}
	no, err := p.expr()
	if err != nil {
		return nil, err
	}
	return condExpr{cond, yes, no}, nil
}

// binary operators, weakest first; these tests evaluate none of them.
var binaryOps = [][]string{{"||"}, {"&&"}, {"==", "!="}, {"<", ">", "<=", ">="}, {"+", "-"}, {"*", "/", "%"}}

func (p *parser) binary(level int) (expr, error) {
	if level == len(binaryOps) {
		return p.unary()
	}
	left, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for p.peek().kind == tPunct && contains(binaryOps[level], p.peek().text) {
		op := p.next()
		if _, err := p.binary(level + 1); err != nil {
			return nil, err
		}
		left = opaqueExpr{"the operator " + op.text, op.at()}
	}
	return left, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) unary() (expr, error) {
	if p.is(tPunct, "!") || p.is(tPunct, "-") {
		op := p.next()
		if _, err := p.unary(); err != nil {
			return nil, err
		}
		return opaqueExpr{"the operator " + op.text, op.at()}, nil
	}
	return p.postfix()
}

func (p *parser) postfix() (expr, error) {
	e, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.is(tPunct, "."):
			p.next()
			t := p.next()
			if t.kind == tPunct && t.text == "*" {
				e = appendStep(e, step{})
				continue
			}
			if t.kind != tIdent && t.kind != tNumber {
				return nil, fmt.Errorf("%s: an attribute name, found %q", t.at(), t.text)
			}
			e = appendStep(e, step{attr: t.text})
		case p.is(tPunct, "["):
			p.next()
			p.skipNewlines()
			if p.is(tPunct, "*") {
				p.next()
				e = appendStep(e, step{})
			} else {
				i, err := p.expr()
				if err != nil {
					return nil, err
				}
				e = appendStep(e, step{index: i})
			}
			p.skipNewlines()
			if _, err := p.expect(tPunct, "]"); err != nil {
				return nil, err
			}
		default:
			return e, nil
		}
	}
}

func appendStep(e expr, s step) expr {
	t, ok := e.(travExpr)
	if !ok {
		return opaqueExpr{"a traversal of an expression", e.pos()}
	}
	t.path = append(t.path, s)
	return t
}

func (p *parser) skipNewlines() {
	for p.is(tNewline, "") {
		p.next()
	}
}

func (p *parser) primary() (expr, error) {
	p.skipNewlines()
	t := p.next()
	switch t.kind {
	case tNumber:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: number %s: %w", t.at(), t.text, err)
		}
		return litExpr{f, t.at()}, nil
	case tString:
		e := tplExpr{tok: t}
		for _, part := range t.parts {
			if part.interp == nil {
				e.parts = append(e.parts, part.lit)
				continue
			}
			sub := &parser{toks: part.interp}
			x, err := sub.expr()
			if err != nil {
				return nil, err
			}
			sub.skipNewlines()
			if !sub.is(tEOF, "") {
				return nil, fmt.Errorf("%s: an interpolation goes on past its expression", sub.peek().at())
			}
			e.parts = append(e.parts, x)
		}
		return e, nil
	case tHeredoc:
		return opaqueExpr{"a heredoc", t.at()}, nil
	case tIdent:
		switch t.text {
		case "true", "false":
			return litExpr{t.text == "true", t.at()}, nil
		case "null":
			return litExpr{nil, t.at()}, nil
		}
		if p.is(tPunct, "(") {
			p.next()
			call := callExpr{name: t.text, at: t.at()}
			for {
				p.skipNewlines()
				if p.is(tPunct, ")") {
					p.next()
					return call, nil
				}
				a, err := p.expr()
				if err != nil {
					return nil, err
				}
				call.args = append(call.args, a)
				p.skipNewlines()
				if p.is(tPunct, "...") {
					p.next()
					call.args[len(call.args)-1] = opaqueExpr{"an expanded argument", t.at()}
				}
				if p.is(tPunct, ",") {
					p.next()
				}
			}
		}
		return travExpr{root: t.text, at: t.at()}, nil
	case tPunct:
		switch t.text {
		case "(":
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			p.skipNewlines()
			_, err = p.expect(tPunct, ")")
			return e, err
		case "[":
			return p.collection(t, "]")
		case "{":
			return p.collection(t, "}")
		}
	}
	return nil, fmt.Errorf("%s: an expression cannot begin with %q", t.at(), t.text)
}

// collection reads a tuple or an object from its opening bracket; a for
// expression is parsed and left opaque.
func (p *parser) collection(open token, close string) (expr, error) {
	p.skipNewlines()
	if p.is(tIdent, "for") {
		depth := 1
		for depth > 0 {
			t := p.next()
			switch {
			case t.kind == tEOF:
				return nil, fmt.Errorf("%s: a for expression is not closed", open.at())
			case t.kind == tPunct && (t.text == "[" || t.text == "{" || t.text == "("):
				depth++
			case t.kind == tPunct && (t.text == "]" || t.text == "}" || t.text == ")"):
				depth--
			}
		}
		return opaqueExpr{"a for expression", open.at()}, nil
	}
	tuple := tupleExpr{at: open.at()}
	object := objectExpr{at: open.at()}
	for {
		p.skipNewlines()
		if p.is(tPunct, close) {
			p.next()
			if close == "]" {
				return tuple, nil
			}
			return object, nil
		}
		item, err := p.expr()
		if err != nil {
			return nil, err
		}
		if close == "]" {
			tuple.items = append(tuple.items, item)
		} else {
			if !p.is(tPunct, "=") && !p.is(tPunct, ":") {
				return nil, fmt.Errorf("%s: an object's item without = or :", p.peek().at())
			}
			p.next()
			if k, ok := item.(travExpr); ok && len(k.path) == 0 {
				item = litExpr{k.root, k.at} // a bare key is its name
			}
			value, err := p.expr()
			if err != nil {
				return nil, err
			}
			object.keys, object.values = append(object.keys, item), append(object.values, value)
		}
		if p.is(tPunct, ",") {
			p.next()
		}
	}
}

// module is the .tf files of a directory, read for evaluation.
type module struct {
	dir    string
	files  map[string]*block
	locals map[string]expr
	// evaluated records the quoted strings evaluated so far, by position
	evaluated map[string]bool
	// strings are the positions of every quoted string, with its literal text
	strings map[string]string
}

// unknown is a value the module's inputs decide: a variable, or an
// attribute of a resource; it reads as its reference.
type unknown struct{ ref string }

// readModule reads every .tf file of dir.
func readModule(dir string) (*module, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no .tf files in %s", dir)
	}
	m := &module{dir: dir, files: map[string]*block{}, locals: map[string]expr{}, evaluated: map[string]bool{}, strings: map[string]string{}}
	for _, n := range names {
		src, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		f, err := parseFile(n, string(src))
		if err != nil {
			return nil, err
		}
		m.files[n] = f
		for _, b := range f.blocks {
			if b.typ == "locals" {
				for k, v := range b.attrs {
					m.locals[k] = v
				}
			}
		}
		lx := &lexer{file: n, src: string(src), line: 1}
		toks, _ := lx.tokens(false)
		m.recordStrings(toks)
	}
	return m, nil
}

// recordStrings notes every quoted string of toks, interpolations included.
func (m *module) recordStrings(toks []token) {
	for _, t := range toks {
		if t.kind != tString {
			continue
		}
		m.strings[t.at()+"#"+literal(t)] = literal(t)
		for _, part := range t.parts {
			m.recordStrings(part.interp)
		}
	}
}

// resources are the module's resource blocks, in a stable order.
func (m *module) resources() []*block {
	var out []*block
	for _, f := range m.files {
		for _, b := range f.blocks {
			if b.typ == "resource" {
				out = append(out, b)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// eval evaluates e, with each (nil outside a for_each) for each.key and
// each.value.
func (m *module) eval(e expr, each *[2]any) (any, error) {
	switch e := e.(type) {
	case litExpr:
		return e.v, nil
	case tplExpr:
		m.evaluated[e.tok.at()+"#"+literal(e.tok)] = true
		var b strings.Builder
		for _, part := range e.parts {
			if s, ok := part.(string); ok {
				b.WriteString(s)
				continue
			}
			v, err := m.eval(part.(expr), each)
			if err != nil {
				return nil, err
			}
			s, err := text(v, part.(expr))
			if err != nil {
				return nil, err
			}
			b.WriteString(s)
		}
		return b.String(), nil
	case tupleExpr:
		var out []any
		for _, item := range e.items {
			v, err := m.eval(item, each)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case objectExpr:
		out := map[string]any{}
		for i, k := range e.keys {
			kv, err := m.eval(k, each)
			if err != nil {
				return nil, err
			}
			ks, err := text(kv, k)
			if err != nil {
				return nil, err
			}
			if out[ks], err = m.eval(e.values[i], each); err != nil {
				return nil, err
			}
		}
		return out, nil
	case travExpr:
		return m.traverse(e, each)
	case callExpr:
		if e.name != "join" || len(e.args) != 2 {
			return nil, fmt.Errorf("%s: the function %s (%d arguments) is not one these tests evaluate", e.at, e.name, len(e.args))
		}
		sepv, err := m.eval(e.args[0], each)
		if err != nil {
			return nil, err
		}
		sep, err := text(sepv, e.args[0])
		if err != nil {
			return nil, err
		}
		listv, err := m.eval(e.args[1], each)
		if err != nil {
			return nil, err
		}
		if u, ok := listv.(unknown); ok {
			return unknown{"join(" + sep + ", " + u.ref + ")"}, nil
		}
		list, ok := listv.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: join of %T", e.at, listv)
		}
		parts := make([]string, len(list))
		for i, v := range list {
			if parts[i], err = text(v, e.args[1]); err != nil {
				return nil, err
			}
		}
		return strings.Join(parts, sep), nil
	case condExpr:
		c, err := m.eval(e.cond, each)
		if err != nil {
			return nil, err
		}
		if b, ok := c.(bool); ok {
			if b {
				return m.eval(e.yes, each)
			}
			return m.eval(e.no, each)
		}
		yes, err := m.eval(e.yes, each)
		if err != nil {
			return nil, err
		}
		no, err := m.eval(e.no, each)
		if err != nil {
			return nil, err
		}
		ym, ok1 := yes.(map[string]any)
		nm, ok2 := no.(map[string]any)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: a condition on %v whose results are not both objects", e.pos(), c)
		}
		out := map[string]any{}
		for k, v := range nm {
			out[k] = v
		}
		for k, v := range ym {
			out[k] = v
		}
		return out, nil
	case opaqueExpr:
		return nil, fmt.Errorf("%s: %s is not evaluated by these tests", e.at, e.what)
	}
	return nil, fmt.Errorf("%s: an expression of type %T", e.pos(), e)
}

// traverse evaluates var.NAME, local.NAME and each.key or each.value, with
// the attributes and indexes after them; any other root is a resource's
// attribute, unknown here.
func (m *module) traverse(e travExpr, each *[2]any) (any, error) {
	var v any
	path := e.path
	switch e.root {
	case "var":
		return unknown{"${" + e.root + pathText(path) + "}"}, nil
	case "local":
		if len(path) == 0 || path[0].attr == "" {
			return nil, fmt.Errorf("%s: local without a name", e.at)
		}
		l, ok := m.locals[path[0].attr]
		if !ok {
			return nil, fmt.Errorf("%s: no local %s", e.at, path[0].attr)
		}
		var err error
		if v, err = m.eval(l, each); err != nil {
			return nil, err
		}
		path = path[1:]
	case "each":
		if each == nil || len(path) == 0 || (path[0].attr != "key" && path[0].attr != "value") {
			return nil, fmt.Errorf("%s: each outside a for_each, or without key or value", e.at)
		}
		v = each[map[string]int{"key": 0, "value": 1}[path[0].attr]]
		path = path[1:]
	default:
		return unknown{"${" + e.root + pathText(path) + "}"}, nil
	}
	for _, s := range path {
		if u, ok := v.(unknown); ok {
			return unknown{u.ref + pathText([]step{s})}, nil
		}
		obj, ok := v.(map[string]any)
		if s.attr == "" || !ok {
			return nil, fmt.Errorf("%s: these tests read only an object's attributes by name", e.at)
		}
		if v, ok = obj[s.attr]; !ok {
			return nil, fmt.Errorf("%s: no attribute %s", e.at, s.attr)
		}
	}
	return v, nil
}

func pathText(path []step) string {
	var b strings.Builder
	for _, s := range path {
		switch {
		case s.attr != "":
			b.WriteString("." + s.attr)
		case s.index == nil:
			b.WriteString("[*]")
		default:
			b.WriteString("[…]")
		}
	}
	return b.String()
}

// text is v as a template writes it.
func text(v any, e expr) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case unknown:
		return v.ref, nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	return "", fmt.Errorf("%s: a %T where a string is wanted", e.pos(), v)
}
