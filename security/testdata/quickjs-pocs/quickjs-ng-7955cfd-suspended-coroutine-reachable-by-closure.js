// source: quickjs-ng commit 7955cfd (its tests suspended-coroutine-closure-gc.js,
//   suspended-generator-closure-gc.js, suspended-coroutine-mapped-arguments-gc.js)
// bug (quickjs-ng): a suspended coroutine (an async function or a generator)
//   reachable only through a closure that captured one of its locals, or
//   through its escaped mapped arguments, was collected while still live:
//   the closure's open reference into the coroutine's frame was invisible to
//   the cycle collector, and resuming the coroutine or calling the closure
//   touched freed memory.
// here: the same three shapes, then two collections forced by allocation
//   (a WeakRef to a fresh cycle is cleared only when the collector has run),
//   then the captured values read and the coroutines resumed. This QuickJS
//   makes an open reference into a coroutine's frame hold the coroutine
//   (get_var_ref) and marks it, so the pinned engine never had the bug; on
//   the checked engine a freed frame would be poison, and a write into it a
//   fault.
// expect: ok ["function",true,"resumed",123]
function gc() {
  let cycle = {};
  cycle.self = cycle;
  const probe = new WeakRef(cycle);
  cycle = null;
  const keep = [];
  while (probe.deref() !== undefined) keep.push({});
}
(function () {
  async function step() {
    const d = Promise.withResolvers();
    globalThis.leakedAsync = () => d;
    await d.promise;
    return "resumed";
  }
  step();
})();
(function () {
  let g;
  function* gen() {
    const o = { live: true };
    o.g = g;
    globalThis.leakedGen = () => o;
    yield;
    return "resumed";
  }
  g = gen();
  g.next();
  g = null;
})();
(function () {
  const AsyncFunction = (async function () {}).constructor;
  const step = AsyncFunction("a", "globalThis.leakedArgs = () => arguments; const d = Promise.withResolvers(); await d.promise;");
  step(123);
})();
gc();
gc();
const d = leakedAsync();
const o = leakedGen();
const out = [typeof d.resolve, o.live, o.g.next().value, leakedArgs()[0]];
d.resolve();
out
