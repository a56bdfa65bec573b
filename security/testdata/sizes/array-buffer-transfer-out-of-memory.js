// source: bellard/quickjs commit f8381776 (after the pinned d73189dd); the
//   out-of-memory sweep's transfer test (quickjs: TestTransferKeepsItsBufferWhenRefused)
// bug: ArrayBuffer.prototype.transfer detached the old buffer before it
//   made the new one; when the new buffer's object could not be allocated,
//   the call threw with the old buffer detached and its bytes owned by
//   nothing: the script's data was lost, and its bytes leaked.
// here: fill the memory to the brim, then free it 64 bytes at a time and
//   transfer a buffer to a shorter, a longer and the same length after each
//   step, so that the transfer runs out of memory at every point in turn:
//   never a trap or a damaged block. Whether the heap lines up so that the
//   new buffer's object is what fails depends on the engine; the checked
//   engine's test refuses each allocation of a transfer on purpose and
//   shows the old buffer whole after every refusal.
// patch: 0018-array-buffer-transfer-keeps-its-buffer
// native: a 64-bit host has the same bug, fixed upstream in f8381776
// memory: 16777216
// expect: limit memory or ok (the heap layout decides which)
let keep = [];
function fill(size) { try { for (;;) keep.push(new Uint8Array(size)) } catch (e) {} }
let ok = 0, lost = 0;
try {
  fill(1 << 20); fill(1 << 16); fill(1 << 12); fill(64);
  while (keep.length && ok < 3) {
    keep.pop();
    for (const length of [32, 128, 64]) {
      const ab = new ArrayBuffer(64);
      new Uint8Array(ab).fill(7);
      try { ab.transfer(length); ok++ } catch (e) { if (ab.detached) lost++ }
    }
  }
} catch (e) {}
keep = null;
[ok, lost]
