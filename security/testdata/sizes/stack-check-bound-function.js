// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: js_check_stack_overflow subtracted the frame's size from the stack
//   pointer, which is below 1 MiB here (the stack is first in linear memory):
//   a bound function called with 131,067 arguments needs a frame of 1 MiB,
//   the subtraction wrapped, the check passed and the frame was written
//   outside the stack.
// patch: 0012-stack-check-cannot-wrap
// native: InternalError: stack overflow
// expect: threw InternalError stack overflow
var f = function () { return arguments.length; };
var a = new Array(65533).fill(0);
var b = f.bind.apply(f, [null].concat(a));
b.apply(null, a.concat([0]))
