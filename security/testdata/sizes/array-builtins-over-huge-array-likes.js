// source: quickjs-ng issue 1672 (fixed there in ad874ef) and the Array half
//   of bellard/quickjs issue 546
// bug: indexOf, lastIndexOf, includes, every, some, reduce and find over
//   an array-like of length 2^53 with no elements looped natively without
//   ever polling the interrupt handler: the run met its deadline only at the
//   hard kill, which cost its worker process (a stuck run on every host
//   whose embedder relies on the interrupt handler).
// here: each of them, one after the other, under a wall clock of 300 ms:
//   the first ends the run at its deadline, and the service kills no worker.
// patch: 0019-array-builtins-poll-over-array-likes
// native: qjs installs no interrupt handler, so a native run loops for
//   days; an embedder's handler now stops it
// wall: 300
// expect: limit wallClock
const big = { length: 2 ** 53 };
[].indexOf.call(big, 1);
[].lastIndexOf.call(big, 1);
[].includes.call(big, 1);
[].every.call(big, () => false);
[].reduce.call(big, (a, b) => a);
[].find.call(big, () => false);
