let s = "";
for (let i = 0; i < 20000; i++) s += String.fromCharCode(97 + (i % 26)) + i;
s.length
