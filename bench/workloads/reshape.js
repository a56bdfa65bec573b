// Parse, filter, map, aggregate: what a model-written reshaping script does
// with an MCP tool result.
const items = input.content[0].items;
const open = items.filter(i => i.state === "open");
const byAuthor = {};
for (const i of open) {
  const a = byAuthor[i.author.login] || (byAuthor[i.author.login] = { count: 0, score: 0, labels: {} });
  a.count++;
  a.score += i.score;
  for (const l of i.labels) a.labels[l] = (a.labels[l] || 0) + 1;
}
({
  total: items.length,
  open: open.length,
  titles: open.slice(0, 20).map(i => ({ id: i.id, title: i.title.toUpperCase() })),
  authors: Object.keys(byAuthor).sort().map(k => ({ login: k, ...byAuthor[k], score: Math.round(byAuthor[k].score) })),
})
