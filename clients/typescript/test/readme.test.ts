// ADR 0144 D6: a remote backend's package carries the remote-backend
// checklist in its README, and says plainly what memory: false / cpu: false
// mean. This keeps the section there, whole, and keeps the tests it names
// real: each must exist in the service's Go sources. And the README's batch
// example compiles.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const pkg = fileURLToPath(new URL("..", import.meta.url));
const repo = join(pkg, "..", "..");
const readme = readFileSync(join(pkg, "README.md"), "utf8");

function section(md: string, heading: string): string {
  const start = md.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `README has no "## ${heading}" section`);
  const end = md.indexOf("\n## ", start + 1);
  return md.slice(start, end < 0 ? undefined : end);
}

function goSources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) goSources(p, out);
    else if (name.endsWith(".go")) out.push(readFileSync(p, "utf8"));
  }
  return out;
}

test("the README carries the remote-backend checklist, every item", () => {
  const s = section(readme, "The remote-backend checklist (ADR 0144 D6)");
  for (const item of [
    "no service account or credentials",
    "egress denied at the network layer",
    "one request per instance",
    "the request timeout as the hard kill",
    "memory and CPU caps",
    "no shared writable state",
  ]) {
    assert.match(s, new RegExp(`^\\| ${item} \\|`, "m"), `checklist item "${item}" missing`);
  }
  assert.match(s, /`memory: false` or `cpu: false`[^]*in-process backend can exhaust the host/);
});

test("every test the checklist names exists in the service's sources", () => {
  const s = section(readme, "The remote-backend checklist (ADR 0144 D6)");
  const named = [...s.matchAll(/`(Test[A-Za-z0-9_]+)`/g)].map((m) => m[1]);
  assert.ok(named.length >= 5, `only ${named.length} tests named`);
  const sources = goSources(repo).join("\n");
  for (const name of named) {
    assert.ok(sources.includes(`func ${name}(`), `${name} is named in the README but defined nowhere`);
  }
});

// The README's batch example, as printed, type-checked against the package
// as built (dist/), as a reader's project compiles it (`tsc --strict
// --module nodenext`): an example that no longer fits the package's types
// fails here.
test("the README's batch example compiles against the package", () => {
  const marker = "<!-- npm test compiles this block: batch.ts -->\n";
  const at = readme.indexOf(marker);
  assert.ok(at >= 0, `README.md has no block marked "${marker.trim()}"`);
  const m = /^```ts\n([^]*?)^```$/m.exec(readme.slice(at + marker.length));
  assert.ok(m && m.index === 0, "the marker is not followed by a ts block");
  // inside the package, whose name the file imports (a self-reference)
  const dir = mkdtempSync(join(pkg, "dist-test", "readme-"));
  try {
    const file = join(dir, "batch.ts");
    writeFileSync(file, m[1]!);
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    const r = spawnSync(process.execPath, [tsc, "--noEmit", "--strict", "--module", "nodenext", "--types", "node", file], { encoding: "utf8" });
    assert.equal(r.status, 0, `tsc failed on the README's batch example:\n${r.stdout}${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
