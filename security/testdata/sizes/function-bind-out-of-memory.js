// source: the out-of-memory sweep (quickjs: TestOutOfMemorySweep) on the
//   size corpus's bind chain (testdata/fuzz/FuzzBuiltinSizes)
// bug: Function.prototype.bind made the function object first and its data
//   next; when the data could not be allocated, the object was freed with
//   none, and its finalizer read the target through a null pointer (a
//   segmentation fault in native QuickJS; in wasm a read of the first bytes
//   of linear memory, taken for a value and freed).
// here: fill the memory to the brim, then free it 64 bytes at a time and
//   bind after each step, so that bind runs out of memory at every point.
// patch: 0017-bound-function-without-its-data
// native: a 64-bit host crashes the same way when the data's allocation fails
// memory: 16777216
// expect: limit memory or ok (the heap layout decides which)
let keep = [];
function fill(size) { try { for (;;) keep.push(new Uint8Array(size)) } catch (e) {} }
let ok = 0;
try {
  fill(1 << 20); fill(1 << 16); fill(1 << 12); fill(64);
  while (keep.length && ok < 3) {
    keep.pop();
    try { (() => { let f = (...a) => a.length; for (let i = 0; i < 8; i++) f = f.bind(null, i, i); f() })(); ok++ } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
