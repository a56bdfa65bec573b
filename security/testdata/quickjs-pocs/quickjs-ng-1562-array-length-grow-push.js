// source: https://github.com/quickjs-ng/quickjs/issues/1562
// bug (quickjs-ng): push onto a fast array grown by assigning length left its
//   element count wrong, and a later garbage collection freed a live object.
// here: the same steps, then enough allocation to run the collector; the
//   run must end with the right sum, not a trap.
// expect: ok 7380
const keep = [];
for (let i = 0; i < 30; i++) {
  const a = [0];
  a.length = 245;
  a.push(2);
  keep.push(a);
}
const junk = [];
for (let i = 0; i < 200000; i++) junk.push({ i });
keep.reduce((n, a) => n + a.length, 0);
