// source: https://github.com/ldarren/QuickJS/issues/13 (and issues 11, 12)
// bug: an async function that calls itself before throwing overflowed the
//   native stack (fixed upstream by the stack check this build turns on).
// here: every level's throw is caught into a rejected promise, and each one
//   builds a backtrace as deep as the stack: seconds of native work between
//   two polls of the interrupt handler, so the run is stuck and its process
//   ends (see TestBugInterruptStarvedByNativeWork).
// expect: stuck
async function fn() {
  fn();
  JSON.parse("not json");
}
fn();
"done";
