package deploy

// A small model of a Terraform module read with hashicorp/hcl/v2: its blocks,
// its variables (type, default, validations), and an evaluator for the
// expressions the checks need, with the variables bound to their defaults (or
// to values a check chooses) and every resource, data source or module
// attribute unknown. Terraform's own functions are not all here; the ones the
// module uses are (a missing one makes the evaluation fail loudly).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// tfBlock is a top-level block: resource, data, module, output, terraform.
type tfBlock struct {
	kind  string // "resource", "data", "module", ...
	typ   string // resource or data type; "" for others
	name  string
	file  string
	block *hclsyntax.Block
}

func (b *tfBlock) body() *hclsyntax.Body { return b.block.Body }

// addr is the block's address: google_x.name, module.name.
func (b *tfBlock) addr() string {
	switch b.kind {
	case "resource":
		return b.typ + "." + b.name
	case "data":
		return "data." + b.typ + "." + b.name
	default:
		return b.kind + "." + b.name
	}
}

func (b *tfBlock) where() string {
	r := b.block.DefRange()
	return fmt.Sprintf("%s:%d %s", b.file, r.Start.Line, b.addr())
}

type tfValidation struct {
	condition hclsyntax.Expression
	message   hclsyntax.Expression
}

type tfVariable struct {
	name        string
	file        string
	line        int
	typ         cty.Type
	hasType     bool
	description string
	hasDefault  bool
	def         cty.Value
	validations []tfValidation
}

type tfModule struct {
	dir       string
	files     []string          // relative paths, sorted
	src       map[string][]byte // by relative path
	resources []*tfBlock
	data      []*tfBlock
	modules   []*tfBlock
	outputs   []*tfBlock
	terraform []*tfBlock
	providers []*tfBlock
	variables map[string]*tfVariable
	locals    map[string]*hclsyntax.Attribute
}

