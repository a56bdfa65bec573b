// source: https://github.com/bellard/quickjs/issues/532 (open, against 2026-06-04)
// bug: qjs with a 256 KiB memory limit crashed in __JS_FreeAtom, freeing an
//   atom index that was never one while resolving variables.
// here: fill the memory to the brim, then free it 64 bytes at a time and
//   compile a function of many distinct identifiers, each declared and
//   captured by a closure, after each step.
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
    try { (() => { eval("(function () { " + Array.from({ length: 40 }, (_, i) => "let id" + i + " = " + i + ";").join(" ") + " return () => id0 + id39 })()()") })(); ok++ } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
