// source: https://github.com/bellard/quickjs/issues/478 (quickjs-ng issue 1296)
// bug: constructing a typed array runs script code (a prototype getter on
//   new.target) after the buffer's length was read; shrinking the resizable
//   buffer there left the view past its end (heap overflow).
// here: 2025-04-26 has no resizable ArrayBuffer (no resize method), so the
//   getter throws.
// expect: threw TypeError not a function
const ab = new ArrayBuffer(10, { maxByteLength: 10 });
const target = function () {}.bind();
Object.defineProperty(target, "prototype", { get: () => ab.resize(0) });
Reflect.construct(Uint8Array, [ab], target);