// loadModule parses the .tf files of dir (not of its subdirectories: each
// directory is a module of its own).
func loadModule(dir string) (*tfModule, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no .tf files", dir)
	}
	sort.Strings(names)
	m := &tfModule{dir: dir, src: map[string][]byte{}, variables: map[string]*tfVariable{}, locals: map[string]*hclsyntax.Attribute{}}
	var errs []error
	for _, name := range names {
		rel, _ := filepath.Rel(dir, name)
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		m.files = append(m.files, rel)
		m.src[rel] = src
		f, diags := hclsyntax.ParseConfig(src, rel, hcl.InitialPos)
		if diags.HasErrors() {
			errs = append(errs, diags)
			continue
		}
		body := f.Body.(*hclsyntax.Body)
		if len(body.Attributes) > 0 {
			for _, a := range body.Attributes {
				errs = append(errs, fmt.Errorf("%s:%d: attribute %s outside any block", rel, a.SrcRange.Start.Line, a.Name))
			}
		}
		for _, b := range body.Blocks {
			if err := m.addBlock(rel, b); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return m, errors.Join(errs...)
}

func (m *tfModule) addBlock(file string, b *hclsyntax.Block) error {
	line := b.DefRange().Start.Line
	want := map[string]int{"resource": 2, "data": 2, "module": 1, "output": 1, "variable": 1, "provider": 1, "locals": 0, "terraform": 0, "moved": 0, "import": 0, "check": 1, "removed": 0}
	n, known := want[b.Type]
	if !known {
		return fmt.Errorf("%s:%d: unknown top-level block %q", file, line, b.Type)
	}
	if len(b.Labels) != n {
		return fmt.Errorf("%s:%d: %s block has %d labels, want %d", file, line, b.Type, len(b.Labels), n)
	}
	tb := &tfBlock{kind: b.Type, file: file, block: b}
	switch b.Type {
	case "resource", "data":
		tb.typ, tb.name = b.Labels[0], b.Labels[1]
		if b.Type == "resource" {
			m.resources = append(m.resources, tb)
		} else {
			m.data = append(m.data, tb)
		}
	case "module":
		tb.name = b.Labels[0]
		m.modules = append(m.modules, tb)
	case "output":
		tb.name = b.Labels[0]
		m.outputs = append(m.outputs, tb)
	case "provider":
		tb.name = b.Labels[0]
		m.providers = append(m.providers, tb)
	case "terraform":
		m.terraform = append(m.terraform, tb)
	case "locals":
		for name, a := range b.Body.Attributes {
			if _, dup := m.locals[name]; dup {
				return fmt.Errorf("%s:%d: local.%s defined twice", file, a.SrcRange.Start.Line, name)
			}
			m.locals[name] = a
		}
	case "variable":
		v, err := parseVariable(file, b)
		if err != nil {
			return err
		}
		if _, dup := m.variables[v.name]; dup {
			return fmt.Errorf("%s:%d: variable %s defined twice", file, line, v.name)
		}
		m.variables[v.name] = v
	}
	return nil
}

func parseVariable(file string, b *hclsyntax.Block) (*tfVariable, error) {
	v := &tfVariable{name: b.Labels[0], file: file, line: b.DefRange().Start.Line, typ: cty.DynamicPseudoType}
	where := fmt.Sprintf("%s:%d: variable %s", file, v.line, v.name)
	if a, ok := b.Body.Attributes["type"]; ok {
		t, diags := typeexpr.TypeConstraint(a.Expr)
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s: type: %w", where, diags)
		}
		v.typ, v.hasType = t, true
	}
	if a, ok := b.Body.Attributes["description"]; ok {
		d, diags := a.Expr.Value(nil)
		if diags.HasErrors() || d.Type() != cty.String || d.IsNull() {
			return nil, fmt.Errorf("%s: description is not a literal string", where)
		}
		v.description = d.AsString()
	}
	if a, ok := b.Body.Attributes["default"]; ok {
		d, diags := a.Expr.Value(&hcl.EvalContext{Functions: tfFunctions()})
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s: default: %w", where, diags)
		}
		if !d.IsNull() {
			c, err := convert.Convert(d, v.typ)
			if err != nil {
				return nil, fmt.Errorf("%s: default does not fit the type: %w", where, err)
			}
			d = c
		} else {
			d = cty.NullVal(v.typ)
		}
		v.def, v.hasDefault = d, true
	}
	for _, vb := range b.Body.Blocks {
		if vb.Type != "validation" {
			continue
		}
		c, ok1 := vb.Body.Attributes["condition"]
		msg, ok2 := vb.Body.Attributes["error_message"]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: a validation block needs condition and error_message", where)
		}
		v.validations = append(v.validations, tfValidation{condition: c.Expr, message: msg.Expr})
	}
	return v, nil
}

// resourcesOf returns the module's resources of one type.
func (m *tfModule) resourcesOf(typ string) []*tfBlock {
	var out []*tfBlock
	for _, r := range m.resources {
		if r.typ == typ {
			out = append(out, r)
		}
	}
	return out
}

func (m *tfModule) resource(typ, name string) *tfBlock {
	for _, r := range m.resources {
		if r.typ == typ && r.name == name {
			return r
		}
	}
	return nil
}

// --- evaluation ---------------------------------------------------------

// evalCtx binds var.* to the defaults, overridden by vars; local.* to what
// evaluates; path, terraform and every other root name (resources, data,
// modules, each, count) to unknown values.
func (m *tfModule) evalCtx(vars map[string]cty.Value) *hcl.EvalContext {
	vals := map[string]cty.Value{}
	for name, v := range m.variables {
		switch {
		case vars != nil && vars[name] != cty.NilVal:
			c, err := convert.Convert(vars[name], v.typ)
			if err != nil {
				c = vars[name]
			}
			vals[name] = c
		case v.hasDefault:
			vals[name] = v.def
		default:
			vals[name] = cty.UnknownVal(v.typ)
		}
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{},
		Functions: tfFunctions(),
	}
	for _, root := range m.rootNames() {
		ctx.Variables[root] = cty.DynamicVal
	}
	ctx.Variables["var"] = cty.ObjectVal(vals)
	ctx.Variables["path"] = cty.ObjectVal(map[string]cty.Value{
		"module": cty.StringVal(m.dir), "root": cty.StringVal(m.dir), "cwd": cty.StringVal(m.dir),
	})
	ctx.Variables["terraform"] = cty.ObjectVal(map[string]cty.Value{"workspace": cty.StringVal("default")})

	// Locals may use locals: evaluate in passes until nothing more resolves.
	locals := map[string]cty.Value{}
	for name := range m.locals {
		locals[name] = cty.DynamicVal
	}
	done := map[string]bool{}
	for pass := 0; pass <= len(m.locals); pass++ {
		progress := false
		ctx.Variables["local"] = cty.ObjectVal(locals)
		for name, a := range m.locals {
			if done[name] {
				continue
			}
			if !m.localDepsDone(a.Expr, done) {
				continue
			}
			v, diags := a.Expr.Value(ctx)
			if diags.HasErrors() {
				v = cty.DynamicVal
			}
			locals[name], done[name], progress = v, true, true
			ctx.Variables["local"] = cty.ObjectVal(locals)
		}
		if !progress {
			break
		}
	}
	ctx.Variables["local"] = cty.ObjectVal(locals)
	return ctx
}

