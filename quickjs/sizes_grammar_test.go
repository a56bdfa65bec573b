package quickjs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The grammar of FuzzBuiltinSizes: it turns any byte string into a script
// that calls the builtins whose native code multiplies an element count by
// an element size, on receivers and with arguments at the counts where such
// a product wraps on wasm32 (where size_t is 32 bits).
//
// Each byte chooses one alternative of one choice point (the byte modulo the
// number of alternatives); once the bytes run out every choice is the first
// alternative, so every byte string, the empty one included, is a script,
// and the same bytes are always the same script. Every statement of a script
// runs inside a try block, so that a statement that throws (most do, on
// these counts) does not keep the next from running; the catch rethrows
// only the realm's out-of-memory error, so that a run which met its memory
// limit ends there and a later trap is never read as that limit.
//
// Seeds are written as recipes: the names of the alternatives to take, in
// the order the generator meets their choice points (sizesEncode).

// sizesGen is one decoding (or, with a recipe, one encoding) of a script.
type sizesGen struct {
	data []byte // the fuzzer's bytes
	pos  int

	encoding bool     // choose by recipe, and record the bytes in out
	recipe   []string // the names still to choose
	out      []byte
	err      error // the first name of the recipe that did not fit its choice point

	depth int // nesting of receivers, which recurse

	trace  []sizesChoice       // every choice made, in order
	tables map[string][]string // every choice point met, with its alternatives
}

// sizesChoice is one choice: the alternative called name at choice point at.
type sizesChoice struct{ at, name string }

// sizesMaxDepth bounds receivers within receivers (a proxy of a species
// array of a proxy ...).
const sizesMaxDepth = 3

// pick chooses one of names at choice point at and returns its index.
func (g *sizesGen) pick(at string, names []string) int {
	if len(names) == 0 || len(names) > 256 {
		panic(fmt.Sprintf("choice point %s has %d alternatives; a byte chooses among 1 to 256", at, len(names)))
	}
	i := 0
	switch {
	case g.encoding:
		if len(g.recipe) > 0 {
			want := g.recipe[0]
			g.recipe = g.recipe[1:]
			if i = slices.Index(names, want); i < 0 {
				if g.err == nil {
					g.err = fmt.Errorf("recipe name %q is not an alternative of %s (%s)", want, at, strings.Join(names, " | "))
				}
				i = 0
			}
			g.out = append(g.out, byte(i))
		}
	case g.pos < len(g.data):
		i = int(g.data[g.pos]) % len(names)
		g.pos++
	}
	if g.tables == nil {
		g.tables = map[string][]string{}
	}
	if seen, ok := g.tables[at]; !ok {
		// a recipe names an alternative: two of one name would be one
		for j, name := range names {
			if slices.Index(names, name) != j {
				panic(fmt.Sprintf("choice point %s has two alternatives named %q", at, name))
			}
		}
		g.tables[at] = names
	} else if !slices.Equal(seen, names) {
		panic(fmt.Sprintf("two choice points are named %s: one of %s, one of %s", at, strings.Join(seen, " | "), strings.Join(names, " | ")))
	}
	g.trace = append(g.trace, sizesChoice{at, names[i]})
	return i
}

// alt is one alternative of a choice point: its name and what it writes.
type alt struct {
	name string
	gen  func() string
}

// one chooses one of alts at choice point at and writes it.
func (g *sizesGen) one(at string, alts ...alt) string {
	names := make([]string, len(alts))
	for i, a := range alts {
		names[i] = a.name
	}
	return alts[g.pick(at, names)].gen()
}

// word chooses one of words at choice point at; each is its own name.
func (g *sizesGen) word(at string, words ...string) string {
	return words[g.pick(at, words)]
}

// lit is an alternative that writes its name.
func lit(s string) alt { return alt{s, func() string { return s }} }

// nested writes f one receiver deeper, or leaf at the depth bound.
func (g *sizesGen) nested(leaf string, f func() string) string {
	if g.depth >= sizesMaxDepth {
		return leaf
	}
	g.depth++
	defer func() { g.depth-- }()
	return f()
}

// script is the whole script.
func (g *sizesGen) script() string {
	var b strings.Builder
	b.WriteString("const oom = e => { try { return e instanceof InternalError && e.message === \"out of memory\" } catch { return false } };\n")
	b.WriteString("let n = 0, v;\n")
	count, _ := strconv.Atoi(g.word("statements", "1", "2", "3"))
	for range count {
		fmt.Fprintf(&b, "try { %s %sn++ } catch (e) { if (oom(e)) throw e }\n", g.statement(), g.after())
	}
	b.WriteString("n\n")
	return b.String()
}

// statement declares the receiver r (and what else its family needs) and
// sets v to the result of one call.
func (g *sizesGen) statement() string {
	return g.one("family",
		alt{"array", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.arrayish(), g.arrayOp("r")) }},
		alt{"typedarray", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.typed(), g.typedOp("r")) }},
		alt{"string", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.str(), g.stringOp()) }},
		alt{"object", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.arrayish(), g.objectOp()) }},
		alt{"reflect", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.arrayish(), g.reflectOp()) }},
		alt{"function", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.arrayish(), g.functionOp()) }},
		alt{"json", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.arrayish(), g.jsonOp()) }},
		alt{"proxy", func() string {
			return fmt.Sprintf("const r = %s; v = %s;", g.nested("new Proxy([], {})", g.proxy), g.proxyOp())
		}},
		alt{"regexp", func() string { return fmt.Sprintf("const r = %s, re = %s; v = %s;", g.str(), g.regexp(), g.regexpOp()) }},
		alt{"mapset", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.iterable(), g.mapSetOp()) }},
		alt{"iterator", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.iterator(), g.iteratorOp()) }},
		alt{"arraybuffer", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.buffer(), g.bufferOp()) }},
		alt{"dataview", func() string {
			return fmt.Sprintf("const r = %s, d = new DataView(r%s); v = %s;", g.buffer(), g.viewArgs(), g.dataViewOp())
		}},
		alt{"number", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.number(), g.numberOp()) }},
		alt{"bigint", func() string { return fmt.Sprintf("const r = %s; v = %s;", g.bigint(), g.bigintOp()) }},
	)
}

// after touches the result, so that memory a call damaged is read or
// reallocated while the run still goes.
func (g *sizesGen) after() string {
	return g.word("after",
		"",
		"void v?.length; ",
		"void v?.[v?.length - 1]; ",
		"void v?.at?.(-1); ",
		"for (let i = 0; i < 64; i++) void [i, {i}, \"s\" + i]; ",
		"{ let c = 0; for (const x of v) if (++c > 8) break } ",
		"void JSON.stringify(v)?.length; ",
	)
}

