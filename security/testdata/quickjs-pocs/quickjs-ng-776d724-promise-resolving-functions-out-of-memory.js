// source: quickjs-ng commit 776d724
// bug (quickjs-ng): when creating a promise's resolving functions ran out of
//   memory, the half-made pair was freed and then freed again by the caller
//   (js_create_resolving_functions, the async function's and the async
//   generator's resolve functions): a use after free under memory pressure.
// here: fill the memory to the brim, then free it 64 bytes at a time and
//   make promises, await in an async function and an async generator and
//   chain a then after each step, so that the resolving functions are made
//   with the memory running out at every point in turn. This QuickJS's
//   callers return at once when the pair cannot be made, and the pair's
//   maker frees only what it made, so the pinned engine never had the bug;
//   the checked engine's quarantine would see a double free. The
//   out-of-memory sweep (quickjs: TestOutOfMemorySweep) refuses each of
//   these allocations on purpose.
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
      new Promise((resolve) => resolve(1));
      (async () => { await null })();
      (async function* () { await null; yield 1 })().next();
      Promise.resolve(1).then((x) => x);
      ok++;
    } catch (e) {}
  }
} catch (e) {}
keep = null;
ok