// localDepsDone reports whether every local.* an expression uses is evaluated.
func (m *tfModule) localDepsDone(expr hclsyntax.Expression, done map[string]bool) bool {
	for _, t := range hclsyntax.Variables(expr) {
		if t.RootName() != "local" || len(t) < 2 {
			continue
		}
		if a, ok := t[1].(hcl.TraverseAttr); ok && !done[a.Name] {
			if _, defined := m.locals[a.Name]; defined {
				return false
			}
		}
	}
	return true
}

// rootNames lists the root names the module's expressions use, except var,
// local, path and terraform, which evalCtx binds itself.
func (m *tfModule) rootNames() []string {
	seen := map[string]bool{}
	var visit func(*hclsyntax.Body)
	visit = func(b *hclsyntax.Body) {
		for _, a := range b.Attributes {
			for _, t := range hclsyntax.Variables(a.Expr) {
				seen[t.RootName()] = true
			}
		}
		for _, nb := range b.Blocks {
			visit(nb.Body)
		}
	}
	for _, f := range m.allBlocks() {
		visit(f.block.Body)
	}
	for _, a := range m.locals {
		for _, t := range hclsyntax.Variables(a.Expr) {
			seen[t.RootName()] = true
		}
	}
	var out []string
	for name := range seen {
		switch name {
		case "var", "local", "path", "terraform":
		default:
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (m *tfModule) allBlocks() []*tfBlock {
	var all []*tfBlock
	all = append(all, m.resources...)
	all = append(all, m.data...)
	all = append(all, m.modules...)
	all = append(all, m.outputs...)
	all = append(all, m.terraform...)
	all = append(all, m.providers...)
	return all
}

// eval evaluates expr with the variables at their defaults, overridden by vars.
func (m *tfModule) eval(expr hclsyntax.Expression, vars map[string]cty.Value) (cty.Value, error) {
	v, diags := expr.Value(m.evalCtx(vars))
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return v, nil
}

// constant evaluates an expression that refers to nothing at all (a literal,
// or functions of literals); ok is false for anything else.
func constant(expr hclsyntax.Expression) (cty.Value, bool) {
	if len(hclsyntax.Variables(expr)) > 0 {
		return cty.NilVal, false
	}
	v, diags := expr.Value(&hcl.EvalContext{Functions: tfFunctions()})
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return cty.NilVal, false
	}
	return v, true
}

// varsOf lists the input variables an expression reads.
func varsOf(expr hclsyntax.Expression) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range hclsyntax.Variables(expr) {
		if t.RootName() != "var" || len(t) < 2 {
			continue
		}
		if a, ok := t[1].(hcl.TraverseAttr); ok && !seen[a.Name] {
			seen[a.Name] = true
			out = append(out, a.Name)
		}
	}
	sort.Strings(out)
	return out
}

// refersTo reports whether expr refers to TYPE.NAME (a resource), or to any
// resource of TYPE when name is "".
func refersTo(expr hclsyntax.Expression, typ, name string) bool {
	for _, t := range hclsyntax.Variables(expr) {
		if t.RootName() != typ {
			continue
		}
		if name == "" {
			return true
		}
		if len(t) > 1 {
			if a, ok := t[1].(hcl.TraverseAttr); ok && a.Name == name {
				return true
			}
		}
	}
	return false
}

// referredNames lists the NAMEs of the TYPE.NAME resources expr refers to.
func referredNames(expr hclsyntax.Expression, typ string) []string {
	var out []string
	for _, t := range hclsyntax.Variables(expr) {
		if t.RootName() == typ && len(t) > 1 {
			if a, ok := t[1].(hcl.TraverseAttr); ok {
				out = append(out, a.Name)
			}
		}
	}
	return out
}

// validate runs a variable's validation blocks on a value (the other variables
// at their defaults): nil when every condition holds; otherwise why not.
func (m *tfModule) validate(name string, val cty.Value) error {
	v, ok := m.variables[name]
	if !ok {
		return fmt.Errorf("no variable %s", name)
	}
	if _, err := convert.Convert(val, v.typ); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	ctx := m.evalCtx(map[string]cty.Value{name: val})
	for _, vd := range v.validations {
		ok, diags := vd.condition.Value(ctx)
		if diags.HasErrors() {
			return fmt.Errorf("condition fails to evaluate: %w", diags)
		}
		if !ok.IsKnown() || ok.IsNull() || ok.Type() != cty.Bool {
			return fmt.Errorf("condition is not a known bool: %#v", ok)
		}
		if ok.False() {
			msg, _ := vd.message.Value(ctx)
			if msg.Type() == cty.String && msg.IsKnown() && !msg.IsNull() {
				return errors.New(msg.AsString())
			}
			return errors.New("rejected")
		}
	}
	return nil
}

// --- block and attribute access ------------------------------------------

func blocksOf(body *hclsyntax.Body, typ string) []*hclsyntax.Block {
	if body == nil {
		return nil
	}
	var out []*hclsyntax.Block
	for _, b := range body.Blocks {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

// sub follows the first block of each type in turn: sub(b, "template",
// "vpc_access") is the body of template { vpc_access { … } }, or nil.
func sub(body *hclsyntax.Body, types ...string) *hclsyntax.Body {
	for _, t := range types {
		bs := blocksOf(body, t)
		if len(bs) == 0 {
			return nil
		}
		body = bs[0].Body
	}
	return body
}

func attr(body *hclsyntax.Body, name string) *hclsyntax.Attribute {
	if body == nil {
		return nil
	}
	return body.Attributes[name]
}

// constString is the value of an attribute that is a literal string, or "".
func constString(body *hclsyntax.Body, name string) (string, bool) {
	a := attr(body, name)
	if a == nil {
		return "", false
	}
	v, ok := constant(a.Expr)
	if !ok || v.Type() != cty.String || v.IsNull() {
		return "", false
	}
	return v.AsString(), true
}

// stringsOf flattens a known string, or list, set or tuple of strings.
func stringsOf(v cty.Value) ([]string, bool) {
	if v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() {
		return nil, false
	}
	if v.Type() == cty.String {
		return []string{v.AsString()}, true
	}
	if !v.CanIterateElements() {
		return nil, false
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || !e.IsKnown() || e.Type() != cty.String {
			return nil, false
		}
		out = append(out, e.AsString())
	}
	return out, true
}

// traversalString renders a traversal such as template[0].containers[0].image.
func traversalString(t hcl.Traversal) string {
	var b strings.Builder
	for i, step := range t {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Name)
		case hcl.TraverseIndex:
			switch {
			case s.Key.Type() == cty.Number:
				b.WriteString("[" + s.Key.AsBigFloat().Text('f', -1) + "]")
			case s.Key.Type() == cty.String:
				b.WriteString(fmt.Sprintf("[%q]", s.Key.AsString()))
			}
		}
	}
	return b.String()
}

// literalStrings collects every literal string in an expression: whole
// literals, and the literal parts of templates.
func literalStrings(expr hclsyntax.Expression) []string {
	var out []string
	_ = hclsyntax.VisitAll(expr, func(n hclsyntax.Node) hcl.Diagnostics {
		if l, ok := n.(*hclsyntax.LiteralValueExpr); ok && l.Val.Type() == cty.String && !l.Val.IsNull() {
			out = append(out, l.Val.AsString())
		}
		return nil
	})
	return out
}

// --- functions ----------------------------------------------------------

func tfFunctions() map[string]function.Function {
	return map[string]function.Function{
		"alltrue":    boolFold(true),
		"anytrue":    boolFold(false),
		"can":        tryfunc.CanFunc,
		"coalesce":   stdlib.CoalesceFunc,
		"concat":     stdlib.ConcatFunc,
		"contains":   stdlib.ContainsFunc,
		"distinct":   stdlib.DistinctFunc,
		"endswith":   affixFunc(strings.HasSuffix),
		"floor":      stdlib.FloorFunc,
		"format":     stdlib.FormatFunc,
		"join":       stdlib.JoinFunc,
		"keys":       stdlib.KeysFunc,
		"length":     stdlib.LengthFunc,
		"lookup":     stdlib.LookupFunc,
		"lower":      stdlib.LowerFunc,
		"max":        stdlib.MaxFunc,
		"merge":      stdlib.MergeFunc,
		"min":        stdlib.MinFunc,
		"one":        oneFunc,
		"regex":      stdlib.RegexFunc,
		"split":      stdlib.SplitFunc,
		"startswith": affixFunc(strings.HasPrefix),
		"tolist":     convertFunc(func(t cty.Type) cty.Type { return cty.List(t) }),
		"tonumber":   convertFunc(func(cty.Type) cty.Type { return cty.Number }),
		"toset":      convertFunc(func(t cty.Type) cty.Type { return cty.Set(t) }),
		"tostring":   convertFunc(func(cty.Type) cty.Type { return cty.String }),
		"trimprefix": stdlib.TrimPrefixFunc,
		"trimsuffix": stdlib.TrimSuffixFunc,
		"try":        tryfunc.TryFunc,
		"upper":      stdlib.UpperFunc,
		"values":     stdlib.ValuesFunc,
	}
}

// boolFold is alltrue (all=true) or anytrue (all=false).
func boolFold(all bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			l := args[0]
			if !l.IsWhollyKnown() {
				return cty.UnknownVal(cty.Bool), nil
			}
			if !l.CanIterateElements() {
				return cty.NilVal, errors.New("want a list of bools")
			}
			for it := l.ElementIterator(); it.Next(); {
				_, e := it.Element()
				b, err := convert.Convert(e, cty.Bool)
				if err != nil || b.IsNull() {
					return cty.NilVal, errors.New("want a list of bools")
				}
				if b.True() != all {
					return cty.BoolVal(!all), nil
				}
			}
			return cty.BoolVal(all), nil
		},
	})
}

