// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: JS_ToUTF32String (String.prototype.normalize, localeCompare) asked for
//   4 x (2^30-1) bytes, which the allocator's rounding wrapped to a 16-byte
//   block; the UTF-32 copy then wrote 4 GiB past it.
// patch: 0008-builtin-tables-cannot-wrap (and 0006-allocation-sizes-cannot-wrap)
// native: InternalError: out of memory
// memory: 2147483648
// wall: 120000
// expect: limit memory
"a".repeat(2 ** 30 - 1).normalize().length