// count is a length, an index or a count: the boundaries where an element
// count times an element size wraps on wasm32 (2^32 / size), the limits of
// the engine's integer types, and what ToIntegerOrInfinity and ToLength
// make of negative, fractional, infinite and non-numeric values.
func (g *sizesGen) count() string {
	pow := func(p int) alt {
		return alt{fmt.Sprintf("2^%d", p), func() string {
			return fmt.Sprintf("2**%d%s", p, g.word("delta", "", "+1", "-1"))
		}}
	}
	return g.one("count",
		alt{"small", func() string { return g.word("small", "0", "1", "2", "3", "7", "8", "16", "255", "1024") }},
		pow(16), pow(28), pow(29), pow(30), pow(31), pow(32),
		lit("2**53-1"),
		lit("2**53"),
		alt{"wrap", func() string {
			// the least count whose size overflows 32 bits for an element of
			// this many bytes, and its neighbours
			size, _ := strconv.Atoi(g.word("element size", "2", "3", "4", "6", "8", "12", "16", "20", "24", "32", "48", "64"))
			c := ((1 << 32) + size - 1) / size
			switch g.word("delta", "", "+1", "-1") {
			case "+1":
				c++
			case "-1":
				c--
			}
			return strconv.Itoa(c)
		}},
		alt{"negative", func() string { return g.word("negative", "-1", "-2", "-(2**31)", "-(2**32)-1", "-(2**53)") }},
		lit("NaN"),
		lit("-0"),
		lit("Infinity"),
		lit("-Infinity"),
		alt{"fraction", func() string { return g.word("fraction", "0.5", "-0.5", "2**31-0.5", "2**32-0.5", "1e-300") }},
		alt{"numeric string", func() string {
			return g.word("numeric string", `"4294967297"`, `"2147483648"`, `"-1"`, `"1e9"`, `" 0x20000001 "`)
		}},
		alt{"valueOf", func() string {
			return g.nested("1", func() string { return fmt.Sprintf("{valueOf() { return %s }}", g.count()) })
		}},
		alt{"power", func() string {
			p := g.pick("power", sizesNumbers(64))
			return fmt.Sprintf("2**%d%s", p, g.word("delta", "", "+1", "-1"))
		}},
	)
}

// sizesNumbers is the names "0" to "n-1".
func sizesNumbers(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}

// smallish is a count the memory limit lets a script really allocate.
func (g *sizesGen) smallish() string {
	return g.word("smallish", "16", "1024", "2**16", "2**16+1", "2**20")
}

// val is an element or an argument of no particular size.
func (g *sizesGen) val() string {
	return g.one("value",
		lit("1"), lit(`"x"`), lit("undefined"), lit("null"), lit("{}"), lit("[1, [2]]"),
		lit("() => 0"), lit("1n"), lit("-0"), lit("NaN"), lit("Symbol()"),
		alt{"count", g.count},
	)
}

// arrayish is an array or an array-like object: sparse, holey, lying about
// its length, a proxy, a typed array, a string.
func (g *sizesGen) arrayish() string {
	return g.nested("[1, 2, 3]", func() string {
		return g.one("arrayish",
			alt{"literal", func() string { return fmt.Sprintf("[%s, %s, %s]", g.val(), g.val(), g.val()) }},
			alt{"sparse", func() string { return fmt.Sprintf("new Array(%s)", g.count()) }},
			alt{"sparse with last", func() string {
				return fmt.Sprintf("((L, x) => { const a = new Array(L); a[L - 1] = x; return a })(%s, %s)", g.count(), g.val())
			}},
			alt{"dense", func() string { return fmt.Sprintf("Array(%s).fill(%s)", g.smallish(), g.val()) }},
			alt{"length set", func() string { return fmt.Sprintf("(a => (a.length = %s, a))([%s, %s])", g.count(), g.val(), g.val()) }},
			alt{"array-like", func() string { return fmt.Sprintf("({length: %s})", g.count()) }},
			alt{"array-like with ends", func() string {
				return fmt.Sprintf("((L, x) => ({length: L, 0: x, [L - 1]: x}))(%s, %s)", g.count(), g.val())
			}},
			alt{"length changes", func() string {
				return fmt.Sprintf("(() => { let c = 0; return {get length() { return c++ < %s ? %s : %s }, 0: %s} })()",
					g.word("reads", "0", "1", "2", "3"), g.count(), g.count(), g.val())
			}},
			alt{"proxy", g.proxy},
			alt{"typed", g.typed},
			alt{"string", g.str},
			alt{"arguments", func() string { return fmt.Sprintf("(function () { return arguments })(%s, %s)", g.val(), g.val()) }},
			alt{"species", func() string {
				return fmt.Sprintf("((a, s) => (a.constructor = {[Symbol.species]: function () { return s }}, a))([%s, %s], %s)",
					g.val(), g.val(), g.arrayish())
			}},
			alt{"nested", func() string { return fmt.Sprintf("[%s, [%s, [%s]], %s]", g.val(), g.val(), g.val(), g.arrayish()) }},
		)
	})
}

// proxy is a proxy whose traps lie: about its length, its keys, its
// properties.
func (g *sizesGen) proxy() string {
	target := g.one("proxy target",
		lit("[]"), lit("{}"), lit("function () {}"),
		alt{"arrayish", g.arrayish},
	)
	n, _ := strconv.Atoi(g.word("traps", "1", "2", "3"))
	traps := make([]string, n)
	for i := range traps {
		traps[i] = g.trap()
	}
	return fmt.Sprintf("(() => { let c = 0; return new Proxy(%s, {%s}) })()", target, strings.Join(traps, ", "))
}

// trap is one trap of a proxy's handler.
func (g *sizesGen) trap() string {
	return g.one("trap",
		alt{"get length", func() string {
			return fmt.Sprintf(`get(t, k, r) { return k === "length" ? %s : Reflect.get(t, k, r) }`, g.count())
		}},
		alt{"get length changes", func() string {
			return fmt.Sprintf(`get(t, k, r) { return k === "length" ? (c++ < %s ? %s : %s) : Reflect.get(t, k, r) }`,
				g.word("reads", "0", "1", "2", "3"), g.count(), g.count())
		}},
		alt{"get everything", func() string { return fmt.Sprintf(`get(t, k) { return k === "length" ? %s : %s }`, g.count(), g.val()) }},
		alt{"ownKeys", func() string { return fmt.Sprintf("ownKeys() { return %s }", g.keys()) }},
		lit("has() { return true }"),
		alt{"getOwnPropertyDescriptor", func() string {
			return fmt.Sprintf("getOwnPropertyDescriptor() { return {value: %s, writable: true, enumerable: true, configurable: true} }", g.val())
		}},
		lit("defineProperty() { return true }"),
		lit("deleteProperty() { return true }"),
		lit("set() { return true }"),
		lit("getPrototypeOf() { return Array.prototype }"),
		alt{"apply", func() string { return fmt.Sprintf("apply() { return %s }", g.val()) }},
		lit("construct() { return [] }"),
	)
}