func affixFunc(has func(s, affix string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "affix", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(has(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

// convertFunc is tonumber, tostring, toset or tolist: conversion to the type
// that want derives from the element type (for collections).
func convertFunc(want func(elem cty.Type) cty.Type) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true}},
		Type: func(args []cty.Value) (cty.Type, error) {
			elem := cty.DynamicPseudoType
			t := args[0].Type()
			switch {
			case t.IsListType() || t.IsSetType():
				elem = t.ElementType()
			case t.IsTupleType():
				if ets := t.TupleElementTypes(); len(ets) > 0 {
					if u, _ := convert.UnifyUnsafe(ets); u != cty.NilType {
						elem = u
					}
				}
			}
			return want(elem), nil
		},
		Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
			v := args[0]
			if v.Type().IsTupleType() && v.LengthInt() == 0 {
				switch {
				case ret.IsSetType():
					return cty.SetValEmpty(ret.ElementType()), nil
				case ret.IsListType():
					return cty.ListValEmpty(ret.ElementType()), nil
				}
			}
			return convert.Convert(v, ret)
		},
	})
}

var oneFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType, AllowUnknown: true}},
	Type:   function.StaticReturnType(cty.DynamicPseudoType),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		l := args[0]
		if !l.IsKnown() {
			return cty.DynamicVal, nil
		}
		if !l.CanIterateElements() {
			return cty.NilVal, errors.New("want a list, set or tuple")
		}
		switch l.LengthInt() {
		case 0:
			return cty.NullVal(cty.DynamicPseudoType), nil
		case 1:
			it := l.ElementIterator()
			it.Next()
			_, e := it.Element()
			return e, nil
		default:
			return cty.NilVal, errors.New("more than one element")
		}
	},
})
