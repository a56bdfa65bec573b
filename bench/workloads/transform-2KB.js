// A model-written transformer of an MCP tool result: helpers, then the reshape.
function field0(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score1(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels2(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when3(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field4(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score5(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels6(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when7(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field8(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score9(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels10(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
const items = input.content[0].items;
const open = items.filter(i => i.state === "open");
const byAuthor = {};
for (const i of open) {
  const a = byAuthor[i.author.login] || (byAuthor[i.author.login] = { count: 0, score: 0, labels: {} });
  a.count++;
  a.score += score1(i);
  for (const l of labels2(i)) a.labels[l] = (a.labels[l] || 0) + 1;
}
({
  total: items.length,
  open: open.length,
  titles: open.slice(0, 20).map(i => ({ id: i.id, title: field0(i), updated: when3(i) })),
  authors: Object.keys(byAuthor).sort().map(k => ({ login: k, ...byAuthor[k], score: Math.round(byAuthor[k].score) })),
})
