// source: https://github.com/bellard/quickjs/issues/528 (open, against 2026-06-04)
// bug: qjs with a 1 MiB memory limit crashed in get_first_lexical_var while
//   pop_scope closed a lexical scope (a scope the parser could not push).
// here: fill the memory to the brim, then free it 64 bytes at a time and
//   compile nested blocks of lexical declarations after each step.
//   The issue's own input is an attachment this project cannot read; the
//   out-of-memory sweep (quickjs: TestOutOfMemorySweep) refuses every
//   allocation of the engine's own parser tests one by one, and found this
//   class in the pinned engine (0016-compilation-that-lost-an-allocation-creates-nothing).
// memory: 16777216
// expect: limit memory or ok (the heap layout decides which)
let keep = [];
function fill(size) { try { for (;;) keep.push(new Uint8Array(size)) } catch (e) {} }
let ok = 0;
try {
  fill(1 << 20); fill(1 << 16); fill(1 << 12); fill(64);
  while (keep.length && ok < 3) {
    keep.pop();
    try { (() => { eval("{ let a = 1; { const b = a; { class C {} { function f() { return b } let d = f(); { let e = [a, b, d] } } } } }") })(); ok++ } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
