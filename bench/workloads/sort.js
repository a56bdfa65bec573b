// A comparator sort, then counting into a Map.
const a = [];
for (let i = 0; i < 1e5; i++) a.push((i * 7919) % 100003);
a.sort((x, y) => x - y);
const m = new Map();
for (const v of a) m.set(v % 1000, (m.get(v % 1000) || 0) + 1);
[a[0], a[a.length - 1], m.size]
