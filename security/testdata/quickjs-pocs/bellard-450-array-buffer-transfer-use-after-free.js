// source: https://github.com/bellard/quickjs/issues/450 (quickjs-ng issue 1208)
// bug: ArrayBuffer.prototype.transfer freed the old storage while a view
//   still pointed at it (use after free through the view).
// here: transfer detaches the old buffer: the view reads nothing (length 0,
//   undefined) and the new buffer holds the bytes.
// expect: ok [0,null,64,65]
const ab = new ArrayBuffer(64);
const view = new Uint8Array(ab).fill(0x41);
const moved = ab.transfer();
[view.length, view[0], moved.byteLength, new Uint8Array(moved)[0]];
