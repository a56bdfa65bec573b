// builtins.mjs: checks README's claim that the builtins a script can rely on
// here are a superset of those of loom's reference backend,
// quickjs-emscripten (the version bench/package.json pins; the
// release-sync variant getQuickJS() loads), in a fresh runtime and context
// as bench/node/runner.mjs makes them. Two checks, each against a file the
// Go tests check against the service itself:
//
//   - every probe of handler/testdata/builtins.json (a script whose value
//     is a boolean) gives its `reference` value there; a probe that throws
//     there is false. handler/builtins_test.go sends the same probes through
//     POST /v1/sandbox/evaluate and expects `here`.
//   - security/testdata/surface.js, run there, reaches nothing that the
//     service's reachable surface (security/testdata/surface.allow, which
//     TestReachableSurfaceIsAllowListed checks) lacks, except the globals
//     builtins.json lists in `referenceOnly`, each with its reason.
//
// It prints the probes with both columns and exits 1 on any difference.
//
//   (cd bench && npm ci) && node bench/node/builtins.mjs
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { getQuickJS } from "quickjs-emscripten";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const spec = JSON.parse(readFileSync(join(root, "handler/testdata/builtins.json"), "utf8"));
const QuickJS = await getQuickJS();
const problems = [];

// run evaluates src as global code in a fresh runtime and context and
// returns [value, note]: the completion value (a promise's settled value,
// once no job is left), dumped; a throw or a rejection is undefined, with
// the error as the note.
function run(src) {
  const rt = QuickJS.newRuntime();
  const vm = rt.newContext();
  rt.setMemoryLimit(64 << 20);
  const deadline = Date.now() + 10_000;
  rt.setInterruptHandler(() => Date.now() > deadline);
  const error = (h) => {
    const e = vm.dump(h);
    h.dispose();
    return [undefined, `threw ${e && e.name ? e.name + ": " + e.message : JSON.stringify(e)}`];
  };
  try {
    const res = vm.evalCode(src, "<probe>", { type: "global" });
    if (res.error) return error(res.error);
    let state = vm.getPromiseState(res.value);
    if (state.type === "fulfilled" && state.notAPromise) {
      const v = vm.dump(res.value);
      res.value.dispose();
      return [v, ""];
    }
    rt.executePendingJobs();
    state = vm.getPromiseState(res.value);
    res.value.dispose();
    if (state.type === "fulfilled") {
      const v = vm.dump(state.value);
      state.value.dispose();
      return [v, ""];
    }
    if (state.type === "rejected") return error(state.error);
    return [undefined, "still pending once no job was left"];
  } finally {
    vm.dispose();
    rt.dispose();
  }
}

// The probes.
const rows = [];
for (const p of spec.probes) {
  const [v, note] = run(p.probe);
  const got = v === true;
  if (v !== true && v !== false && note === "") {
    problems.push(`probe ${JSON.stringify(p.probe)} is ${JSON.stringify(v)} there, not a boolean`);
  }
  if (got !== p.reference) {
    problems.push(`probe ${JSON.stringify(p.probe)} (${p.feature}) is ${got}${note ? " (" + note + ")" : ""} there; builtins.json says ${p.reference}`);
  }
  rows.push([p.feature, p.probe, p.here, got, note]);
}

// The reachable surface.
const [surface, note] = run(readFileSync(join(root, "security/testdata/surface.js"), "utf8"));
if (!surface || !Array.isArray(surface.lines) || surface.lines.length < 1500) {
  problems.push(`security/testdata/surface.js did not give a surface there: ${note || JSON.stringify(surface).slice(0, 200)}`);
} else {
  const allowed = new Set(
    readFileSync(join(root, "security/testdata/surface.allow"), "utf8")
      .split("\n")
      .filter((l) => l !== "" && !l.startsWith("#")),
  );
  const only = spec.referenceOnly.map((r) => "globalThis." + r.global);
  const used = new Set();
  for (const line of surface.lines) {
    if (allowed.has(line)) continue;
    const owner = only.find((o) => line.startsWith(o + ".") || line.startsWith(o + " "));
    if (owner) {
      used.add(owner);
      continue;
    }
    problems.push(`the reference reaches ${line}, which the service does not (security/testdata/surface.allow)`);
  }
  for (const o of only) {
    if (!used.has(o)) problems.push(`builtins.json's referenceOnly names ${o}, which the reference no longer has`);
  }
  console.log(
    `surface: the reference reaches ${surface.lines.length} properties of ${surface.objects} objects; ` +
      `all are on the service's surface but those of ${only.join(", ") || "nothing"}`,
  );
}

const version = JSON.parse(readFileSync(join(root, "bench/node_modules/quickjs-emscripten/package.json"), "utf8")).version;
console.log(`probe | here | quickjs-emscripten ${version}`);
for (const [feature, probe, here, ref, why] of rows) {
  console.log(`${feature}: ${probe} | ${here} | ${ref}${why ? " (" + why + ")" : ""}`);
}
if (problems.length) {
  for (const p of problems) console.error(`builtins.mjs: ${p}`);
  process.exit(1);
}
console.log(`builtins.mjs: ${rows.length} probes and the surface as builtins.json says`);
