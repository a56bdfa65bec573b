package security

import "testing"

// stuckFamily is a script that stays inside one native builtin (or a loop of long native calls)
// far past any deadline: QuickJS's interrupt handler cannot stop it; only the hard kill can.
type stuckFamily struct {
	name   string // what it does
	script string
	memory int64 // the memory limit it runs under
}

// stuckFamilies is the battery of stuck runs: one script per family of
// native builtin that QuickJS's interrupt handler cannot reach. The handler
// is polled once every 1,000 ticks (function calls and backward jumps,
// quickjs/patches/0001); none of these scripts reaches a poll for at least tens
// of seconds, however short its wall clock.
//
// Each was measured with the engine of this commit (QuickJS 2026-05-21 on
// wazero, HardKillWatchdog) by TestMeasureStuckCases, at the battery's
// longest wall clock (maxStuckWall) and the memory limit given, in its own
// process, two at a time on a shared 2-core machine: every family's guest
// was still inside native code when the measurement stopped at 30 s, so it
// outlives deadline + grace by far even on a machine five times faster.
// (Of the stuck cases of stuck_test.go, the loop over indexOf returned
// after 22.3 s; the others were still there at 30 and 45 s.)
// None ends early with a memory or CPU limit or a throw; its memory limit is
// the smallest of 1, 4, 16 and 64 MiB at which it stays stuck: at the next
// smaller one it runs out of memory at once (a memory limit hit in time is
// not stuck).
//
// Single calls are superlinear (a naive string search, an insertion sort, a
// quadratic duplicate check) or walk a length of 2^32-1 or 2^53 that holds
// nothing, so they need little memory. Linear builtins are bounded by the
// memory limit, so their families are a loop of long native calls: an
// iteration of `for(;;)f()` is two ticks (one for an operator such as a*a),
// so 500 to 1,000 of them (50 ms to seconds each here) run before the first
// poll. The loop's completion value holds the last result while the next is
// computed, hence the .length of large results.
var stuckFamilies = []stuckFamily{
	// sorts
	{name: "default sort of 1e4 copies of one 400 KB string (ToString, then a full compare per comparison)", script: `Array(1e4).fill('a'.repeat(4e5)).sort().length`, memory: 1 << 20},
	{name: "comparator sort of a 2^32-1 sparse array (the collection of its elements)", script: `Array(2**32-1).sort((a,b)=>a-b).length`, memory: 1 << 20},
	{name: "default sort of an array-like of length 2^53", script: `[].sort.call({length:2**53})`, memory: 1 << 20},
	// join
	{name: "join of a 2^32-1 sparse array", script: `Array(2**32-1).join('')`, memory: 1 << 20},
	{name: "join of an array-like of length 2^53", script: `[].join.call({length:2**53},'')`, memory: 1 << 20},
	{name: "a loop of joins of a million-element typed array", script: `for(a=new Uint8Array(1e6);;)a.join('')`, memory: 4 << 20},
	// JSON.stringify and the engine's own serialisation
	{name: "JSON.stringify wide: 1e5 references to an object of 1e4 undefined properties", script: `JSON.stringify(Array(1e5).fill(Object.assign({},Array(1e4).fill()))).length`, memory: 4 << 20},
	{name: "JSON.stringify deep: 20 references to a 20000-deep nesting (a cycle check linear in depth)", script: `JSON.stringify(Array(20).fill(JSON.parse('['.repeat(2e4)+']'.repeat(2e4)))).length`, memory: 4 << 20},
	{name: "JSON.stringify with a replacer list of 7e4 distinct keys (a linear duplicate check per key)", script: `JSON.stringify(0,Object.keys('a'.repeat(7e4)))`, memory: 4 << 20},
	{name: "JSON.stringify with a 2^32-1 sparse replacer list", script: `JSON.stringify(0,Array(2**32-1))`, memory: 1 << 20},
	{name: "a wide completion value, serialised by the engine's shim", script: `Array(1e5).fill(Object.assign({},Array(1e4).fill()))`, memory: 4 << 20},
	{name: "a deep completion value, serialised by the engine's shim", script: `Array(20).fill(JSON.parse('['.repeat(2e4)+']'.repeat(2e4)))`, memory: 4 << 20},
	{name: "console.log of a wide array", script: `console.log(Array(1e5).fill(Object.assign({},Array(1e4).fill())))`, memory: 4 << 20},
	// naive string search
	{name: "String indexOf of a 150000-character near-match", script: `'a'.repeat(3e5).indexOf('a'.repeat(15e4)+'b')`, memory: 1 << 20},
	{name: "String lastIndexOf of a 150000-character near-match", script: `'a'.repeat(3e5).lastIndexOf('a'.repeat(15e4)+'b')`, memory: 1 << 20},
	{name: "String split on a 150000-character near-match", script: `'a'.repeat(3e5).split('a'.repeat(15e4)+'b').length`, memory: 1 << 20},
	{name: "String replaceAll of a 150000-character near-match", script: `'a'.repeat(3e5).replaceAll('a'.repeat(15e4)+'b','').length`, memory: 1 << 20},
	// array methods over an array-like of length 2^53
	{name: "Array reverse of an array-like of length 2^53", script: `[].reverse.call({length:2**53})`, memory: 1 << 20},
	{name: "a loop of Array.from of a million-element array-like", script: `for(;;)Array.from({length:1e6}).length`, memory: 16 << 20},
	// property names, Unicode
	{name: "Object.getOwnPropertyNames of a proxy listing 5e5 keys (a quadratic duplicate check)", script: `Object.getOwnPropertyNames(new Proxy({},{ownKeys:_=>Object.keys('a'.repeat(5e5))}))`, memory: 64 << 20},
	{name: "NFC normalize of 2e5 combining marks (an insertion sort, then a quadratic composition scan)", script: `'\u0301\u0316'.repeat(1e5).normalize().length`, memory: 4 << 20},
	{name: "NFD normalize of 2e5 combining marks (an insertion sort by combining class)", script: `'\u0301\u0316'.repeat(1e5).normalize('NFD').length`, memory: 4 << 20},
	{name: "localeCompare of 2e5 combining marks (NFC of both sides)", script: `'\u0301\u0316'.repeat(1e5).localeCompare('')`, memory: 4 << 20},
	{name: "a loop of toUpperCase of a million ß", script: `for(s='ß'.repeat(1e6);;)s.toUpperCase().length`, memory: 4 << 20},
	{name: "a loop of repeat to 10 MB", script: `for(;;)'ab'.repeat(5e6).length`, memory: 16 << 20},
	{name: "a loop of padStart to 5e6 characters", script: `for(;;)''.padStart(5e6,'ab').length`, memory: 16 << 20},
	{name: "a loop of encodeURIComponent of a million é", script: `for(s='é'.repeat(1e6);;)encodeURIComponent(s).length`, memory: 16 << 20},
	{name: "a loop of sorts of a 1e7-element typed array", script: `for(a=new Uint8Array(1e7);;)a.sort()`, memory: 16 << 20},
	// BigInt
	{name: "a loop of BigInt multiplications of two 524000-bit values", script: `for(a=2n**524000n-1n;;)a*a`, memory: 1 << 20},
	{name: "a loop of BigInt powers to 950000 bits", script: `for(;;)3n**600000n`, memory: 1 << 20},
	{name: "a loop of BigInt toString of a 1048000-bit value (quadratic)", script: `for(a=2n**1048000n;;)(a+'').length`, memory: 1 << 20},
	// parsing generated text
	{name: "a loop of JSON.parse of a million-element array text", script: `for(s='['+'0,'.repeat(1e6)+'0]';;)JSON.parse(s).length`, memory: 16 << 20},
	{name: "a loop of eval of 1e5 generated statements", script: `for(s='x=1;'.repeat(1e5);;)eval(s)`, memory: 16 << 20},
	// iterators: the built-in iterators' next runs natively, without a call
	{name: "Iterator drop of 2^32 values of a 2^32-1 sparse array", script: `Array(2**32-1).values().drop(2**32).next()`, memory: 1 << 20},
	{name: "Iterator.concat of a 2^32-1 sparse array's values, drained by drop", script: `Iterator.concat(Array(2**32-1).values()).drop(2**32).next()`, memory: 1 << 20},
	{name: "Math.sumPrecise of the 2^32-1 keys of a sparse array", script: `Math.sumPrecise(Array(2**32-1).keys())`, memory: 1 << 20},
	// Set methods and the Set constructor over a huge iterable
	{name: "Set union with a set-like whose keys are 2^32-1 values", script: `new Set().union({size:1,has(){},keys:()=>Array(2**32-1).values()}).size`, memory: 1 << 20},
	{name: "Set isSupersetOf a set-like whose keys are 2^32-1 values", script: `new Set([undefined]).isSupersetOf({size:1,has(){},keys:()=>Array(2**32-1).values()})`, memory: 1 << 20},
	// the RegExp v flag: class set operations are computed at compile time
	{name: "a v-flag class of 4e5 nested set differences", script: `new RegExp('['+'[\\p{L}--[a-z]]'.repeat(4e5)+']','v')`, memory: 16 << 20},
	// base64 and hex of a large buffer, and other linear string builtins
	{name: "a loop of toBase64 of 10 MB", script: `for(a=new Uint8Array(1e7);;)a.toBase64().length`, memory: 64 << 20},
	{name: "a loop of toHex of 5 MB", script: `for(a=new Uint8Array(5e6);;)a.toHex().length`, memory: 64 << 20},
	{name: "a loop of fromBase64 of 12 MB of text", script: `for(s='AAAA'.repeat(3e6);;)Uint8Array.fromBase64(s).length`, memory: 64 << 20},
	{name: "a loop of fromHex of 10 MB of text", script: `for(s='00'.repeat(5e6);;)Uint8Array.fromHex(s).length`, memory: 64 << 20},
	{name: "a loop of RegExp.escape of 5e6 characters", script: `for(s='.'.repeat(5e6);;)RegExp.escape(s).length`, memory: 64 << 20},
	{name: "a loop of sorts of a 1e7-element Float16Array", script: `for(a=new Float16Array(1e7);;)a.sort()`, memory: 64 << 20},
	{name: "a loop of toWellFormed of 5e6 lone surrogates", script: `for(s='\ud800'.repeat(5e6);;)s.toWellFormed().length`, memory: 64 << 20},
}

// The battery is at least 35 distinct families of scripts short enough to
// send anywhere, each under one of the memory limits the service tests use.
func TestStuckFamiliesAreDistinct(t *testing.T) {
	if len(stuckFamilies) < 35 {
		t.Errorf("%d stuck families, want at least 35", len(stuckFamilies))
	}
	names, scripts := map[string]bool{}, map[string]bool{}
	for _, f := range stuckFamilies {
		if names[f.name] {
			t.Errorf("name %q appears twice", f.name)
		}
		if scripts[f.script] {
			t.Errorf("script %q appears twice", f.script)
		}
		names[f.name], scripts[f.script] = true, true
		if len(f.script) >= 200 {
			t.Errorf("%s: script of %d bytes, want under 200", f.name, len(f.script))
		}
		switch f.memory {
		case 1 << 20, 4 << 20, 16 << 20, 64 << 20:
		default:
			t.Errorf("%s: memory %d, want 1, 4, 16 or 64 MiB", f.name, f.memory)
		}
	}
}
