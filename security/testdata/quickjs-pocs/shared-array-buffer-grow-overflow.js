// source: found here reading js_array_buffer_resize of QuickJS 2026-05-21
//   (d73189dd); quickjs-emscripten 0.32.0 (QuickJS f1139494, loom's
//   reference backend) has it too: there this script traps the whole module
//   ("RuntimeError: memory access out of bounds").
// bug: with no host SharedArrayBuffer functions
//   (JS_SetSharedArrayBufferFunctions), a growable SharedArrayBuffer is
//   allocated at its initial length, but grow() only raises its length, up
//   to maxByteLength, as if the memory had been committed up front: views
//   then read and write past the allocation (heap overflow).
// here: the shim deletes SharedArrayBuffer, and nothing else reaches its
//   constructor (security/testdata/surface.allow).
// expect: threw ReferenceError 'SharedArrayBuffer' is not defined
const s = new SharedArrayBuffer(8, { maxByteLength: 1 << 16 });
const victims = [];
for (let i = 0; i < 100; i++) victims.push({ tag: "victim" + i });
s.grow(1 << 16);
const u = new Uint8Array(s);
let leaked = 0;
for (let i = 8; i < u.length; i++) if (u[i] !== 0) leaked++;
u.fill(0x41);
[leaked, JSON.stringify(victims[50])];
