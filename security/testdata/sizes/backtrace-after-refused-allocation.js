// source: the memory pressure sweep (security/hostile_test.go,
//   TestMemoryPressureSweep) on the checked engine
// bug: an allocation refused while an error's backtrace was built threw the
//   out-of-memory error, which freed the error being described; "stack" was
//   then defined on the freed object (JS_DefineProperty <- build_backtrace <-
//   JS_CallInternal): the checked engine read outside linear memory. Each
//   attempt throws under a heap filled to a different point.
// patch: 0014-backtrace-holds-its-error
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
    try { (() => { eval("class A { #p = 1; static s = 2; get g() { return this.#p } m() { return super.toString() } }; new A().g") })(); ok++ } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