// keys is what an ownKeys trap returns: a huge array or array-like, keys
// that repeat, a length that changes between reads.
func (g *sizesGen) keys() string {
	return g.one("keys",
		alt{"sparse", func() string { return fmt.Sprintf("new Array(%s)", g.count()) }},
		alt{"array-like", func() string { return fmt.Sprintf("({length: %s})", g.count()) }},
		alt{"distinct", func() string { return fmt.Sprintf(`Array.from({length: %s}, (_, i) => "k" + i)`, g.smallish()) }},
		alt{"sparse with keys", func() string { return fmt.Sprintf(`Object.assign(new Array(%s), ["a", "b"])`, g.count()) }},
		alt{"repeated", func() string { return fmt.Sprintf(`Array(%s).fill("a")`, g.smallish()) }},
		alt{"length changes", func() string {
			return fmt.Sprintf(`(() => { let d = 0; return {get length() { return d++ < %s ? %s : %s }, 0: "a"} })()`,
				g.word("reads", "0", "1", "2", "3"), g.count(), g.count())
		}},
		lit(`[Symbol(), "a", Symbol.iterator]`),
	)
}

// typedArray is the name of a typed array constructor.
func (g *sizesGen) typedArray() string {
	return g.word("typed array", "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Float16Array",
		"Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array")
}

// bytes is a byte length the memory limit lets a script allocate.
func (g *sizesGen) bytes() string {
	return g.word("bytes", "0", "1", "8", "64", "4096", "2**16", "2**20")
}

// typed is a typed array: of a length, over a buffer at an offset, tracking
// a resizable buffer, shrunk or detached under its view.
func (g *sizesGen) typed() string {
	return g.one("typed",
		alt{"length", func() string { return fmt.Sprintf("new %s(%s)", g.typedArray(), g.count()) }},
		alt{"small", func() string { return fmt.Sprintf("new %s(%s)", g.typedArray(), g.smallish()) }},
		alt{"from", func() string {
			return fmt.Sprintf("new %s(%s)", g.typedArray(), g.nested("[1, 2, 3]", g.arrayish))
		}},
		alt{"view", func() string {
			return fmt.Sprintf("new %s(new ArrayBuffer(%s), %s, %s)", g.typedArray(), g.bytes(), g.count(), g.count())
		}},
		alt{"tracking", func() string {
			return fmt.Sprintf("new %s(new ArrayBuffer(%s, {maxByteLength: %s}), %s)", g.typedArray(), g.bytes(), g.count(), g.word("offset", "0", "1", "8"))
		}},
		alt{"subarray", func() string {
			return fmt.Sprintf("new %s(%s).subarray(%s, %s)", g.typedArray(), g.smallish(), g.count(), g.count())
		}},
		alt{"shrunk", func() string {
			return fmt.Sprintf("(t => (t.buffer.resize(%s), t))(new %s(new ArrayBuffer(64, {maxByteLength: 2**16}), 8))",
				g.word("few", "0", "4", "8", "9", "16"), g.typedArray())
		}},
		alt{"detached", func() string { return fmt.Sprintf("(t => (t.buffer.transfer(), t))(new %s(8))", g.typedArray()) }},
		alt{"species", func() string {
			return fmt.Sprintf("(t => (t.constructor = {[Symbol.species]: function () { return new %s(%s) }}, t))(new %s(%s))",
				g.typedArray(), g.word("few", "0", "4", "8", "9", "16"), g.typedArray(), g.smallish())
		}},
	)
}

// buffer is an ArrayBuffer: fixed, resizable to a maximum at a boundary,
// detached.
func (g *sizesGen) buffer() string {
	return g.one("buffer",
		alt{"fixed", func() string { return fmt.Sprintf("new ArrayBuffer(%s)", g.bytes()) }},
		alt{"resizable", func() string { return fmt.Sprintf("new ArrayBuffer(%s, {maxByteLength: %s})", g.bytes(), g.count()) }},
		alt{"room to grow", func() string { return fmt.Sprintf("new ArrayBuffer(%s, {maxByteLength: 2**20})", g.bytes()) }},
		alt{"length", func() string { return fmt.Sprintf("new ArrayBuffer(%s)", g.count()) }},
		lit("(b => (b.transfer(), b))(new ArrayBuffer(8))"),
		alt{"species", func() string {
			return fmt.Sprintf("(b => (b.constructor = {[Symbol.species]: function () { return new ArrayBuffer(%s) }}, b))(new ArrayBuffer(%s))",
				g.word("few", "0", "4", "8", "9", "16"), g.bytes())
		}},
	)
}

// shortStr is a string literal whose characters change size: under
// normalization (U+FDFA is 18 characters in NFKD), case mapping (U+0130,
// U+00DF; U+0390 is 3 characters in upper case), as UTF-16 (surrogates).
func (g *sizesGen) shortStr() string {
	return g.word("short string", `"abc"`, `""`, `"\u00DF"`, `"\uFDFA"`, `"\u0130"`, `"\u0390"`, `"\uD83D\uDE00"`, `"\uD800"`, `"a\u0301"`, `"$&"`, `","`)
}

// str is a string: short, repeated, or a rope doubled to 2^26 to 2^30
// characters that costs little memory until it is flattened.
func (g *sizesGen) str() string {
	return g.one("string",
		alt{"short", g.shortStr},
		alt{"repeat", func() string { return fmt.Sprintf("%s.repeat(%s)", g.shortStr(), g.smallish()) }},
		alt{"rope", func() string {
			return fmt.Sprintf("(s => { for (let i = 0; i < %s; i++) s += s; return s })(%s.repeat(2**16))",
				g.word("doublings", "10", "12", "13", "14"), g.shortStr())
		}},
		alt{"repeat count", func() string { return fmt.Sprintf("%s.repeat(%s)", g.shortStr(), g.count()) }},
		alt{"number", func() string { return fmt.Sprintf("String(%s)", g.count()) }},
		alt{"join", func() string { return fmt.Sprintf("Array(%s).join(%s)", g.smallish(), g.shortStr()) }},
	)
}

// callback is a function a builtin calls: plain, a comparator that lies,
// or one that changes the receiver r under the builtin's feet.
func (g *sizesGen) callback() string {
	return g.one("callback",
		lit("x => x"),
		alt{"constant", func() string { return fmt.Sprintf("() => (%s)", g.val()) }},
		lit("() => true"),
		lit("(x, i) => i"),
		lit("x => [x, x]"),
		lit("(a, b) => (a < b ? -1 : a > b ? 1 : 0)"),
		lit("() => -1"),
		lit("() => Math.random() - 0.5"),
		alt{"shrink", func() string { return fmt.Sprintf("() => (r.length = %s, 0)", g.word("few", "0", "4", "8", "9", "16")) }},
		alt{"grow", func() string { return fmt.Sprintf("() => (r.length = %s, 0)", g.count()) }},
		lit("x => (Array.prototype.push.call(r, x), 0)"),
		lit("() => ((r.buffer ?? r).transfer?.(), 0)"),
		alt{"resize", func() string { return fmt.Sprintf("() => ((r.buffer ?? r).resize?.(%s), 0)", g.count()) }},
		lit("() => { throw 1 }"),
	)
}

