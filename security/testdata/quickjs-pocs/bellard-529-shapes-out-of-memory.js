// source: https://github.com/bellard/quickjs/issues/529 (open, against 2026-06-04)
// bug: qjs with a 256 KiB memory limit crashed in js_shape_hash_unlink as an
//   object's shape was freed in the clean-up after an out-of-memory error.
// here: fill the memory to the brim, then free it 64 bytes at a time and
//   build objects of many properties, add, delete and redefine them and drop
//   the objects after each step.
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
    try { (() => { const o = {}; for (let i = 0; i < 40; i++) o["p" + i] = i; delete o.p3; Object.defineProperty(o, "q", { get() { return 1 } }); const c = Object.assign({}, o, { r: 2 }); Object.freeze(c); o.p0 + c.r })(); ok++ } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
