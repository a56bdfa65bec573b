// source: https://github.com/bellard/quickjs/issues/508
// bug: Atomics operations computed the element address, then converted the
//   operand (valueOf), which could reallocate a resizable buffer: a write to
//   freed memory.
// here: the build has no Atomics (and no SharedArrayBuffer).
// expect: threw ReferenceError 'Atomics' is not defined
const ab = new ArrayBuffer(64, { maxByteLength: 128 });
const ta = new Int32Array(ab);
Atomics.add(ta, 0, { valueOf() { ab.resize(128); return 1; } });
