// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: a function's captured variables are numbered in 16-bit fields and were
//   counted in an int: past 65,535 the indexes aliased and an assertion
//   stopped the engine (the frame's var_refs would be indexed past its end).
//   Not 32-bit only.
// patch: 0013-captured-variables-fit-their-fields
// native: Assertion `var_ref_idx < b->var_ref_count' failed
// memory: 268435456
// wall: 60000
// expect: threw InternalError too many captured variables
const params = [], lets = [];
for (let i = 0; i < 536; i++) params.push("p" + i);
for (let j = 0; j < 100; j++) lets.push("l" + j);
const block = "{ let " + lets.join(",") + "; () => [" + lets.join(",") + "] }";
const f = new Function(params.join(","), "(() => [" + params.join(",") + "]);" + block.repeat(650) + "return 1;");
f()
