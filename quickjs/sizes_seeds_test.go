package quickjs

import (
	"bytes"
	"context"
	"encoding/json"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// sizesSeed is a script of FuzzBuiltinSizes written as a recipe: the names
// of the alternatives the grammar takes, in the order it meets their
// choice points (sizesGen; TestBuiltinSizesDecode -v prints the recipe of
// any corpus file). shows is text its script must contain.
type sizesSeed struct {
	name   string
	recipe []string
	shows  string
}

// sizesSeeds are the committed corpus, testdata/fuzz/FuzzBuiltinSizes,
// beside the inputs the campaign found on the pinned engine before its
// patches (crash-*): every builtin family, every kind of count, receiver
// and trap, and the shapes that trapped that engine. Set
// SIZES_WRITE_SEEDS=1 to write their files after changing them or the
// grammar.
func sizesSeeds() []sizesSeed {
	return []sizesSeed{
		// Array
		{"array-tosorted-sparse-2p28+1", []string{"1", "array", "sparse", "2^28", "+1", "toSorted", "method"},
			"new Array(2**28+1); v = r.toSorted()"},
		{"array-toreversed-arraylike-2p32", []string{"1", "array", "array-like", "2^32", "", "toReversed", "call"},
			"Array.prototype.toReversed.call(r)"},
		{"array-with-2p53-1", []string{"1", "array", "literal", "1", "1", "1", "with", "2**53-1", "1", "method"},
			"r.with(2**53-1, 1)"},
		{"array-tospliced-infinities", []string{"1", "array", "sparse", "2^16", "", "toSpliced", "-Infinity", "Infinity", "one", "1", "call"},
			"Array.prototype.toSpliced.call(r, -Infinity, Infinity, 1)"},
		{"array-concat-spreadable-2p53-1", []string{"1", "array", "literal", "1", "1", "1", "concat", "spreadable", "2**53-1", "value", "1", "method"},
			"[Symbol.isConcatSpreadable]: true"},
		{"array-flat-nested-2p53", []string{"1", "array", "nested", "1", "1", "1", "literal", "1", "1", "1", "flat", "2**53", "method"},
			"r.flat(2**53)"},
		{"array-copywithin-negatives", []string{"1", "array", "dense", "2**16", "1", "copyWithin", "negative", "-(2**31)", "NaN", "-0", "call"},
			"Array.prototype.copyWithin.call(r, -(2**31), NaN, -0)"},
		{"array-splice-wrap-8", []string{"1", "array", "dense", "2**16", "1", "splice", "wrap", "8", "+1", "small", "1", "spread", "dense", "2**16", "\"x\"", "method"},
			"r.splice(536870913, 1, ...Array(2**16)"},
		{"array-join-length-changes", []string{"1", "array", "length changes", "1", "small", "3", "2^29", "+1", "1", "join", "short", "\",\"", "call"},
			"c++ < 1 ? 3 : 2**29+1"},
		{"array-from-valueof", []string{"1", "array", "literal", "1", "1", "1", "Array.from length", "valueOf", "2^16", "", "x => x"},
			"Array.from({length: {valueOf() { return 2**16 }}}, x => x)"},
		{"array-indexof-fraction", []string{"1", "array", "sparse with last", "2^16", "+1", "\"x\"", "lastIndexOf", "\"x\"", "fraction", "2**32-0.5", "call"},
			"Array.prototype.lastIndexOf.call(r, \"x\", 2**32-0.5)"},
		{"array-sort-species-typed", []string{"1", "array", "species", "1", "1", "typed", "length", "Float64Array", "small", "8", "map", "(x, i) => i", "method"},
			"[Symbol.species]"},
		{"array-set-length-power", []string{"1", "array", "arguments", "1", "1", "set length", "power", "31", "-1"},
			"(r.length = 2**31-1)"},
		{"array-fill-numeric-string", []string{"1", "array", "sparse", "numeric string", "\" 0x20000001 \"", "fill", "1", "small", "0", "small", "1", "method"},
			"new Array(\" 0x20000001 \")"},
		// TypedArray
		{"typed-tosorted-2p16", []string{"1", "typedarray", "small", "Uint16Array", "2**16", "toSorted(compare)", "(a, b) => (a < b ? -1 : a > b ? 1 : 0)"},
			"new Uint16Array(2**16); v = r.toSorted("},
		{"typed-subarray-negative", []string{"1", "typedarray", "subarray", "Int32Array", "1024", "negative", "-(2**53)", "2^31", "", "toReversed"},
			"new Int32Array(1024).subarray(-(2**53), 2**31)"},
		{"typed-with-nan-tracking", []string{"1", "typedarray", "tracking", "BigInt64Array", "64", "2^16", "", "8", "with", "NaN", "1n"},
			"{maxByteLength: 2**16}), 8); v = r.with(NaN, 1n)"},
		{"typed-set-arraylike-2p32+1", []string{"1", "typedarray", "small", "Int8Array", "1024", "set", "array-like", "2^32", "+1", "small", "0"},
			"r.set(({length: 2**32+1}), 0)"},
		{"typed-shrunk-copywithin", []string{"1", "typedarray", "shrunk", "9", "Float16Array", "copyWithin", "small", "0", "small", "1", "Infinity"},
			"t.buffer.resize(9)"},
		{"typed-detached-fill", []string{"1", "typedarray", "detached", "Uint8ClampedArray", "fill", "1", "-Infinity", "Infinity"},
			"t.buffer.transfer()"},
		{"typed-tohex-2p20", []string{"1", "typedarray", "small", "Uint8Array", "2**20", "toHex"},
			"new Uint8Array(2**20); v = r.toHex()"},
		{"typed-view-wrap", []string{"1", "typedarray", "view", "Float64Array", "2**16", "wrap", "4", "", "2^29", "-1", "at", "-0"},
			"new Float64Array(new ArrayBuffer(2**16), 1073741824, 2**29-1)"},
		// String
		{"string-padend-2p30", []string{"1", "string", "short", "\"abc\"", "padEnd", "2^30", "", "short", "\"\\u00DF\"", "method"},
			"r.padEnd(2**30, \"\\u00DF\")"},
		{"string-repeat-numeric-string", []string{"1", "string", "short", "\"\\uD83D\\uDE00\"", "repeat", "numeric string", "\"2147483648\"", "call"},
			"String.prototype.repeat.call(r, \"2147483648\")"},
		{"string-rope-normalize", []string{"1", "string", "rope", "12", "\"\\uFDFA\"", "normalize", "\"NFKD\"", "method"},
			"r.normalize(\"NFKD\")"},
		{"string-replaceall-dollars", []string{"1", "string", "join", "1024", "\"$&\"", "replaceAll", "\",\"", "\"$'$'$'\"", "method"},
			"r.replaceAll(\",\", \"$'$'$'\")"},
		{"string-split-2p32+1", []string{"1", "string", "repeat", "\"abc\"", "2**16", "split(\"\")", "2^32", "+1", "method"},
			"r.split(\"\", 2**32+1)"},
		{"string-fromcharcode-sparse", []string{"1", "string", "short", "\"abc\"", "fromCharCode", "sparse", "2^16", "+1"},
			"String.fromCharCode.apply(null, new Array(2**16+1))"},
		{"string-raw-arraylike", []string{"1", "string", "short", "\",\"", "raw", "array-like", "2^31", "-1"},
			"String.raw({raw: ({length: 2**31-1})}, r, r)"},
		// Object
		{"object-keys-sparse-last", []string{"1", "object", "sparse with last", "2^32", "-1", "1", "keys"},
			"Object.keys(r)"},
		{"object-defineproperties-negative", []string{"1", "object", "arguments", "1", "1", "defineProperties onto", "negative", "-1", "1", "-0"},
			"Object.defineProperties(r, {[-1]: {value: 1}, length: {value: -0}})"},
		{"object-groupby-string", []string{"1", "object", "string", "repeat", "\"\\uFDFA\"", "1024", "groupBy", "(x, i) => i"},
			"Object.groupBy(r, (x, i) => i)"},
		{"object-spread-proxy-distinct-keys", []string{"1", "object", "proxy", "{}", "2", "ownKeys", "distinct", "1024", "getOwnPropertyDescriptor", "1", "({...r})"},
			"ownKeys() { return Array.from({length: 1024}"},
		// Reflect
		{"reflect-apply-arraylike-2p16+1", []string{"1", "reflect", "array-like", "2^16", "+1", "apply", "Math.max"},
			"Reflect.apply(Math.max, undefined, r)"},
		{"reflect-construct-length-changes", []string{"1", "reflect", "length changes", "0", "2^16", "", "2^32", "+1", "1", "construct", "Array"},
			"Reflect.construct(Array, r)"},
		{"reflect-ownkeys-repeated", []string{"1", "reflect", "proxy", "[]", "1", "ownKeys", "repeated", "16", "Reflect.ownKeys(r)"},
			"ownKeys() { return Array(16).fill(\"a\") }"},
		// Function
		{"function-bind-chain", []string{"1", "function", "literal", "1", "1", "1", "bind chain", "256", "(...a) => a.length"},
			"f = f.bind(undefined, ...r)"},
		{"function-apply-dense-2p16", []string{"1", "function", "dense", "2**16", "1", "apply", "Math.max"},
			"(Math.max).apply(undefined, r)"},
		{"function-spread-sparse", []string{"1", "function", "sparse", "2^16", "", "[...r]"},
			"v = [...r]"},
		// JSON
		{"json-stringify-indent-infinity", []string{"1", "json", "nested", "1", "1", "1", "literal", "1", "1", "1", "stringify", "(k, v) => v", "count", "Infinity"},
			"JSON.stringify(r, (k, v) => v, Infinity)"},
		{"json-parse-nesting", []string{"1", "json", "literal", "1", "1", "1", "parse", "nesting", "2**16"},
			"JSON.parse(\"[\".repeat(2**16) + \"]\".repeat(2**16))"},
		{"json-parse-revive-grows", []string{"1", "json", "literal", "1", "1", "1", "parse revive", "JSON.stringify(r)", "grows holder", "2^32", "-1"},
			"this.length = 2**32-1"},
		// Proxy
		{"proxy-keys-get-length-changes", []string{"1", "proxy", "arrayish", "literal", "1", "1", "1", "2", "get length changes", "1", "small", "3", "2^30", "+1", "has() { return true }", "Object.keys(r)"},
			"new Proxy([1, 1, 1], {get(t, k, r)"},
		{"proxy-forin-getownpropertydescriptor", []string{"1", "proxy", "{}", "2", "ownKeys", "distinct", "16", "getOwnPropertyDescriptor", "1",
			"(() => { let c = 0; for (const k in r) c++; return c })()"}, "for (const k in r)"},
		{"proxy-tospliced-get-length-2p53-1", []string{"1", "proxy", "[]", "1", "get length", "2**53-1", "Array method", "toSpliced", "small", "0", "2**53", "none", "call"},
			"Array.prototype.toSpliced.call(r, 0, 2**53)"},
		{"proxy-keys-symbols", []string{"1", "proxy", "function () {}", "1", "ownKeys", "[Symbol(), \"a\", Symbol.iterator]", "Reflect.ownKeys(r)"},
			"Symbol.iterator]"},
		{"proxy-traps-that-say-yes", []string{"1", "proxy", "[]", "3", "defineProperty() { return true }", "deleteProperty() { return true }", "set() { return true }",
			"Array method", "copyWithin", "small", "0", "small", "1", "small", "2"}, "deleteProperty() { return true }"},
		{"proxy-prototype-apply-construct", []string{"1", "proxy", "function () {}", "3", "getPrototypeOf() { return Array.prototype }", "apply", "1", "construct() { return [] }", "Object.getOwnPropertyDescriptors(r)"},
			"construct() { return [] }"},
		{"proxy-get-everything", []string{"1", "proxy", "[]", "1", "get everything", "2^16", "", "1", "Array.from(r)"},
			"get(t, k) { return k === \"length\" ? 2**16 : 1 }"},
		// RegExp
		{"regexp-quantifier-2p32", []string{"1", "regexp", "short", "\"abc\"", "quantifier", "2^32", "", "0", "re.exec(r)"},
			"\"a{\" + (2**32) + \"}\""},
		{"regexp-lastindex-2p53", []string{"1", "regexp", "repeat", "\"abc\"", "1024", "\"a\"", "2", "lastIndex", "2**53"},
			"re.lastIndex = 2**53"},
		{"regexp-fake-exec-length", []string{"1", "regexp", "short", "\"abc\"", "\"a\"", "0", "fake replace", "length", "2^16", "+1", "small", "0", "1", "\"\"", "\"$1$2\""},
			"{length: 2**16+1, index: 0, 0: \"a\"}"},
		{"regexp-split-groups", []string{"1", "regexp", "repeat", "\"abc\"", "1024", "groups", "16", "1", "split", "negative", "-1"},
			"\"(a)\".repeat(16)"},
		{"regexp-fake-split-species", []string{"1", "regexp", "short", "\"abc\"", "\"a\"", "0", "fake split", "groups", "short", "\"abc\"", "2^16", "", "short", "\"abc\"", "2", "\"\"", "small", "2"},
			"[Symbol.species]"},
		// Map and Set
		{"mapset-union-size-2p53-1", []string{"1", "mapset", "arrayish", "literal", "1", "1", "1", "union", "size", "2**53-1"},
			"new Set(r).union({size: 2**53-1"},
		{"mapset-groupby-generator", []string{"1", "mapset", "generator", "2^32", "", "Map.groupBy", "(x, i) => i"},
			"Map.groupBy(r, (x, i) => i)"},
		{"mapset-subset-size-negative", []string{"1", "mapset", "entries", "1024", "isSubsetOf", "size, no keys", "negative", "-1"},
			"isSubsetOf({size: -1"},
		{"mapset-endless-keys", []string{"1", "mapset", "new Map([[1, 1], [2, 2]])", "symmetricDifference", "endless keys", "2^30", ""},
			"keys: () => ({next: () => ({done: false, value: 1})})"},
		// Iterator
		{"iterator-take-2p53", []string{"1", "iterator", "endless", "1", "take", "2**53"},
			"r.take(2**53).toArray()"},
		{"iterator-drop-infinity", []string{"1", "iterator", "values", "1", "1", "1", "drop next", "Infinity"},
			"r.drop(Infinity).next()"},
		{"iterator-take-negative", []string{"1", "iterator", "keys", "2^32", "-1", "take", "negative", "-1"},
			"new Array(2**32-1).keys(); v = r.take(-1)"},
		{"iterator-concat-flatmap", []string{"1", "iterator", "concat", "entries", "16", "string", "short", "\"abc\"", "flatMap", "dense", "1024", "1", "2^16", ""},
			"Iterator.concat("},
		// ArrayBuffer
		{"arraybuffer-resizable-max-2p31", []string{"1", "arraybuffer", "resizable", "8", "2^31", "", "resize", "2^31", "-1"},
			"new ArrayBuffer(8, {maxByteLength: 2**31})"},
		{"arraybuffer-transfer-2p30", []string{"1", "arraybuffer", "fixed", "64", "transfer", "2^30", ""},
			"r.transfer(2**30)"},
		{"arraybuffer-view-then-resize", []string{"1", "arraybuffer", "room to grow", "4096", "view then resize", "small", "0", "toSorted", "Float32Array", "8"},
			"r.resize(0), t.toSorted()"},
		{"arraybuffer-slice-negatives", []string{"1", "arraybuffer", "length", "2^16", "", "slice", "negative", "-(2**53)", "-Infinity"},
			"r.slice(-(2**53), -Infinity)"},
		{"arraybuffer-view-then-transfer", []string{"1", "arraybuffer", "fixed", "64", "view then transfer", "small", "8", "fill", "1", "small", "0", "2**53", "Int16Array"},
			"r.transfer(8), t.fill(1, 0, 2**53)"},
		// DataView
		{"dataview-getfloat64-2p32-1", []string{"1", "dataview", "fixed", "4096", "", "get", "Float64", "2^32", "-1"},
			"d.getFloat64(2**32-1, true)"},
		{"dataview-resize-then-set", []string{"1", "dataview", "room to grow", "4096", "small offset", "8", "resize then set", "small", "8", "BigUint64", "small", "0"},
			"(r.resize(8), d.setBigUint64(0, 1))"},
		{"dataview-offset-and-length", []string{"1", "dataview", "resizable", "64", "2^16", "", "offset and length", "wrap", "2", "", "-0", "get", "Int16", "-0"},
			"new DataView(r, 2147483648, -0)"},
		// more receivers, keys and iterators
		{"object-values-length-set-2p31", []string{"1", "object", "length set", "2^31", "", "1", "1", "values"},
			"(a => (a.length = 2**31, a))([1, 1])"},
		{"array-tospliced-arraylike-ends", []string{"1", "array", "array-like with ends", "2^32", "+1", "1", "toSpliced", "small", "1", "small", "1", "none", "call"},
			"({length: L, 0: x, [L - 1]: x}))(2**32+1, 1)"},
		{"reflect-ownkeys-sparse-2p28", []string{"1", "reflect", "proxy", "{}", "1", "ownKeys", "sparse", "2^28", "", "Reflect.ownKeys(r)"},
			"ownKeys() { return new Array(2**28) }"},
		{"proxy-keys-arraylike-nan", []string{"1", "proxy", "{}", "1", "ownKeys", "array-like", "NaN", "Object.keys(r)"},
			"ownKeys() { return ({length: NaN}) }"},
		{"proxy-names-sparse-with-keys", []string{"1", "proxy", "[]", "1", "ownKeys", "sparse with keys", "2^16", "", "Object.getOwnPropertyNames(r)"},
			"Object.assign(new Array(2**16), [\"a\", \"b\"])"},
		{"object-assign-ownkeys-length-changes", []string{"1", "object", "proxy", "{}", "1", "ownKeys", "length changes", "1", "small", "2", "2^28", "", "Object.assign({}, r)"},
			"d++ < 1 ? 2 : 2**28"},
		{"typed-from-literal", []string{"1", "typedarray", "from", "Float64Array", "literal", "1", "1", "1", "toSorted"},
			"new Float64Array([1, 1, 1])"},
		{"string-repeat-count-2p28", []string{"1", "string", "repeat count", "\"abc\"", "2^28", "", "padStart", "small", "0", "short", "\"abc\"", "method"},
			"\"abc\".repeat(2**28)"},
		{"arraybuffer-detached-slice", []string{"1", "arraybuffer", "(b => (b.transfer(), b))(new ArrayBuffer(8))", "slice", "small", "0", "small", "8"},
			"r.slice(0, 8)"},
		{"iterator-generator-drop-2p53-1", []string{"1", "iterator", "(function* () { let i = 0; for (;;) yield i++ })()", "drop next", "2**53-1"},
			"r.drop(2**53-1).next()"},
		{"iterator-string-take-wrap", []string{"1", "iterator", "string", "rope", "10", "\"abc\"", "take", "wrap", "2", ""},
			"r.take(2147483648).toArray()"},
		{"iterator-from-string-reduce", []string{"1", "iterator", "from", "string", "short", "\"\\uD83D\\uDE00\"", "reduce", "2^31", ""},
			"r.take(2**31).reduce(a => a + 1, 0)"},
		{"mapset-intersection-set", []string{"1", "mapset", "arrayish", "sparse", "2^16", "", "intersection", "set", "literal", "1", "1", "1"},
			"new Set(r).intersection(new Set([1, 1, 1]))"},
		// Number and BigInt
		{"number-tofixed-100", []string{"1", "number", "Number.MAX_VALUE", "toFixed", "in range", "100"},
			"Number.MAX_VALUE; v = r.toFixed(100)"},
		{"number-tostring-radix-2", []string{"1", "number", "-Number.MIN_VALUE", "toString", "2"},
			"r.toString(2)"},
		{"number-toprecision-2p31", []string{"1", "number", "2**-1074", "toPrecision", "count", "2^31", "-1"},
			"r.toPrecision(2**31-1)"},
		{"bigint-asuintn-2p53-1", []string{"1", "bigint", "2n ** 64n - 1n", "asUintN", "2**53-1"},
			"BigInt.asUintN(2**53-1, r)"},
		{"bigint-shift-2p32", []string{"1", "bigint", "1n", "shift left", "2^32", ""},
			"r << BigInt(Math.trunc(2**32))"},
		{"bigint-hex-2p20-tostring", []string{"1", "bigint", "hex digits", "2**20", "toString", "36"},
			"BigInt(\"0x\" + \"f\".repeat(2**20))"},
		{"number-conversions", []string{"3",
			"number", "count", "2**53", "toExponential", "in range", "101", "",
			"number", "1e21", "toFixed", "in range", "21", "",
			"number", "-1.5e-7", "toString", "36", ""}, "r.toExponential(101)"},
		{"number-fractions-and-parse", []string{"2",
			"number", "0.1", "toPrecision", "in range", "100", "",
			"number", "count", "fraction", "2**31-0.5", "parse", "rope", "10", "\"abc\""}, "parseFloat("},
		{"bigint-sizes", []string{"3",
			"bigint", "-1n", "asIntN", "2^16", "+1", "",
			"bigint", "of count", "2**53-1", "power", "small", "2", "",
			"bigint", "shifted", "2**20", "r * r"}, "1n << BigInt(2**20)"},
		// species that answer a smaller array or buffer
		{"typed-species-slice", []string{"1", "typedarray", "species", "Uint8Array", "4", "Float64Array", "1024", "slice", "small", "0", "2^16", ""},
			"return new Uint8Array(4)"},
		{"arraybuffer-species-slice", []string{"1", "arraybuffer", "species", "4", "4096", "slice", "small", "0", "2^16", ""},
			"return new ArrayBuffer(4)"},
		// three statements, and what follows a call
		{"three-statements-after", []string{"3",
			"array", "typed", "length", "Int8Array", "2^29", "", "toString", "method", "for (let i = 0; i < 64; i++) void [i, {i}, \"s\" + i]; ",
			"string", "number", "NaN", "at", "-0", "method", "void v?.at?.(-1); ",
			"array", "arguments", "1", "1", "entries", "method", "{ let c = 0; for (const x of v) if (++c > 8) break } "},
			"new Int8Array(2**29)"},
		// what trapped the pinned engine before its patches (docs/security.md,
		// "32-bit sizes"): each must now end as a 64-bit host ends it
		{"found-toreversed-arraylike-2p29+1", []string{"1", "array", "array-like", "2^29", "+1", "toReversed", "call"},
			"const r = ({length: 2**29+1}); v = Array.prototype.toReversed.call(r);"},
		{"found-tosorted-sparse-2p29+1", []string{"1", "array", "sparse", "2^29", "+1", "toSorted", "method"},
			"const r = new Array(2**29+1); v = r.toSorted();"},
		{"found-proxy-ownkeys-arraylike-2p29+1", []string{"1", "reflect", "proxy", "{}", "1", "ownKeys", "array-like", "2^29", "+1", "Reflect.ownKeys(r)"},
			"new Proxy({}, {ownKeys() { return ({length: 2**29+1}) }}) })(); v = Reflect.ownKeys(r);"},
		{"found-length-read-changes", []string{"1", "proxy", "[]", "1", "get length changes", "1", "small", "1", "2^29", "+1", "Array method", "toReversed", "call"},
			"k === \"length\" ? (c++ < 1 ? 1 : 2**29+1)"},
	}
}

// sizesShapes are scripts of the class FuzzBuiltinSizes hunts, which the
// grammar must be able to write; the first four are seeds too, the last
// three need a limit of gigabytes (security/testdata/sizes runs them).
func sizesShapes() []sizesSeed {
	return []sizesSeed{
		{"toReversed of an array-like", []string{"1", "array", "array-like", "2^29", "+1", "toReversed", "call"},
			"const r = ({length: 2**29+1}); v = Array.prototype.toReversed.call(r);"},
		{"toSorted of a sparse array", []string{"1", "array", "sparse", "2^29", "+1", "toSorted", "method"},
			"const r = new Array(2**29+1); v = r.toSorted();"},
		{"ownKeys of a proxy that returns a huge array-like", []string{"1", "reflect", "proxy", "{}", "1", "ownKeys", "array-like", "2^29", "+1", "Reflect.ownKeys(r)"},
			"new Proxy({}, {ownKeys() { return ({length: 2**29+1}) }}) })(); v = Reflect.ownKeys(r);"},
		{"a length read that changes", []string{"1", "proxy", "[]", "1", "get length changes", "1", "small", "1", "2^29", "+1", "Array method", "toReversed", "call"},
			"k === \"length\" ? (c++ < 1 ? 1 : 2**29+1)"},
		// these need a real allocation of a gigabyte or more first
		// (SIZES_MEMORY_BYTES=2147483648, and a wall clock of seconds)
		{"the keys of a typed array of 2^29+1 elements", []string{"1", "object", "typed", "length", "Uint8Array", "2^29", "+1", "getOwnPropertyNames"},
			"const r = new Uint8Array(2**29+1); v = Object.getOwnPropertyNames(r);"},
		{"the keys of a string of 2^29+1 characters", []string{"1", "object", "string", "repeat count", `"\u00DF"`, "2^29", "+1", "keys"},
			"const r = \"\\u00DF\".repeat(2**29+1); v = Object.keys(r);"},
		{"a string of 2^30-1 characters normalized", []string{"1", "string", "repeat count", `"\u00DF"`, "2^30", "-1", "normalize", `"NFC"`, "method"},
			"v = r.normalize(\"NFC\")"},
	}
}

// The committed corpus is the seeds, each file the bytes of its recipe,
// and each recipe writes the script it is meant to.
func TestBuiltinSizesSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzBuiltinSizes")
	write := os.Getenv("SIZES_WRITE_SEEDS") == "1"
	names := map[string]bool{}
	for _, s := range sizesSeeds() {
		if names[s.name] {
			t.Errorf("two seeds are named %s", s.name)
		}
		names[s.name] = true
		data, script := checkRecipe(t, s)
		if data == nil {
			continue
		}
		file := filepath.Join(dir, s.name)
		if write {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, corpusFile(data), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := readCorpusBytes(file)
		if err != nil {
			t.Errorf("seed %s: %v (SIZES_WRITE_SEEDS=1 writes it)", s.name, err)
			continue
		}
		if !bytes.Equal(got, data) {
			t.Errorf("seed %s: %s decodes to\n%s\nnot to its recipe's\n%s\n(SIZES_WRITE_SEEDS=1 rewrites it)", s.name, file, sizesDecode(got), script)
		}
	}
}

// The grammar can write each script of the class the target hunts.
func TestBuiltinSizesReaches(t *testing.T) {
	for _, s := range sizesShapes() {
		checkRecipe(t, s)
	}
}

// checkRecipe encodes a seed's recipe and checks that its bytes decode to
// a script that shows what the seed is meant to; it returns the bytes and
// the script, or nil after reporting the error.
func checkRecipe(t *testing.T, s sizesSeed) ([]byte, string) {
	t.Helper()
	data, script, err := sizesEncode(s.recipe...)
	if err != nil {
		t.Errorf("seed %s: %v", s.name, err)
		return nil, ""
	}
	if got := sizesDecode(data); got != script {
		t.Errorf("seed %s: its bytes decode to\n%s\nnot to what its recipe wrote\n%s", s.name, got, script)
		return nil, ""
	}
	if !strings.Contains(script, s.shows) {
		t.Errorf("seed %s writes\n%s\nwhich does not show %q", s.name, script, s.shows)
		return nil, ""
	}
	return data, script
}

// The committed corpus takes every alternative of the choice points that
// name a builtin family, a kind of count, a receiver and a proxy trap.
func TestBuiltinSizesCorpusCovers(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzBuiltinSizes", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	taken := map[sizesChoice]bool{}
	tables := map[string][]string{}
	for _, file := range files {
		data, err := readCorpusBytes(file)
		if err != nil {
			t.Fatal(err)
		}
		g := &sizesGen{data: data}
		g.script()
		for _, c := range g.trace {
			taken[c] = true
		}
		for at, names := range g.tables {
			tables[at] = names
		}
	}
	for _, at := range []string{"family", "count", "arrayish", "trap", "keys", "typed", "string", "buffer", "iterator", "iterable", "set-like", "number", "bigint"} {
		names, ok := tables[at]
		if !ok {
			t.Errorf("no seed reaches the choice point %s", at)
			continue
		}
		var missing []string
		for _, name := range names {
			if !taken[sizesChoice{at, name}] {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			t.Errorf("no seed takes %s: %q", at, missing)
		}
	}
}

// The fuzz target's engine, one for these tests (compiling it is most of
// their time).
func TestBuiltinSizesEngine(t *testing.T) {
	st := newSizesTarget(t)
	t.Run("grammar compiles", func(t *testing.T) { testGrammarCompiles(t, st) })
	t.Run("runs are short", func(t *testing.T) { testRunsAreShort(t, st) })
}

// Every script the grammar writes compiles: random byte strings of many
// lengths, and the seeds, each compiled by the engine as a function body.
func testGrammarCompiles(t *testing.T, st *sizesTarget) {
	rnd := mathrand.New(mathrand.NewPCG(33, 1))
	var inputs [][]byte
	for i := range 1000 {
		b := make([]byte, i%120)
		for j := range b {
			b[j] = byte(rnd.Uint32())
		}
		inputs = append(inputs, b)
	}
	for _, s := range sizesSeeds() {
		data, _, _ := sizesEncode(s.recipe...)
		inputs = append(inputs, data)
	}
	// inputs whose scripts did not compile: a callback returning an
	// object literal, which an arrow function took for its body
	inputs = append(inputs, []byte("\x00\x00\xe5X|\xc5\xe3\xe2"))
	for _, data := range inputs {
		script := sizesDecode(data)
		input, err := json.Marshal(map[string]string{"s": script})
		if err != nil {
			t.Fatal(err)
		}
		req := st.request(`try { new Function(input.s); "compiles" } catch (e) { String(e) }`)
		req.InputJSON = string(input)
		req.Limits.WallClock = 10 * time.Second
		o, err := st.e.Evaluate(context.Background(), req)
		if err != nil || !o.OK || string(o.Value) != `"compiles"` {
			t.Errorf("%q decodes to a script that does not compile (%+v, %v; value %s):\n%s", data, o, err, o.Value, script)
		}
	}
}

// A script that loops in JavaScript ends on the CPU budget, long before
// the fuzz target's wall clock; one stuck in a native loop over a huge
// length ends on its wall clock, terminated in the process, and leaves no
// run behind.
func testRunsAreShort(t *testing.T, st *sizesTarget) {
	for _, tc := range []struct {
		script string
		wall   time.Duration
		want   spi.Outcome
		within time.Duration
	}{
		{"for (let i = 0; i < 2**32; i++) {}", 10 * time.Second, spi.LimitHit(spi.LimitCPU), 10 * sizesWallClock},
		{"Array.prototype.join.call({length: 2**53-1}, \"\")", st.wallClock, spi.LimitHit(spi.LimitWallClock), st.wallClock + sizesGrace + time.Second},
	} {
		req := st.request(tc.script)
		req.Limits.WallClock = tc.wall
		start := time.Now()
		o, err := st.e.Evaluate(context.Background(), req)
		took := time.Since(start)
		if err != nil || o.Kind != tc.want.Kind || o.Limit != tc.want.Limit {
			t.Errorf("%s: %+v, %v; want %+v", tc.script, o, err, tc.want)
		}
		if took > tc.within {
			t.Errorf("%s took %v, more than %v", tc.script, took, tc.within)
		}
		t.Logf("%s: %s %s in %v", tc.script, o.Kind, o.Limit, took)
	}
	deadline := time.Now().Add(time.Second)
	for st.e.StuckRuns() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := st.e.StuckRuns(); n > 0 {
		t.Errorf("%d stuck run(s) left running", n)
	}
}