// method writes a call of a prototype method on receiver recv: as recv's
// own (recv.m(args)) or through the prototype (proto.m.call(recv, args)),
// which reaches it on any receiver.
func (g *sizesGen) method(proto, recv, name string, args ...string) string {
	a := strings.Join(args, ", ")
	if g.word("form", "method", "call") == "call" {
		if a != "" {
			a = ", " + a
		}
		return fmt.Sprintf("%s.%s.call(%s%s)", proto, name, recv, a)
	}
	return fmt.Sprintf("%s.%s(%s)", recv, name, a)
}

// items is the optional items of splice, toSpliced, push and unshift.
func (g *sizesGen) items() []string {
	var items []string
	g.one("items",
		alt{"none", func() string { return "" }},
		alt{"one", func() string { items = []string{g.val()}; return "" }},
		alt{"two", func() string { items = []string{g.val(), g.val()}; return "" }},
		alt{"spread", func() string { items = []string{"..." + g.nested("[1]", g.arrayish)}; return "" }},
	)
	return items
}

// concatArg is an argument of concat: spreadable at a length.
func (g *sizesGen) concatArg() string {
	return g.one("concat argument",
		alt{"arrayish", func() string { return g.nested("[1]", g.arrayish) }},
		alt{"spreadable", func() string { return fmt.Sprintf("({length: %s, [Symbol.isConcatSpreadable]: true})", g.count()) }},
		alt{"value", g.val},
	)
}

// arrayOp calls an Array method on recv.
func (g *sizesGen) arrayOp(recv string) string {
	m := func(name string, args ...func() string) alt {
		return alt{name, func() string {
			vals := make([]string, len(args))
			for i, a := range args {
				vals[i] = a()
			}
			return g.method("Array.prototype", recv, methodName(name), vals...)
		}}
	}
	withItems := func(name string, args ...func() string) alt {
		return alt{name, func() string {
			vals := make([]string, len(args))
			for i, a := range args {
				vals[i] = a()
			}
			return g.method("Array.prototype", recv, methodName(name), append(vals, g.items()...)...)
		}}
	}
	c, v, cb := g.count, g.val, g.callback
	return g.one("array method",
		m("toReversed"), m("toSorted"), withItems("toSpliced", c, c), m("with", c, v),
		m("toSorted(compare)", cb),
		m("concat", g.concatArg, g.concatArg), m("flat", c), m("flatMap", cb),
		m("fill", v, c, c), m("copyWithin", c, c, c),
		withItems("splice", c, c), m("slice", c, c),
		m("join", g.str), m("indexOf", v, c), m("lastIndexOf", v, c), m("includes", v, c),
		m("at", c), m("reverse"), m("sort(compare)", cb), m("sort"),
		m("map", cb), m("filter", cb), m("forEach", cb), m("every", cb), m("some", cb),
		m("find", cb), m("findIndex", cb), m("findLast", cb), m("findLastIndex", cb),
		m("reduce", cb, v), m("reduceRight", cb, v),
		withItems("push"), withItems("unshift"), m("pop"), m("shift"),
		m("keys"), m("values"), m("entries"), m("toString"), m("toLocaleString"),
		alt{"Array.from", func() string { return fmt.Sprintf("Array.from(%s)", recv) }},
		alt{"Array.from map", func() string { return fmt.Sprintf("Array.from(%s, %s)", recv, g.callback()) }},
		alt{"Array.from length", func() string { return fmt.Sprintf("Array.from({length: %s}, %s)", g.count(), g.callback()) }},
		alt{"Array.of spread", func() string { return fmt.Sprintf("Array.of(...%s)", recv) }},
		alt{"Array.of apply", func() string { return fmt.Sprintf("Array.of.apply(null, %s)", recv) }},
		alt{"concat into", func() string { return fmt.Sprintf("[].concat(%s, %s)", recv, g.concatArg()) }},
		alt{"set length", func() string { return fmt.Sprintf("(%s.length = %s)", recv, g.count()) }},
		alt{"new Array", func() string { return fmt.Sprintf("new Array(%s, %s)", g.count(), g.val()) }},
	)
}

// typedOp calls a TypedArray method on recv, or makes a typed array of it.
func (g *sizesGen) typedOp(recv string) string {
	m := func(name string, args ...func() string) alt {
		return alt{name, func() string {
			vals := make([]string, len(args))
			for i, a := range args {
				vals[i] = a()
			}
			return fmt.Sprintf("%s.%s(%s)", recv, methodName(name), strings.Join(vals, ", "))
		}}
	}
	c, v, cb := g.count, g.val, g.callback
	return g.one("typed array method",
		m("toReversed"), m("toSorted"), m("toSorted(compare)", cb), m("with", c, v),
		m("sort"), m("sort(compare)", cb), m("fill", v, c, c), m("copyWithin", c, c, c),
		m("set", func() string { return g.nested("[1]", g.arrayish) }, c),
		m("slice", c, c), m("subarray", c, c), m("join", g.shortStr),
		m("indexOf", v, c), m("lastIndexOf", v, c), m("includes", v, c), m("at", c), m("reverse"),
		m("map", cb), m("filter", cb), m("forEach", cb), m("every", cb), m("some", cb),
		m("find", cb), m("findIndex", cb), m("findLast", cb), m("findLastIndex", cb),
		m("reduce", cb, v), m("reduceRight", cb, v),
		m("keys"), m("values"), m("entries"), m("toString"), m("toLocaleString"),
		m("toHex"), m("toBase64"), m("setFromHex", g.str), m("setFromBase64", g.str),
		alt{"from", func() string { return fmt.Sprintf("%s.from(%s)", g.typedArray(), recv) }},
		alt{"of", func() string { return fmt.Sprintf("%s.of(...%s)", g.typedArray(), recv) }},
		alt{"copy", func() string { return fmt.Sprintf("new %s(%s)", g.typedArray(), recv) }},
		alt{"over its buffer", func() string {
			return fmt.Sprintf("new %s(%s.buffer, %s, %s)", g.typedArray(), recv, g.count(), g.count())
		}},
		alt{"fromBase64", func() string { return fmt.Sprintf("Uint8Array.fromBase64(%s)", g.str()) }},
		alt{"fromHex", func() string { return fmt.Sprintf("Uint8Array.fromHex(%s)", g.str()) }},
		alt{"Array method", func() string { return g.arrayOp(recv) }},
	)
}

// replacement is a replacement pattern or function of replace.
func (g *sizesGen) replacement() string {
	return g.one("replacement",
		lit(`"$&"`), lit(`"$'"`), lit("\"$`\""), lit(`"$1$2"`), lit(`"$<a>"`), lit(`"$$"`), lit(`"$99"`), lit(`"$'$'$'"`),
		alt{"repeated", func() string { return fmt.Sprintf(`"$&".repeat(%s)`, g.smallish()) }},
		alt{"function", func() string { return fmt.Sprintf("() => %s", g.str()) }},
	)
}

