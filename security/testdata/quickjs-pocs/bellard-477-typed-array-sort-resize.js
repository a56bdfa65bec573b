// source: https://github.com/bellard/quickjs/issues/477 (quickjs-ng issue 1297)
// bug: a typed-array sort comparator that shrinks the resizable buffer after
//   some comparisons let the final copy read past the buffer (heap overflow).
// here: the sort writes back only what fits the shrunk buffer: its first ten
//   bytes, the smallest of the sorted values, and nothing past them.
// expect: ok [10,[0,0,1,2,3,4,5,6,7,8]]
const ab = new ArrayBuffer(256, { maxByteLength: 2560 });
const u8 = new Uint8Array(ab);
for (let i = 0; i < 256; i++) u8[i] = i;
u8[255] = 0;
let calls = 0;
u8.sort((a, b) => {
  if (++calls === 100) ab.resize(10);
  return a - b;
});
[u8.length, Array.from(u8)];
