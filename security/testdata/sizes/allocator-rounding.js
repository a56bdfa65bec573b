// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: __js_malloc rounded 8 x (2^29-1) = 2^32-8 bytes up and added its
//   header in a 32-bit size_t: a 16-byte block, and the copy wrote 4 GiB past it.
// patch: 0006-allocation-sizes-cannot-wrap
// native: InternalError: out of memory
// expect: limit memory
new Array(2 ** 29 - 1).toReversed().length
