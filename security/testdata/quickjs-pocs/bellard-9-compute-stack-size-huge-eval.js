// source: https://github.com/bellard/quickjs/issues/9 and issue 8 (CVE-2020-22876)
// bug: compiling a very long generated expression recursed once per operand in
//   compute_stack_size and overflowed the native stack.
// note: the parser does not poll the interrupt handler; this takes about a
//   second of native work, so it gets a generous wall clock.
// wall: 15000
// expect: ok 13370
const separator = [1337, NaN, 1337];
const source = new Int32Array(212559).join(separator);
eval(source);
