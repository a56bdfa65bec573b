// source: https://github.com/bellard/quickjs/issues/451
// bug: ArrayBuffer.prototype.slice calls the species constructor, which could
//   shrink the source buffer before the copy (heap over-read).
// here: slice checks the source again after the species constructor and
//   refuses the shrunk buffer (ECMAScript would copy what is left, nothing
//   here: QuickJS is stricter, and reads nothing past the end).
// expect: threw TypeError detached
const buf = new ArrayBuffer(1000, { maxByteLength: 2000 });
Object.defineProperty(buf.constructor, Symbol.species, {
  value: function (len) {
    buf.resize(100);
    return new ArrayBuffer(len);
  },
});
buf.slice(500, 1000);