// stringOp calls a String method on r, or builds a string from an
// array-like.
func (g *sizesGen) stringOp() string {
	m := func(name string, args ...func() string) alt {
		return alt{name, func() string {
			vals := make([]string, len(args))
			for i, a := range args {
				vals[i] = a()
			}
			return g.method("String.prototype", "r", methodName(name), vals...)
		}}
	}
	c, s := g.count, g.str
	form := func() string { return g.word("normalization form", `"NFC"`, `"NFD"`, `"NFKC"`, `"NFKD"`) }
	return g.one("string method",
		m("repeat", c), m("padStart", c, s), m("padEnd", c, s), m("concat", s, s),
		m("split", g.shortStr, c), m("split(\"\")", func() string { return `""` }, c),
		m("replaceAll", g.shortStr, g.replacement), m("replace", g.shortStr, g.replacement),
		m("normalize", form), m("at", c), m("slice", c, c), m("substring", c, c), m("substr", c, c),
		m("indexOf", s, c), m("lastIndexOf", s, c), m("includes", s, c), m("startsWith", s, c), m("endsWith", s, c),
		m("charAt", c), m("charCodeAt", c), m("codePointAt", c),
		m("toUpperCase"), m("toLowerCase"), m("toLocaleUpperCase"), m("trim"), m("isWellFormed"), m("toWellFormed"),
		m("localeCompare", s),
		alt{"fromCharCode", func() string { return fmt.Sprintf("String.fromCharCode.apply(null, %s)", g.arrayish()) }},
		alt{"fromCodePoint", func() string { return fmt.Sprintf("String.fromCodePoint(...%s)", g.arrayish()) }},
		alt{"raw", func() string { return fmt.Sprintf("String.raw({raw: %s}, r, r)", g.arrayish()) }},
		alt{"spread", func() string { return "[...r]" }},
		alt{"Array.from", func() string { return "Array.from(r)" }},
		alt{"plus", func() string { return "r + r" }},
		alt{"template", func() string { return "`${r}${r}${r}`" }},
		alt{"join", func() string { return fmt.Sprintf("Array(%s).join(r)", g.count()) }},
	)
}

// objectOp enumerates or copies r's properties through Object.
func (g *sizesGen) objectOp() string {
	call := func(name string) alt { return alt{name, func() string { return fmt.Sprintf("Object.%s(r)", name) }} }
	return g.one("object method",
		call("keys"), call("values"), call("entries"), call("getOwnPropertyNames"), call("getOwnPropertySymbols"),
		call("getOwnPropertyDescriptors"), call("freeze"), call("seal"), call("preventExtensions"),
		call("isFrozen"), call("isSealed"), call("fromEntries"),
		lit("Object.assign({}, r)"),
		alt{"assign onto", func() string { return fmt.Sprintf("Object.assign(r, %s)", g.arrayish()) }},
		lit("Object.defineProperties({}, r)"),
		lit("Object.create(null, r)"),
		alt{"defineProperties onto", func() string {
			return fmt.Sprintf("Object.defineProperties(r, {[%s]: {value: %s}, length: {value: %s}})", g.count(), g.val(), g.count())
		}},
		alt{"groupBy", func() string { return fmt.Sprintf("Object.groupBy(r, %s)", g.callback()) }},
		lit("({...r})"),
		lit("(() => { let c = 0; for (const k in r) c++; return c })()"),
		lit("Object.setPrototypeOf([], r).length"),
		alt{"hasOwn", func() string { return fmt.Sprintf("Object.hasOwn(r, %s)", g.key()) }},
	)
}

// key is a property key at a boundary.
func (g *sizesGen) key() string {
	return g.one("key",
		lit(`"length"`), lit(`"0"`), lit("Symbol.iterator"),
		alt{"count", g.count},
		alt{"count string", func() string { return fmt.Sprintf("String(%s)", g.count()) }},
	)
}

// function is a function to call with r as its arguments.
func (g *sizesGen) function() string {
	return g.word("function", "Math.max", "function () { return arguments.length }", "(...a) => a.length",
		"Array.of", "String.fromCharCode", "Array", "Object.assign", "Array.prototype.push.bind([])")
}

// constructor is a constructor to call with r as its arguments.
func (g *sizesGen) constructor() string {
	return g.word("constructor", "Array", "Uint8Array", "Object", "Date", "function () {}", "(class extends Array {})", "Map")
}

// reflectOp calls Reflect on r.
func (g *sizesGen) reflectOp() string {
	return g.one("reflect method",
		alt{"apply", func() string { return fmt.Sprintf("Reflect.apply(%s, undefined, r)", g.function()) }},
		alt{"construct", func() string { return fmt.Sprintf("Reflect.construct(%s, r)", g.constructor()) }},
		alt{"construct new.target", func() string {
			return fmt.Sprintf("Reflect.construct(%s, r, %s)", g.constructor(), g.constructor())
		}},
		lit("Reflect.ownKeys(r)"),
		alt{"defineProperty", func() string {
			return fmt.Sprintf("Reflect.defineProperty(r, %s, {value: %s, writable: true})", g.key(), g.val())
		}},
		alt{"get", func() string { return fmt.Sprintf("Reflect.get(r, %s)", g.key()) }},
		alt{"set", func() string { return fmt.Sprintf("Reflect.set(r, %s, %s)", g.key(), g.val()) }},
		alt{"has", func() string { return fmt.Sprintf("Reflect.has(r, %s)", g.key()) }},
		alt{"getOwnPropertyDescriptor", func() string { return fmt.Sprintf("Reflect.getOwnPropertyDescriptor(r, %s)", g.key()) }},
		alt{"deleteProperty", func() string { return fmt.Sprintf("Reflect.deleteProperty(r, %s)", g.key()) }},
		lit("Reflect.preventExtensions(r)"),
		lit("Reflect.setPrototypeOf(r, null)"),
	)
}

// functionOp spreads r as arguments: apply, bind, spread calls.
func (g *sizesGen) functionOp() string {
	return g.one("function call",
		alt{"apply", func() string { return fmt.Sprintf("(%s).apply(undefined, r)", g.function()) }},
		alt{"call spread", func() string { return fmt.Sprintf("(%s).call(undefined, ...r)", g.function()) }},
		alt{"spread", func() string { return fmt.Sprintf("(%s)(...r)", g.function()) }},
		alt{"new spread", func() string { return fmt.Sprintf("new (%s)(...r)", g.constructor()) }},
		alt{"bind", func() string { return fmt.Sprintf("(%s).bind(undefined, ...r)(...r)", g.function()) }},
		alt{"bind chain", func() string {
			return fmt.Sprintf("(f => { for (let i = 0; i < %s; i++) f = f.bind(undefined, ...r); return f() })(%s)",
				g.word("binds", "2", "16", "256"), g.function())
		}},
		alt{"bind apply", func() string { return fmt.Sprintf("Function.prototype.bind.apply(%s, r)", g.function()) }},
		alt{"apply call", func() string { return fmt.Sprintf("Function.prototype.apply.call(%s, undefined, r)", g.function()) }},
		lit("[...r]"),
		lit("[0, ...r, ...r]"),
		lit("Array.prototype.push.apply([], r)"),
		lit("new Function(...Array.from(r, (_, i) => \"a\" + i), \"return 0\")"),
	)
}

