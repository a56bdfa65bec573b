// source: the stack-overflow family above (bellard issues 7 and 8 were
//   recursion in the parser and compiler); JSON.parse recurses per level.
// bug class: native recursion without a bound.
// expect: threw SyntaxError stack overflow
JSON.parse("[".repeat(200000) + "]".repeat(200000));
