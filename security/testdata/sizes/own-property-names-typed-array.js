// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: JS_GetOwnPropertyNamesInternal sized its key table as 8 x the number of
//   keys in a 32-bit size_t: a Uint8Array of 2^29+1 elements has as many index
//   keys, the table wrapped to 8 bytes, and the keys were written past it.
// patch: 0008-builtin-tables-cannot-wrap
// native: InternalError: out of memory
// memory: 1073741824
// wall: 60000
// expect: limit memory
Object.getOwnPropertyNames(new Uint8Array(2 ** 29 + 1)).length