// indent is JSON.stringify's space argument.
func (g *sizesGen) indent() string {
	return g.one("indent",
		alt{"count", g.count},
		alt{"string", g.str},
		lit(`"\t"`),
		alt{"spaces", func() string { return fmt.Sprintf(`" ".repeat(%s)`, g.count()) }},
		lit(`"\u2028".repeat(10)`),
	)
}

// jsonOp writes r as JSON, or parses text at a size.
func (g *sizesGen) jsonOp() string {
	replacer := func() string {
		return g.one("replacer",
			lit("null"), lit("(k, v) => v"), lit("r"), lit(`["0", "length"]`),
			alt{"arrayish", func() string { return g.nested("[]", g.arrayish) }},
			alt{"callback", g.callback},
		)
	}
	reviver := func() string {
		return g.one("reviver",
			lit("(k, v) => v"), lit("(k, v) => undefined"),
			alt{"grows holder", func() string {
				return fmt.Sprintf(`function (k, v) { if (k === "0") this.length = %s; return v }`, g.count())
			}},
		)
	}
	text := func() string {
		return g.one("json text",
			lit("JSON.stringify(r)"),
			alt{"array", func() string { return fmt.Sprintf(`"[" + "0,".repeat(%s) + "0]"`, g.smallish()) }},
			alt{"nesting", func() string { return fmt.Sprintf(`"[".repeat(%s) + "]".repeat(%[1]s)`, g.smallish()) }},
			alt{"escapes", func() string { return fmt.Sprintf(`'"' + "\\u0041".repeat(%s) + '"'`, g.smallish()) }},
			alt{"object", func() string {
				return fmt.Sprintf(`"{" + Array.from({length: %s}, (_, i) => '"k' + i + '": 0').join() + "}"`, g.smallish())
			}},
			alt{"number", func() string { return fmt.Sprintf(`"1e" + (%s)`, g.count()) }},
		)
	}
	return g.one("json method",
		lit("JSON.stringify(r)"),
		alt{"stringify", func() string { return fmt.Sprintf("JSON.stringify(r, %s, %s)", replacer(), g.indent()) }},
		alt{"stringify nested", func() string { return fmt.Sprintf("JSON.stringify({a: r, b: [r, {c: r}]}, null, %s)", g.indent()) }},
		alt{"parse", func() string { return fmt.Sprintf("JSON.parse(%s)", text()) }},
		alt{"parse revive", func() string { return fmt.Sprintf("JSON.parse(%s, %s)", text(), reviver()) }},
		alt{"rawJSON", func() string { return fmt.Sprintf("JSON.stringify([JSON.rawJSON(%s), r])", g.str()) }},
	)
}

// proxyOp is an operation that asks a proxy for its keys, its length or
// its properties.
func (g *sizesGen) proxyOp() string {
	return g.one("proxy operation",
		lit("Object.keys(r)"), lit("Reflect.ownKeys(r)"), lit("Object.getOwnPropertyNames(r)"), lit("Object.entries(r)"),
		lit("Object.values(r)"), lit("Object.assign({}, r)"), lit("({...r})"), lit("JSON.stringify(r)"),
		lit("(() => { let c = 0; for (const k in r) c++; return c })()"),
		lit("Object.freeze(r)"), lit("Object.isFrozen(r)"), lit("Object.getOwnPropertyDescriptors(r)"),
		lit("Object.defineProperties({}, r)"), lit("Array.from(r)"), lit("Math.max.apply(undefined, r)"),
		lit("new Uint8Array(r)"),
		alt{"Array method", func() string { return g.arrayOp("r") }},
	)
}

// regexp is a regular expression with a count in its pattern, many
// groups, and any flags.
func (g *sizesGen) regexp() string {
	pattern := g.one("pattern",
		lit(`"a"`), lit(`"(a)"`), lit(`"a*"`), lit(`""`), lit(`"\\b"`), lit(`"."`), lit(`"(a)|b"`), lit(`"(?<a>a)"`),
		lit(`"[^]"`), lit(`"\\p{L}"`), lit(`"(?=(a))"`), lit(`"(a|b)*?"`), lit(`"\\1(a)"`), lit(`"^"`), lit(`"(?i:a)"`),
		alt{"quantifier", func() string { return fmt.Sprintf(`"a{" + (%s) + "}"`, g.count()) }},
		alt{"open quantifier", func() string { return fmt.Sprintf(`"a{" + (%s) + ",}"`, g.count()) }},
		alt{"range quantifier", func() string { return fmt.Sprintf(`"(?:a{0," + (%s) + "})"`, g.count()) }},
		alt{"groups", func() string { return fmt.Sprintf(`"(a)".repeat(%s)`, g.smallish()) }},
		alt{"class", func() string { return fmt.Sprintf(`"[" + "a-z".repeat(%s) + "]"`, g.smallish()) }},
		alt{"nesting", func() string { return fmt.Sprintf(`"(".repeat(%s) + ")".repeat(%[1]s)`, g.smallish()) }},
		alt{"long", func() string { return fmt.Sprintf(`"a".repeat(%s)`, g.smallish()) }},
		lit(`"[\\p{L}--[a-z]]"`), lit(`"\\p{RGI_Emoji}"`), lit(`"[^\\p{L}\\p{N}]"`),
	)
	mask := g.pick("flags", sizesNumbers(256))
	var flags []byte
	for i, f := range []byte("dgimsuvy") {
		if mask&(1<<i) != 0 {
			flags = append(flags, f)
		}
	}
	return fmt.Sprintf("new RegExp(%s, %q)", pattern, flags)
}

