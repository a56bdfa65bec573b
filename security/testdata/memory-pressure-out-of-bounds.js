// source: found by this battery (security/bugs_test.go) in QuickJS
//   2025-04-26 as built by quickjs/build.sh; the production engine of
//   QuickJS 2026-05-21 (d73189dd) no longer lines the failures up, and the
//   checked engine met the same bug with another script of the memory
//   pressure sweep (security/hostile_test.go, TestMemoryPressureSweep).
// bug: running out of memory while an error is given its backtrace freed
//   the error: build_backtrace worked on the current exception without a
//   reference of its own, and the out-of-memory error replaced (and freed)
//   it. JS_DefineProperty, called from the interpreter's exception path,
//   then wrote to the freed object; where the block no longer held an
//   object, the write went outside the guest's memory, and wasm turned it
//   into a trap ("out of bounds memory access"). Debug-build stack:
//   JS_DefineProperty <- build_backtrace <- JS_CallInternal <- ... <- sb_run.
//   Fixed by quickjs/patches/0014-backtrace-holds-its-error.patch.
// here: fill the memory, then free it 64 bytes at a time and run a closure
//   that sorts a small array after each step; at 16 MiB the old engine
//   trapped deterministically.
// memory: 16777216
// expect: limit memory or ok (the heap layout decides which)
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
