// source: https://github.com/bellard/quickjs/issues/451
// bug: ArrayBuffer.prototype.slice calls the species constructor, which could
//   shrink the source buffer before the copy (heap over-read).
// here: no resizable ArrayBuffer in 2025-04-26: the species constructor throws.
// expect: threw TypeError not a function
const buf = new ArrayBuffer(1000, { maxByteLength: 2000 });
Object.defineProperty(buf.constructor, Symbol.species, {
  value: function (len) {
    buf.resize(100);
    return new ArrayBuffer(len);
  },
});
buf.slice(500, 1000);
