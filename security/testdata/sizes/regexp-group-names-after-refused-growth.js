// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: a refused growth of the regexp's group-name table left it short, and
//   the flag that says names follow was set anyway: exec read "names" from
//   the heap past the bytecode (match.groups with garbage keys). Not 32-bit
//   only. Each attempt fills the heap, then frees k x 4 KiB, so that for
//   some k all but the table's last growth fits; every attempt must give the
//   254 names or an out-of-memory error, never other names.
// patch: 0009-regexp-compiler-stops-at-first-failed-emit
// native: garbage group names
// expect: ok true
const Ng = 254, name = (i) => "g" + String(i).padStart(119, "0");
let src = "";
for (let i = 0; i < Ng; i++) src += "(?<" + name(i) + ">a)";
const subject = "a".repeat(Ng), seen = [];
for (let k = 1; k <= 16; k++) {
  let keep = new Array(20000).fill(null), n = 0;
  try { while (n < 20000) { keep[n] = new ArrayBuffer(1 << 16); n++; } } catch (e) {}
  try { while (n < 20000) { keep[n] = new ArrayBuffer(1 << 12); n++; } } catch (e) {}
  const n12 = n;
  try { while (n < 20000) { keep[n] = new ArrayBuffer(1 << 8); n++; } } catch (e) {}
  for (let i = 0; i < k; i++) keep[n12 - 1 - i] = null;
  let got;
  try {
    const r = new RegExp(src, "v");
    keep = null;
    const keys = Object.keys(r.exec(subject).groups);
    got = keys.length === Ng && keys.every((key, i) => key === name(i)) ? "names" : "other names";
  } catch (e) {
    keep = null;
    got = /out of memory/.test(String(e)) ? "out of memory" : String(e);
  }
  seen.push(got);
}
seen.every((g) => g === "names" || g === "out of memory")
