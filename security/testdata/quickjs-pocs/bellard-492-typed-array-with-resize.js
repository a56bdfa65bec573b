// source: https://github.com/bellard/quickjs/issues/492
// bug: TypedArray.prototype.with read the length, then ran the value's
//   valueOf, which could shrink the resizable buffer: the copy used the stale
//   length (heap over-read into script-visible values).
// here: no resizable ArrayBuffer in 2025-04-26: valueOf throws.
// expect: threw TypeError not a function
const ab = new ArrayBuffer(4096, { maxByteLength: 4096 });
const ta = new Int32Array(ab);
ta.with(0, { valueOf() { ab.resize(16); return 1; } });
