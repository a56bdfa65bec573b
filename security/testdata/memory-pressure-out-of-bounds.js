// source: found by this battery (security/bugs_test.go) in QuickJS
//   2025-04-26 as built by quickjs/build.sh; it does not reproduce with
//   QuickJS 2026-05-21 (d73189dd), whose allocation-failure paths unwind.
// bug: running out of memory at the wrong moment while a function runs
//   left an invalid object behind: JS_DefineProperty, called from the
//   interpreter, read or wrote outside the guest's memory. wasm turned it
//   into a trap ("out of bounds memory access"); a native build would use a
//   wild pointer. Debug-build stack: JS_DefineProperty <- (static) <-
//   JS_CallInternal <- JS_CallInternal <- ... <- JS_Eval <- sb_run.
// here: fill the memory, then free it 64 bytes at a time and run a closure
//   that sorts a small array after each step; at 16 MiB the old engine
//   trapped deterministically, and the run was reported as the memory limit.
// memory: 16777216
// expect: limit memory (or ok, once QuickJS unwinds the failed allocation)
let keep = [];
function fill(size) { try { for (;;) keep.push(new Uint8Array(size)) } catch (e) {} }
let ok = 0;
try {
  fill(1 << 20); fill(1 << 16); fill(1 << 12); fill(64);
  while (keep.length && ok < 3) {
    keep.pop();
    try { (() => { [5, 3, 1, 4, 2].sort((a, b) => a - b).join() })(); ok++ } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
