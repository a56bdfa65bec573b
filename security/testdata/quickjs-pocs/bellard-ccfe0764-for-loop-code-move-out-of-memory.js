// source: bellard/quickjs commit ccfe0764 (after the pinned d73189dd)
// bug: the parser moves a for loop's increment (and a for-in/of loop's
//   next code) after the body with dbuf_claim, whose failure it did not
//   check: it then relocated the loop's labels past the bytecode written.
// here: fill the memory to the brim, then free it 64 bytes at a time and
//   compile loops of each kind (with continue, so that the moved code has
//   labels) after each step. In the pinned engine the failure is sticky
//   (0011-parser-stops-at-first-failed-allocation) and no function is made
//   from the parse (0015, 0016), so the labels past the bytecode were never
//   used; 0016 now stops the parse where the claim fails, as upstream does.
// memory: 16777216
// expect: limit memory or ok (the heap layout decides which)
let keep = [];
function fill(size) { try { for (;;) keep.push(new Uint8Array(size)) } catch (e) {} }
let ok = 0;
try {
  fill(1 << 20); fill(1 << 16); fill(1 << 12); fill(64);
  while (keep.length && ok < 3) {
    keep.pop();
    try {
      (() => { eval("let n = 0; for (let i = 0; i < 3; i++) { if (i) continue; n++ } for (const k in { a: 1, b: 2 }) { if (k) continue } for (const v of [1, 2]) { if (v) continue } n") })();
      ok++;
    } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
