// source: https://github.com/bellard/quickjs/issues/530 (open, against 2026-06-04)
// bug: qjs with a 256 KiB memory limit failed an assertion in
//   resolve_variables while creating a function.
// here: fill the memory to the brim, then free it 64 bytes at a time and
//   compile nested closures that capture variables of every kind (arguments,
//   parameters, lexical and var bindings, a function expression's name)
//   after each step.
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
    try { (() => { eval("(function outer(a, b) { var v = 1; let l = 2; const k = function named() { return [a, b, v, l, arguments.length, typeof named] }; return (() => k())() })(1, 2)") })(); ok++ } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
