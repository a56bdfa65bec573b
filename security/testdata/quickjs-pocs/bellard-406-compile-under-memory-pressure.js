// source: https://github.com/bellard/quickjs/issues/406 (open against 2025-04-26)
// bug: when an allocation fails while the compiler emits a function with
//   labels, update_label's assertion (label >= 0 && label < s->label_count)
//   fails and QuickJS aborts. In wasm the abort is a trap ("unreachable"):
//   the run ends as an engine failure instead of the memory limit it hit.
// here: fill the memory to the brim, then free it 64 bytes at a time and
//   compile the same labelled function after each step, so that compilation
//   runs out of memory at every point of its work in turn. The assertion is
//   still in QuickJS 2026-05-21 (d73189dd), but this script no longer
//   reaches it there: the run ends as the memory limit without a trap.
// memory: 16777216
// expect: limit memory or ok (the heap layout decides which: the checked
//   engine compiles every time, the production engine hits the limit)
const body = "if (a) { a++ } else { a-- } for (;;) { break } while (a) { continue } " +
  "switch (a) { case 1: break; default: a = 2 } L: { break L } " +
  "x: for (;;) { for (;;) { continue x } } try { a() } catch (e) { a = e } finally { a = 1 } ";
let keep = [];
function fill(size) {
  try {
    for (;;) keep.push(new Uint8Array(size));
  } catch (e) {}
}
let compiled = 0;
for (const n of [5, 2, 10]) {
  const src = "function f(a) {" + body.repeat(n) + "} f";
  let ok = 0;
  try {
    fill(1 << 20);
    fill(1 << 16);
    fill(1 << 12);
    fill(64);
    while (keep.length && ok < 4) {
      keep.pop();
      try {
        eval(src);
        ok++;
      } catch (e) {}
    }
  } catch (e) {}
  keep = [];
  compiled += ok;
}
compiled;
