// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: toSorted on an array-like of length 2^29 made a fast array of 8 x 2^29
//   = 2^32 bytes in a 32-bit size_t: 0 bytes, the runtime's shared zero-size
//   block beside the allocator's function pointers, then wrote past it.
// patch: 0007-fast-array-storage-cannot-wrap
// native: InternalError: out of memory
// expect: limit memory
Array.prototype.toSorted.call({ length: 2 ** 29 }).length
