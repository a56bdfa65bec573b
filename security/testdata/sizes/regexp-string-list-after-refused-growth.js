// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: once the heap refused the regexp bytecode's growth, the compiler went on
//   and re_emit_string_list (classes of strings, \q{...} in v mode) patched
//   jumps past the buffer and followed offsets read from there. Not 32-bit
//   only: native QuickJS crashes (segmentation fault). Calibrated to the
//   engine's heap: the heap is filled, then 4 MiB are freed.
// patch: 0009-regexp-compiler-stops-at-first-failed-emit
// native: Segmentation fault
// expect: ok true
const keep = [];
try { for (;;) keep.push(new ArrayBuffer(1 << 20)); } catch (e) {}
for (let i = 0; i < 4; i++) keep.pop();
let r;
try { new RegExp("\\p{L}".repeat(2000) + "[\\q{ab|cd|ef}]".repeat(20), "v"); r = "compiled"; }
catch (e) { r = String(e); }
keep.length = 0;
r === "compiled" || r === "SyntaxError: out of memory"
