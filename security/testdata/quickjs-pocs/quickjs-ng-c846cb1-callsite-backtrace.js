// source: quickjs-ng commit c846cb1
// bug (quickjs-ng): with Error.prepareStackTrace set, a backtrace is an
//   array of CallSite objects; when adding one to the array failed (out of
//   memory), the CallSite was freed twice.
// here: this QuickJS has no CallSite objects and never consults
//   Error.prepareStackTrace: the stack is a string whatever it is set to, so
//   the code the bug was in does not exist here. Backtraces built with the
//   memory running out are 0014's probe (security/testdata/sizes).
// expect: ok ["string","string",false]
Error.prepareStackTrace = (e, frames) => frames;
const f = () => new Error("x");
const s = f().stack;
let called = false;
Error.prepareStackTrace = () => { called = true; return [] };
[typeof s, typeof new Error("y").stack, called]
