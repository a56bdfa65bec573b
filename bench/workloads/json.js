// JSON round trips of data the script builds: stringify, parse, filter.
const rows = [];
for (let i = 0; i < 20000; i++) rows.push({ id: i, name: "user" + i, active: i % 3 === 0, score: i * 1.5, tags: ["a", "b"] });
const text = JSON.stringify(rows);
const back = JSON.parse(text);
JSON.stringify(back.filter((r) => r.active)).length
