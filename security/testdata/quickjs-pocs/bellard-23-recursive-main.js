// source: https://github.com/bellard/quickjs/issues/23
// bug report: unbounded recursion through a function that calls native
//   builtins on every level; upstream's answer: a stack overflow is the
//   expected outcome.
// expect: threw InternalError stack overflow
function main() {
  for (let i = 0; i < 10; i++) {
    Math.asinh(Int32Array);
    escape("x]y");
    main();
  }
}
main();
