// Reshape an MCP tool result listing repository issues into a canonical list:
// open issues first, newest first, with only the fields a planner needs.
const payload = input.content.find(c => c.type === "text");
const issues = JSON.parse(payload.text);
issues
  .map(i => ({
    id: i.number,
    title: i.title.trim(),
    state: i.state,
    labels: i.labels.map(l => l.name).sort(),
    author: i.user.login,
    updated: i.updated_at,
  }))
  .sort((a, b) => (a.state === b.state ? b.updated.localeCompare(a.updated) : a.state === "open" ? -1 : 1))
