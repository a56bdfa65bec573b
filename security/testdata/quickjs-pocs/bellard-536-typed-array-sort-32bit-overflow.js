// source: https://github.com/bellard/quickjs/issues/536
// bug: on 32-bit targets (wasm32 is one) TypedArray.prototype.sort sized its
//   index array as 4 x length in a 32-bit size_t: a length of 2^30 wrapped to
//   a tiny allocation (heap overflow).
// here: the memory limit refuses the 1 GiB array long before the sort.
// memory: 268435456
// expect: limit memory
new Int8Array(2 ** 30).sort();
