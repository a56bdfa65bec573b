// source: the memory pressure sweep (security/hostile_test.go,
//   TestMemoryPressureSweep) on the checked engine
// bug: a bytecode write refused while the parser emitted OP_leave_scope left
//   the opcode without its scope index, the parse went on, and
//   resolve_variables read the index past the buffer and indexed the scopes
//   with it: the checked engine read outside linear memory. Each attempt
//   compiles under a heap filled to a different point.
// patch: 0015-function-created-from-whole-bytecode
// native: not reached by this script (a 64-bit heap lines up otherwise; the
//   path is the same on every host)
// memory: 16777216
// expect: limit memory or ok (the heap layout decides which)
let keep = [];
function fill(size) { try { for (;;) keep.push(new Uint8Array(size)) } catch (e) {} }
let ok = 0;
try {
  fill(1 << 20); fill(1 << 16); fill(1 << 12); fill(64);
  while (keep.length && ok < 3) {
    keep.pop();
    try { (() => { eval("label: for (const x of [1, 2]) { switch (x) { case 1: continue label; default: break label } }") })(); ok++ } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
