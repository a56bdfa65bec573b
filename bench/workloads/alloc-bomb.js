const a = [];
while (true) a.push({ n: a.length, s: "x" + a.length });
