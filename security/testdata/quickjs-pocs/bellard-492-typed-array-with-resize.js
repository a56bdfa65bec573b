// source: https://github.com/bellard/quickjs/issues/492
// bug: TypedArray.prototype.with read the length, then ran the value's
//   valueOf, which could shrink the resizable buffer: the copy used the stale
//   length (heap over-read into script-visible values).
// here: as ECMAScript says, the copy has the original length, and the
//   elements past the shrunk buffer read as undefined (0), not as the heap.
// expect: ok [1024,1,true]
const ab = new ArrayBuffer(4096, { maxByteLength: 4096 });
const ta = new Int32Array(ab).fill(7);
const copy = ta.with(0, { valueOf() { ab.resize(16); return 1; } });
[copy.length, copy[0], copy.slice(4).every((x) => x === 0)];
