// Object allocation: small objects and arrays made and dropped in a loop.
let t = 0;
for (let i = 0; i < 2e5; i++) {
  const o = { id: i, name: "n" + i, tags: [i, i + 1], nested: { v: i * 2 } };
  t += o.nested.v + o.tags.length;
}
t
