// sandbox-wasm.mjs: runs one benchmark workload through this service's own
// engine, quickjs/sandbox.wasm, on Node's WebAssembly (V8) instead of wazero,
// a fresh instance per evaluation, and prints one JSON line per timed run,
// the format bench/cmd/report reads. Beside the engine on wazero and
// quickjs-emscripten on Node it splits the gap between the two: the same
// wasm on V8 against wazero is the runtime's share, and against
// quickjs-emscripten the build's.
//
//   node bench/node/sandbox-wasm.mjs -workload NAME -script FILE -input FILE \
//       -mem BYTES -warmup N -runs N -round N [-wasm quickjs/sandbox.wasm]
//
// A run is what the service's instance does, but for the memory image: a new
// instance of the compiled module, _initialize and sb_init (the QuickJS
// runtime, context and console), the script and the input copied in, sb_run
// with no CPU budget, and the result read back through sb_outcome. The host gives
// the guest the imports the service gives it: sandbox.poll (here: stop at a
// 30 s deadline), sandbox.mark (ignored) and four WASI functions.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

function arg(name, def) {
  const argv = process.argv.slice(2);
  for (let i = 0; i + 1 < argv.length; i += 2) {
    if (argv[i] === name) return argv[i + 1];
  }
  if (def === undefined) {
    console.error(`sandbox-wasm.mjs: missing ${name}`);
    process.exit(2);
  }
  return def;
}

const engine = arg("-engine", "engine-on-v8");
const workload = arg("-workload");
const script = readFileSync(arg("-script"));
const input = readFileSync(arg("-input"));
const mem = BigInt(arg("-mem", String(64 << 20)));
const warmup = Number(arg("-warmup", "3"));
const runs = Number(arg("-runs", "10"));
const round = Number(arg("-round", "0"));
const wasmPath = arg("-wasm", new URL("../../quickjs/sandbox.wasm", import.meta.url).pathname);

// Run statuses of the shim (quickjs/c/sandbox.h).
const statusOK = 0, statusThrew = 1, statusLimitMemory = 3;

function fnv1a(bytes) {
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, "0");
}

const module = new WebAssembly.Module(readFileSync(wasmPath));

function run() {
  let memory;
  const deadline = Date.now() + 30_000;
  const view = () => new DataView(memory.buffer);
  const imports = {
    // mark notes when a phase of the run begins, for the service's usage
    // figures; the benchmark times whole runs, so it ignores them
    sandbox: { poll: () => (Date.now() > deadline ? 1 : 0), mark: () => {} },
    wasi_snapshot_preview1: {
      clock_time_get: (id, _precision, out) => {
        const ns = id === 0 ? BigInt(Date.now()) * 1000000n : BigInt(Math.round(performance.now() * 1e6));
        view().setBigUint64(out, ns, true);
        return 0;
      },
      fd_write: (fd, iovs, n, out) => {
        let total = 0;
        for (let i = 0; i < n; i++) total += view().getUint32(iovs + i * 8 + 4, true);
        view().setUint32(out, total, true);
        return 0;
      },
      fd_close: () => 8,
      fd_seek: () => 8,
    },
  };
  const { exports: x } = new WebAssembly.Instance(module, imports);
  memory = x.memory;
  x._initialize();
  if (x.sb_init() !== 0) throw new Error("sb_init failed");
  const put = (bytes) => {
    const p = x.sb_alloc(bytes.length + 1);
    const u8 = new Uint8Array(memory.buffer, p, bytes.length + 1);
    u8.set(bytes);
    u8[bytes.length] = 0;
    return p;
  };
  const sp = put(script), ip = put(input);
  const status = x.sb_run(sp, script.length, ip, input.length, mem, 0n, 1n);
  const text = (ptr, len) => new Uint8Array(memory.buffer, ptr, len).slice();
  // the outcome record (quickjs/c/run.c): result, name, logs, polls, oom
  const o = view();
  const rec = x.sb_outcome();
  const resultPtr = o.getUint32(rec, true), resultLen = o.getUint32(rec + 4, true);
  const namePtr = o.getUint32(rec + 8, true), nameLen = o.getInt32(rec + 12, true);
  switch (status) {
    case statusOK: {
      const out = text(resultPtr, resultLen);
      return ["ok", out];
    }
    case statusLimitMemory:
      return ["limit:memory", new TextEncoder().encode("limit:memory")];
    case statusThrew: {
      const msg = new TextDecoder().decode(text(resultPtr, resultLen));
      const name = nameLen < 0 ? "" : new TextDecoder().decode(text(namePtr, nameLen));
      return ["threw", new TextEncoder().encode(`threw:${name}: ${msg}`)];
    }
    default:
      return [`status:${status}`, new TextEncoder().encode(`status:${status}`)];
  }
}

for (let i = 0; i < warmup; i++) run();
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  const [outcome, bytes] = run();
  const ms = performance.now() - t0;
  console.log(JSON.stringify({ engine, workload, round, run: i, ms: Number(ms.toFixed(6)), outcome, bytes: bytes.length, digest: fnv1a(bytes) }));
}
