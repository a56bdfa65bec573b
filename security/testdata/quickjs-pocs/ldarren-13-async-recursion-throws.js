// source: https://github.com/ldarren/QuickJS/issues/13 (and issues 11, 12)
// bug: an async function that calls itself before throwing overflowed the
//   native stack (fixed upstream by the stack check this build turns on).
// here: every level's throw is caught into a rejected promise, and each one
//   builds a backtrace as deep as the stack, about half a second of work in
//   all. Before 83a6f1f (a poll every 10,000 ticks, backtraces uncharged)
//   that work never reached the interrupt handler: the run was stuck and
//   ended its process. Now it completes, and would stop at its deadline.
// wall: 20000
// expect: ok "done"
async function fn() {
  fn();
  JSON.parse("not json");
}
fn();
"done";
