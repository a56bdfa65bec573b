// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: with on an array-like of length 2^29+1: 8 x (2^29+1) wrapped to 8 bytes.
// patch: 0007-fast-array-storage-cannot-wrap
// native: InternalError: out of memory
// expect: limit memory
Array.prototype.with.call({ length: 2 ** 29 + 1 }, 0, 0).length