// regexpOp runs re on r, or a regular expression whose exec lies.
func (g *sizesGen) regexpOp() string {
	fake := func() string {
		result := g.one("exec result",
			alt{"length", func() string { return fmt.Sprintf(`{length: %s, index: %s, 0: "a"}`, g.count(), g.count()) }},
			alt{"sparse", func() string {
				return fmt.Sprintf(`Object.assign(new Array(%s), {index: %s, 0: "a"})`, g.count(), g.count())
			}},
			alt{"groups", func() string {
				return fmt.Sprintf(`{0: %s, index: %s, length: 1, groups: {a: %s}}`, g.str(), g.count(), g.str())
			}},
		)
		return fmt.Sprintf(`(() => { let c = 0; return {exec() { return c++ < %s ? %s : null }, flags: %s, lastIndex: 0} })()`,
			g.word("matches", "1", "2", "1000"), result, g.word("fake flags", `""`, `"g"`, `"gu"`))
	}
	return g.one("regexp method",
		lit("re.exec(r)"), lit("re.test(r)"), lit("r.match(re)"), lit("r.search(re)"), lit("[...r.matchAll(re)]"),
		alt{"replace", func() string { return fmt.Sprintf("r.replace(re, %s)", g.replacement()) }},
		alt{"replaceAll", func() string { return fmt.Sprintf("r.replaceAll(re, %s)", g.replacement()) }},
		alt{"split", func() string { return fmt.Sprintf("r.split(re, %s)", g.count()) }},
		alt{"lastIndex", func() string { return fmt.Sprintf("(re.lastIndex = %s, re.exec(r))", g.count()) }},
		alt{"Symbol.replace", func() string { return fmt.Sprintf("re[Symbol.replace](r, %s)", g.replacement()) }},
		alt{"Symbol.split", func() string { return fmt.Sprintf("re[Symbol.split](r, %s)", g.count()) }},
		lit("re.flags"), lit("String(re)"), lit("RegExp.escape(r)"), lit(`re.compile(r, "g")`),
		alt{"fake replace", func() string {
			return fmt.Sprintf("RegExp.prototype[Symbol.replace].call(%s, r, %s)", fake(), g.replacement())
		}},
		alt{"fake match", func() string { return fmt.Sprintf("RegExp.prototype[Symbol.match].call(%s, r)", fake()) }},
		alt{"fake split", func() string {
			return fmt.Sprintf("RegExp.prototype[Symbol.split].call({constructor: {[Symbol.species]: function () { return %s }}, flags: \"\"}, r, %s)",
				fake(), g.count())
		}},
	)
}

// iterable is something to iterate: an array-ish, entries, a generator, a
// string.
func (g *sizesGen) iterable() string {
	return g.one("iterable",
		alt{"arrayish", g.arrayish},
		alt{"entries", func() string { return fmt.Sprintf("Array.from({length: %s}, (_, i) => [i, i])", g.smallish()) }},
		alt{"generator", func() string {
			return fmt.Sprintf("(function* () { for (let i = 0; i < %s; i++) yield [i, i] })()", g.count())
		}},
		lit("new Map([[1, 1], [2, 2]])"),
		alt{"string", g.str},
	)
}

// setLike is the argument of a Set method: one whose size lies.
func (g *sizesGen) setLike() string {
	return g.one("set-like",
		alt{"size", func() string {
			return fmt.Sprintf("{size: %s, has: () => true, keys: () => [1, 2].values()}", g.count())
		}},
		alt{"size, no keys", func() string { return fmt.Sprintf("{size: %s, has: () => false, keys: () => [].values()}", g.count()) }},
		alt{"endless keys", func() string {
			return fmt.Sprintf("{size: %s, has: () => true, keys: () => ({next: () => ({done: false, value: 1})})}", g.count())
		}},
		alt{"set", func() string { return fmt.Sprintf("new Set(%s)", g.nested("[1]", g.arrayish)) }},
	)
}

// mapSetOp builds a Map or Set of r, groups it, or combines sets.
func (g *sizesGen) mapSetOp() string {
	setOp := func(name string) alt {
		return alt{name, func() string { return fmt.Sprintf("new Set(r).%s(%s)", name, g.setLike()) }}
	}
	return g.one("map/set method",
		lit("new Map(r)"), lit("new Set(r)"), lit("[...new Set(r)]"), lit("Array.from(new Map(r).keys())"),
		lit("new Map(r).entries().toArray()"),
		alt{"Map.groupBy", func() string { return fmt.Sprintf("Map.groupBy(r, %s)", g.callback()) }},
		alt{"Object.groupBy", func() string { return fmt.Sprintf("Object.groupBy(r, %s)", g.callback()) }},
		setOp("union"), setOp("intersection"), setOp("difference"), setOp("symmetricDifference"),
		setOp("isSubsetOf"), setOp("isSupersetOf"), setOp("isDisjointFrom"),
	)
}

// iterator is an iterator: finite, endless, over a huge sparse array.
func (g *sizesGen) iterator() string {
	return g.one("iterator",
		alt{"values", func() string { return fmt.Sprintf("[%s, %s, %s].values()", g.val(), g.val(), g.val()) }},
		lit("(function* () { let i = 0; for (;;) yield i++ })()"),
		alt{"endless", func() string { return fmt.Sprintf("Iterator.from({next: () => ({done: false, value: %s})})", g.val()) }},
		alt{"keys", func() string { return fmt.Sprintf("new Array(%s).keys()", g.count()) }},
		alt{"string", func() string { return fmt.Sprintf("%s[Symbol.iterator]()", g.str()) }},
		alt{"from", func() string { return fmt.Sprintf("Iterator.from(%s)", g.iterable()) }},
		alt{"concat", func() string { return fmt.Sprintf("Iterator.concat(%s, %s)", g.iterable(), g.iterable()) }},
	)
}

// iteratorOp runs an iterator helper with counts at the boundaries.
func (g *sizesGen) iteratorOp() string {
	return g.one("iterator method",
		alt{"take", func() string { return fmt.Sprintf("r.take(%s).toArray()", g.count()) }},
		alt{"drop take", func() string {
			return fmt.Sprintf("r.drop(%s).take(%s).toArray()", g.count(), g.word("few", "0", "4", "8", "9", "16"))
		}},
		alt{"drop next", func() string { return fmt.Sprintf("r.drop(%s).next()", g.count()) }},
		alt{"map", func() string { return fmt.Sprintf("r.take(%s).map(%s).toArray()", g.count(), g.callback()) }},
		alt{"filter", func() string { return fmt.Sprintf("r.filter(%s).take(%s).toArray()", g.callback(), g.count()) }},
		alt{"flatMap", func() string {
			return fmt.Sprintf("r.flatMap(() => %s).take(%s).toArray()", g.nested("[1]", g.arrayish), g.count())
		}},
		alt{"reduce", func() string { return fmt.Sprintf("r.take(%s).reduce(a => a + 1, 0)", g.count()) }},
		alt{"forEach", func() string { return fmt.Sprintf("r.take(%s).forEach(%s)", g.count(), g.callback()) }},
		alt{"some", func() string { return fmt.Sprintf("r.some(%s)", g.callback()) }},
		alt{"spread", func() string { return fmt.Sprintf("[...r.take(%s)]", g.count()) }},
		alt{"Array.from", func() string { return fmt.Sprintf("Array.from(r.take(%s))", g.count()) }},
		alt{"concat", func() string {
			return fmt.Sprintf("Iterator.concat(r.take(%s), %s).toArray()", g.count(), g.iterable())
		}},
		lit("r.toArray()"),
	)
}

