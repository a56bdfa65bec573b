// source: quickjs-ng commit a653771 (its test bug1468.js)
// bug (quickjs-ng): push onto a fast array whose length was set to 2^31-1
//   sized the new storage with a signed max of the old size and the new
//   length, which read 2^31 as negative: the storage stayed small and the
//   element was written far past it.
// here: this QuickJS's push takes its fast path only when the length equals
//   the element count and the new length stays below 2^31, and its storage
//   growth is checked for wrapping (patch 0007-fast-array-storage-cannot-wrap):
//   the element is stored through the generic path, as a 64-bit host does.
// native: [2147483648,2147483648,4,null,true]
// expect: ok [2147483648,2147483648,4,null,true]
const arr = [1, 2, 3];
arr.length = 0x7FFFFFFF;
let r;
try { r = arr.push(4) } catch (e) { r = e.name + ": " + e.message }
[r, arr.length, arr[0x7FFFFFFF], arr[0x7FFFFFFE], 0x7FFFFFFF in arr]
