// source: https://github.com/bellard/quickjs/issues/535, confirmed by this project's 32-bit size audit
// bug: js_proxy_get_own_property_names sized the trap's keys as 8 x length in a
//   32-bit size_t; an ownKeys trap answering {length: 2^29} made it 0 bytes,
//   and the keys the script chose were written past them.
// patch: 0008-builtin-tables-cannot-wrap
// native: InternalError: out of memory
// expect: limit memory
Object.keys(new Proxy({}, { ownKeys: () => ({ length: 2 ** 29 }) })).length
