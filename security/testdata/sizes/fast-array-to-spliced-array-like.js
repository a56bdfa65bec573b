// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: toSpliced on an array-like of length 2^29: the same wrap as toSorted.
// patch: 0007-fast-array-storage-cannot-wrap
// native: InternalError: out of memory
// expect: limit memory
Array.prototype.toSpliced.call({ length: 2 ** 29 }).length
