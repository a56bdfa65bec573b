// The README's install and example, as printed: its marked blocks run in a
// scratch directory, against the service built from this repository, and the
// example's output must be the README's, byte for byte. A README that drifts
// from what works (a command, a file name, the example's code or its output)
// fails here. ci.sh runs it (npm run test:readme); it is not part of
// `npm test`, because it packs, installs and compiles a project of its own.
//
// The scratch "clone" holds a copy of this package without node_modules,
// dist or a tarball, as a fresh clone has it. The one thing the test changes
// in a block is the README's placeholder for the clone's path.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, delimiter, join, sep } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { buildService, startService, type Build, type Service } from "./service.js";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const readme = readFileSync(join(packageDir, "README.md"), "utf8");

/** The README's placeholder for the path of the reader's clone. */
const CLONE_PLACEHOLDER = "/path/to/sandbox-cloudrun";

/** The fenced block right after `<!-- ci.sh runs this block: NAME -->`, without its fences. */
function block(md: string, name: string): string {
  const marker = `<!-- ci.sh runs this block: ${name} -->\n`;
  const at = md.indexOf(marker);
  assert.ok(at >= 0, `README.md has no block marked "${marker.trim()}"`);
  assert.equal(md.indexOf(marker, at + 1), -1, `README.md marks two blocks "${name}"`);
  const m = /^```[a-z]*\n([^]*?)^```$/m.exec(md.slice(at + marker.length));
  assert.ok(m && m.index === 0, `the marker "${name}" is not followed by a fenced block`);
  return m[1]!;
}

/**
 * The environment of the README's commands: the test's own, without what
 * `npm run` adds (npm_* variables, this package's node_modules/.bin on PATH),
 * so that the scratch project finds only what the README installs. npm takes
 * what its cache holds instead of asking the registry again.
 */
function readerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) || k === "INIT_CWD") continue;
    env[k] = v;
  }
  env.PATH = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((p) => !p.split(sep).includes("node_modules"))
    .join(delimiter);
  return {
    ...env,
    NPM_CONFIG_UPDATE_NOTIFIER: "false",
    NPM_CONFIG_FUND: "false",
    NPM_CONFIG_AUDIT: "false",
    NPM_CONFIG_PREFER_OFFLINE: "true",
    ...extra,
  };
}

/** Runs a block's lines with bash -euo pipefail in cwd; resolves with its stdout, rejects with both streams. */
function sh(name: string, script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-euo", "pipefail", "-c", script], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-8000)));
    const timer = setTimeout(() => child.kill("SIGKILL"), 5 * 60_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`the README's "${name}" block failed (exit ${code ?? signal}) in ${cwd}:\n${script}\n--- stdout\n${out}--- stderr\n${err}`));
    });
  });
}

let build: Build;
let svc: Service;
let scratch: string;

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), "sandbox-cloudrun-readme-"));
  build = await buildService();
  svc = await startService(build.bin);
});

after(async () => {
  await svc?.stop();
  await build?.cleanup();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

test("the README's install and example work as printed", { timeout: 15 * 60_000 }, async () => {
  const pack = block(readme, "pack");
  const project = block(readme, "project");
  const example = block(readme, "example.ts");
  const run = block(readme, "run");
  const output = block(readme, "output");

  // a fresh clone: the package's sources, nothing built or installed
  const clone = join(scratch, "sandbox-cloudrun");
  const built = new Set(["node_modules", "dist", "dist-test"]);
  cpSync(packageDir, join(clone, "clients", "typescript"), {
    recursive: true,
    filter: (src) => !(built.has(basename(src)) || src.endsWith(".tgz")),
  });

  await sh("pack", pack, clone, readerEnv());

  assert.ok(project.includes(CLONE_PLACEHOLDER), `the "project" block no longer names the clone as ${CLONE_PLACEHOLDER}`);
  await sh("project", project.replaceAll(CLONE_PLACEHOLDER, clone), scratch, readerEnv());
  // the project block ends in the project's directory: the README names it
  const dir = /^mkdir (\S+) && cd \1$/m.exec(project)?.[1];
  assert.ok(dir, `the "project" block does not start with "mkdir DIR && cd DIR"`);
  const projectDir = join(scratch, dir);
  const installed = lstatSync(join(projectDir, "node_modules", "@loom-plugins", "sandbox-cloudrun"));
  assert.ok(installed.isDirectory() && !installed.isSymbolicLink(), "the package is not installed as a copy");

  writeFileSync(join(projectDir, "example.ts"), example);
  const printed = await sh("run", run, projectDir, readerEnv({ SANDBOX_URL: svc.url }));
  assert.equal(printed, output, `the example printed what the README does not show (service log:\n${svc.log()})`);
});
