// A bare counting loop: the interpreter's dispatch and nothing else.
let n = 0;
for (let i = 0; i < 3e6; i++) n += i & 7;
n
