// source: the out-of-memory sweep (quickjs: TestOutOfMemorySweep) on
//   QuickJS's own test programs (test_language.js, test_closure.js)
// bug: the parser and the compiler's passes went on after a refused
//   allocation (a closure variable, a label, an atom, a constant, the
//   bytecode): resolve_variables read at position -1 and indexed the
//   arguments with -1, resolve_labels patched relocations past its output
//   and freed atoms twice on its failure path, a class patched its
//   constructor's index through a null buffer, and functions were created
//   from such a compilation and run.
// here: fill the memory to the brim, then free it 64 bytes at a time and
//   compile, after each step, a class with a constructor, private fields and
//   a brand, closures over a function expression's name, arguments and a
//   direct eval's variables, and labelled loops.
// patch: 0016-compilation-that-lost-an-allocation-creates-nothing
// native: not reached by this script (a 64-bit heap lines up otherwise; the
//   paths are the same on every host, and native QuickJS crashed on them
//   when the sweep refused the same allocations)
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
      (() => { eval("class A { #p = 1; constructor(x) { this.x = x } #m() { return this.#p } get m() { return this.#m() } } new A(1).m") })();
      (() => { eval("(function named(a) { var v = a; eval('v = v + 1'); return [typeof named, arguments.length, v, (() => v)()] })(1)") })();
      (() => { eval("outer: for (const x of [1, 2]) { for (const y in { a: 1 }) { if (y) continue outer } }") })();
      ok++;
    } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
