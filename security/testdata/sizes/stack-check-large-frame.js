// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: the same wrap in JS_CallInternal: a function with 8,000 parameters,
//   60,000 block-scoped variables and a call of 65,001 arguments needs a frame
//   of more than 1 MiB, which passed the stack check.
// patch: 0012-stack-check-cannot-wrap
// native: InternalError: stack overflow
// memory: 268435456
// wall: 60000
// expect: threw InternalError stack overflow
function g() { return 1; }
var p = [];
for (var i = 0; i < 8000; i++) p.push("a" + i);
var f = new Function(p.join(","), "{let a}".repeat(60000) + "return g(" + "0,".repeat(65000) + "0);");
f()