// bufferOp resizes, transfers or slices the ArrayBuffer r, or views it.
func (g *sizesGen) bufferOp() string {
	c := g.count
	return g.one("arraybuffer method",
		alt{"resize", func() string { return fmt.Sprintf("r.resize(%s)", c()) }},
		alt{"transfer", func() string { return fmt.Sprintf("r.transfer(%s)", c()) }},
		lit("r.transfer()"),
		alt{"transferToFixedLength", func() string { return fmt.Sprintf("r.transferToFixedLength(%s)", c()) }},
		alt{"slice", func() string { return fmt.Sprintf("r.slice(%s, %s)", c(), c()) }},
		alt{"new", func() string { return fmt.Sprintf("new ArrayBuffer(%s, {maxByteLength: %s})", c(), c()) }},
		alt{"view", func() string { return fmt.Sprintf("new %s(r, %s, %s)", g.typedArray(), c(), c()) }},
		alt{"view then resize", func() string {
			return fmt.Sprintf("(t => (r.resize(%s), %s))(new %s(r, %s))", c(), g.typedOp("t"), g.typedArray(), g.word("offset", "0", "1", "8"))
		}},
		alt{"view then transfer", func() string {
			return fmt.Sprintf("(t => (r.transfer(%s), %s))(new %s(r))", c(), g.typedOp("t"), g.typedArray())
		}},
	)
}

// viewArgs is the offset and length of a DataView, or none.
func (g *sizesGen) viewArgs() string {
	return g.one("view arguments",
		lit(""),
		alt{"offset", func() string { return ", " + g.count() }},
		alt{"offset and length", func() string { return fmt.Sprintf(", %s, %s", g.count(), g.count()) }},
		alt{"small offset", func() string { return ", " + g.word("offset", "0", "1", "8") }},
	)
}

// dataViewOp reads or writes through the DataView d of r at a boundary,
// after resizing r or not.
func (g *sizesGen) dataViewOp() string {
	kind := func() string {
		return g.word("data view type", "Int8", "Uint8", "Int16", "Uint16", "Float16", "Int32", "Uint32", "Float32", "Float64", "BigInt64", "BigUint64")
	}
	return g.one("dataview method",
		alt{"get", func() string { return fmt.Sprintf("d.get%s(%s, true)", kind(), g.count()) }},
		alt{"set", func() string { return fmt.Sprintf("d.set%s(%s, %s)", kind(), g.count(), g.val()) }},
		alt{"resize then get", func() string {
			return fmt.Sprintf("(r.resize(%s), d.get%s(%s))", g.count(), kind(), g.count())
		}},
		alt{"resize then set", func() string {
			return fmt.Sprintf("(r.resize(%s), d.set%s(%s, 1))", g.count(), kind(), g.count())
		}},
		lit("[d.byteLength, d.byteOffset]"),
		alt{"transfer then get", func() string { return fmt.Sprintf("(r.transfer(), d.get%s(0))", kind()) }},
	)
}

// methodName is the method an alternative calls: its name up to a
// parenthesis, which tells two calls of one method apart.
func methodName(alt string) string {
	name, _, _ := strings.Cut(alt, "(")
	return name
}

// number is a number at the ends of its range.
func (g *sizesGen) number() string {
	return g.one("number",
		alt{"count", g.count},
		lit("Number.MAX_VALUE"), lit("-Number.MIN_VALUE"), lit("2**-1074"), lit("1e21"), lit("-1.5e-7"), lit("0.1"),
	)
}

// numberOp converts the number r to text with a digit count or radix at
// the ends of its range, into buffers of fixed size.
func (g *sizesGen) numberOp() string {
	digits := func() string {
		return g.one("digits",
			alt{"count", g.count},
			alt{"in range", func() string { return g.word("in range", "0", "1", "20", "21", "99", "100", "101") }},
		)
	}
	return g.one("number method",
		alt{"toFixed", func() string { return fmt.Sprintf("r.toFixed(%s)", digits()) }},
		alt{"toPrecision", func() string { return fmt.Sprintf("r.toPrecision(%s)", digits()) }},
		alt{"toExponential", func() string { return fmt.Sprintf("r.toExponential(%s)", digits()) }},
		alt{"toString", func() string {
			return fmt.Sprintf("r.toString(%s)", g.word("radix", "2", "3", "7", "16", "36", "37", "1"))
		}},
		lit("r.toLocaleString()"),
		lit("String(r)"),
		lit("JSON.stringify([r, -r])"),
		alt{"parse", func() string { return fmt.Sprintf("parseFloat(%s + String(r))", g.str()) }},
	)
}

// bigint is a BigInt, small or built to a size.
func (g *sizesGen) bigint() string {
	return g.one("bigint",
		lit("1n"), lit("-1n"), lit("2n ** 64n - 1n"),
		alt{"of count", func() string { return fmt.Sprintf("BigInt(Math.trunc(%s))", g.count()) }},
		alt{"shifted", func() string {
			return fmt.Sprintf("1n << BigInt(%s)", g.word("bits", "31", "32", "64", "1024", "2**16", "2**20", "2**24"))
		}},
		alt{"hex digits", func() string { return fmt.Sprintf(`BigInt("0x" + "f".repeat(%s))`, g.smallish()) }},
	)
}

// bigintOp computes with the BigInt r at a bit count or size at a
// boundary.
func (g *sizesGen) bigintOp() string {
	bits := func() string { return fmt.Sprintf("BigInt(Math.trunc(%s))", g.count()) }
	return g.one("bigint method",
		alt{"asUintN", func() string { return fmt.Sprintf("BigInt.asUintN(%s, r)", g.count()) }},
		alt{"asIntN", func() string { return fmt.Sprintf("BigInt.asIntN(%s, r)", g.count()) }},
		alt{"shift left", func() string { return fmt.Sprintf("r << %s", bits()) }},
		alt{"shift right", func() string { return fmt.Sprintf("r >> -%s", bits()) }},
		alt{"power", func() string { return fmt.Sprintf("r ** %s", bits()) }},
		lit("r * r"),
		alt{"toString", func() string {
			return fmt.Sprintf("r.toString(%s)", g.word("radix", "2", "3", "7", "16", "36", "37", "1"))
		}},
		lit("String(r).length"),
		lit("BigInt(String(r))"),
	)
}

// sizesDecode is the script data decodes to.
func sizesDecode(data []byte) string {
	g := &sizesGen{data: data}
	return g.script()
}

// sizesEncode is the bytes that decode to the script the recipe names (see
// sizesGen), and that script.
func sizesEncode(recipe ...string) ([]byte, string, error) {
	g := &sizesGen{encoding: true, recipe: recipe}
	s := g.script()
	if g.err == nil && len(g.recipe) > 0 {
		g.err = fmt.Errorf("recipe has %d names left over after the script: %q", len(g.recipe), g.recipe)
	}
	return g.out, s, g.err
}
