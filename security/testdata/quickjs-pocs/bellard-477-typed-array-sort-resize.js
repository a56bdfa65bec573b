// source: https://github.com/bellard/quickjs/issues/477 (quickjs-ng issue 1297)
// bug: a typed-array sort comparator that shrinks the resizable buffer after
//   some comparisons let the final copy read past the buffer (heap overflow).
// here: no resizable ArrayBuffer in 2025-04-26: the comparator throws.
// expect: threw TypeError not a function
const ab = new ArrayBuffer(256, { maxByteLength: 2560 });
const u8 = new Uint8Array(ab);
for (let i = 0; i < 256; i++) u8[i] = i;
u8[255] = 0;
let calls = 0;
u8.sort((a, b) => {
  if (++calls === 100) ab.resize(10);
  return a - b;
});
