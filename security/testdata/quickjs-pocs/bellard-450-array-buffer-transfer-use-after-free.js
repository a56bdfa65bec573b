// source: https://github.com/bellard/quickjs/issues/450 (quickjs-ng issue 1208)
// bug: ArrayBuffer.prototype.transfer freed the old storage while a view
//   still pointed at it (use after free through the view).
// here: 2025-04-26 has no transfer: the call throws.
// expect: threw TypeError not a function
const ab = new ArrayBuffer(64);
const view = new Uint8Array(ab).fill(0x41);
ab.transfer();
view[0];
