// runner.mjs: runs one benchmark workload through quickjs-emscripten on Node
// (loom's reference engine; the release-sync variant that getQuickJS()
// loads), a fresh runtime and context per evaluation, and prints one JSON line
// per timed run, the format bench/cmd/report reads.
//
//   node bench/node/runner.mjs -workload NAME -script FILE -input FILE \
//       -mem BYTES -warmup N -runs N -round N
//
// A run is: newRuntime, newContext, setMemoryLimit (after the context exists,
// as the engine's shim and the native runner do), the global `input` set from
// JSON.parse of the input text (newString + a call of the guest's
// JSON.parse), evalCode of the script as global code, JSON.stringify of the
// completion value read back with getString, and disposing of everything. It
// is timed with performance.now() from before newRuntime to after the
// runtime's dispose. An interrupt handler checks a 30 s deadline so that a
// runaway cannot hang the benchmark.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { getQuickJS } from "quickjs-emscripten";

function arg(name, def) {
  const argv = process.argv.slice(2);
  for (let i = 0; i + 1 < argv.length; i += 2) {
    if (argv[i] === name) return argv[i + 1];
  }
  if (def === undefined) {
    console.error(`runner.mjs: missing ${name}`);
    process.exit(2);
  }
  return def;
}

const engine = arg("-engine", "quickjs-emscripten");
const workload = arg("-workload");
const script = readFileSync(arg("-script"), "utf8");
const input = readFileSync(arg("-input"), "utf8");
const mem = Number(arg("-mem", String(64 << 20)));
const warmup = Number(arg("-warmup", "3"));
const runs = Number(arg("-runs", "10"));
const round = Number(arg("-round", "0"));

// FNV-1a, 64 bits, of the UTF-8 bytes: a digest of the outcome, compared
// across engines.
function fnv1a(text) {
  let h = 0xcbf29ce484222325n;
  for (const b of Buffer.from(text, "utf8")) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, "0");
}

// describe classifies a thrown value: QuickJS's own InternalError "out of
// memory" is the memory limit; anything else threw.
function describe(rt, vm, errHandle) {
  rt.setMemoryLimit(-1); // room to look at the exception
  const name = vm.getProp(errHandle, "name");
  const message = vm.getProp(errHandle, "message");
  const n = vm.typeof(name) === "string" ? vm.getString(name) : "";
  const m = vm.typeof(message) === "string" ? vm.getString(message) : "";
  name.dispose();
  message.dispose();
  errHandle.dispose();
  if (n === "InternalError" && m === "out of memory") {
    return ["limit:memory", "limit:memory"];
  }
  console.error(`runner.mjs: the script threw ${n}: ${m}`);
  return ["threw", `threw:${n}: ${m}`];
}

function run(QuickJS) {
  const rt = QuickJS.newRuntime();
  const vm = rt.newContext();
  rt.setMemoryLimit(mem);
  const deadline = Date.now() + 30_000;
  rt.setInterruptHandler(() => Date.now() > deadline);
  let kind, text;
  try {
    const json = vm.getProp(vm.global, "JSON");
    const parse = vm.getProp(json, "parse");
    const stringify = vm.getProp(json, "stringify");
    try {
      const str = vm.newString(input);
      const parsed = vm.callFunction(parse, vm.undefined, str);
      str.dispose();
      if (parsed.error) {
        [kind, text] = describe(rt, vm, parsed.error);
        kind = "error";
        return [kind, text];
      }
      vm.setProp(vm.global, "input", parsed.value);
      parsed.value.dispose();

      const res = vm.evalCode(script, "<script>", { type: "global" });
      if (res.error) return describe(rt, vm, res.error);
      const out = vm.callFunction(stringify, vm.undefined, res.value);
      res.value.dispose();
      if (out.error) return describe(rt, vm, out.error);
      // undefined, a function or a symbol: null, as the engine says
      text = vm.typeof(out.value) === "string" ? vm.getString(out.value) : "null";
      out.value.dispose();
      return ["ok", text];
    } finally {
      stringify.dispose();
      parse.dispose();
      json.dispose();
    }
  } finally {
    vm.dispose();
    rt.dispose();
  }
}

const QuickJS = await getQuickJS();
const lines = [];
for (let i = 0; i < warmup + runs; i++) {
  const t0 = performance.now();
  const [kind, text] = run(QuickJS);
  const ms = performance.now() - t0;
  if (i < warmup) continue;
  lines.push(
    JSON.stringify({
      engine,
      workload,
      round,
      run: i - warmup,
      ms: Number(ms.toFixed(6)),
      outcome: kind,
      bytes: Buffer.byteLength(text, "utf8"),
      digest: fnv1a(text),
    }),
  );
}
process.stdout.write(lines.join("\n") + "\n");
