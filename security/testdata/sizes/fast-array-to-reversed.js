// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: expand_fast_array sized 2^29+1 elements as 8 x (2^29+1) bytes in a
//   32-bit size_t: 8 bytes, and the copy wrote the elements past them.
// patch: 0007-fast-array-storage-cannot-wrap
// native: InternalError: out of memory
// expect: limit memory
new Array(2 ** 29 + 1).toReversed().length
