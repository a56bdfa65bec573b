// source: https://github.com/bellard/quickjs/issues/478 (quickjs-ng issue 1296)
// bug: constructing a typed array runs script code (a prototype getter on
//   new.target) after the buffer's length was read; shrinking the resizable
//   buffer there left the view past its end (heap overflow).
// here: the view tracks the buffer's length, which the getter made 0: it
//   reads nothing.
// expect: ok [0,0,null]
const ab = new ArrayBuffer(10, { maxByteLength: 10 });
const target = function () {}.bind();
Object.defineProperty(target, "prototype", { get: () => ab.resize(0) });
const ta = Reflect.construct(Uint8Array, [ab], target);
[ta.length, ta.byteLength, ta[0]];
