// Builds the real Go service from the repository root and runs it on a free
// port, as the tests' set-up.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** The repository root: clients/typescript/../.. */
export const repoRoot = resolve(packageDir, "..", "..");

/** Variables that configure the service: none is inherited from the test's environment. */
const SERVICE_VARIABLES = [
  "PORT", "STORE_URL", "MAX_SCRIPT_BYTES", "SCRIPT_CACHE_BYTES", "SCRIPT_CONFIRM_AFTER", "DEFAULT_WALL_CLOCK", "MAX_WALL_CLOCK",
  "DEFAULT_MEMORY_BYTES", "MAX_MEMORY_BYTES", "MAX_INPUT_BYTES", "MAX_OUTPUT_BYTES", "MAX_REQUEST_BYTES",
  "MAX_CONCURRENT_EVALUATIONS", "MAX_BATCH_ITEMS", "REQUEST_TIMEOUT", "HARD_KILL_GRACE", "PROCESS_KILL", "CPU_BUDGET", "POOL_SIZE",
  "COMPILATION_CACHE_DIR", "AUTH_AUDIENCE", "AUTH_ALLOWED_CALLERS", "OTEL_EXPORTER", "LOG_LEVEL",
  "SHUTDOWN_TIMEOUT", "GOOGLE_CLOUD_PROJECT", "STORAGE_EMULATOR_HOST",
];

export interface Build {
  bin: string;
  cleanup(): Promise<void>;
}

/**
 * Builds the service (`go build -o <tmp>/sandbox-cloudrun .` in the repository
 * root), or uses SANDBOX_CLOUDRUN_BIN when it is set.
 */
export async function buildService(): Promise<Build> {
  const given = process.env.SANDBOX_CLOUDRUN_BIN;
  if (given) return { bin: given, cleanup: async () => {} };
  const dir = await mkdtemp(join(tmpdir(), "sandbox-cloudrun-ts-"));
  const bin = join(dir, "sandbox-cloudrun");
  try {
    await promisify(execFile)("go", ["build", "-o", bin, "."], { cwd: repoRoot, maxBuffer: 16 << 20 });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    const e = err as { stderr?: string; message: string };
    throw new Error(`go build failed in ${repoRoot}: ${e.stderr || e.message}`);
  }
  return { bin, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

export interface Service {
  url: string;
  stop(): Promise<void>;
  /** The service's last log lines, for a failure's message. */
  log(): string;
}

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of running) c.kill("SIGKILL");
});

/** Starts `<bin> serve` on a free port with STORE_URL=none and waits for GET /readyz 200. */
export async function startService(bin: string, env: Record<string, string> = {}): Promise<Service> {
  const port = await freePort();
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of SERVICE_VARIABLES) delete base[k];
  const child = spawn(bin, ["serve"], {
    env: { ...base, PORT: String(port), STORE_URL: "none", OTEL_EXPORTER: "none", LOG_LEVEL: "warn", SHUTDOWN_TIMEOUT: "2s", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  running.add(child);
  let tail = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (d: string) => {
    tail = (tail + d).slice(-4000);
  });
  const exited = new Promise<void>((res) => child.once("exit", () => res()));
  let gone = false;
  void exited.then(() => {
    gone = true;
    running.delete(child);
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (gone) return;
    child.kill("SIGTERM");
    const t = setTimeout(() => child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(t);
  };
  const until = Date.now() + 60_000;
  for (;;) {
    if (gone) throw new Error(`the service exited before it was ready: ${tail}`);
    try {
      const r = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
      await r.arrayBuffer();
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) {
      await stop();
      throw new Error(`the service was not ready within 60 s: ${tail}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, stop, log: () => tail };
}

/**
 * Stores source in the directory store with the service's own verb
 * (`<bin> put FILE`, STORE_URL=store) and returns its content reference.
 */
export async function putScript(bin: string, store: string, source: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sandbox-cloudrun-script-"));
  try {
    const file = join(dir, "script.js");
    await writeFile(file, source);
    const { stdout } = await promisify(execFile)(bin, ["put", file], { env: { ...process.env, STORE_URL: store } });
    const ref = stdout.split(/\s+/)[0] ?? "";
    if (!/^sha256:[0-9a-f]{64}$/.test(ref)) throw new Error(`put printed ${JSON.stringify(stdout)}, not a reference`);
    return ref;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
