// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: once the heap refused the bytecode's growth, later smaller writes still
//   landed, the parser's view of what it emitted went wrong, and it reported a
//   SyntaxError the source does not have ("invalid assignment left-hand side");
//   native QuickJS crashed on the same path (has_with_scope). Each attempt
//   compiles under a heap filled to a different point.
// patch: 0011-parser-stops-at-first-failed-allocation
// native: Segmentation fault (at some limits)
// memory: 4194304
// expect: ok true
const src = "(function(){var a;" + ("if(a)a=[" + "0,".repeat(100) + "];").repeat(3000) + "})";
const seen = [];
for (let k = 0; k < 12; k++) {
  let keep = [];
  try { for (let i = 0; i < k * 16; i++) keep.push(new ArrayBuffer(1 << 12)); } catch (e) {}
  let got;
  try { (0, eval)(src); got = "compiled"; } catch (e) { got = String(e); }
  keep = null;
  seen.push(got);
}
seen.every((g) => g === "compiled" || g === "InternalError: out of memory")
