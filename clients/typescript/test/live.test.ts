// The package against the real Go service, built from this repository and
// started on a free port: every outcome kind through the class, the answers
// no retry can change, the run report, the answers of a later version,
// replayable runs, aborts before and during a run, the busy answer, and an
// unreachable URL.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import {
  CloudRunSandboxBackend,
  CloudRunSandboxError,
  type CloudRunSandboxBackendOptions,
  type FetchLike,
  type RunReport,
  type SandboxOutcome,
  type SandboxRequest,
} from "@loom-plugins/sandbox-cloudrun";
import { buildService, freePort, startService, type Build, type Service } from "./service.js";
import { effectOutput } from "./effect.js";
import { assertInfrastructure, assertOutcome } from "./vocabulary.js";

const MiB = 1 << 20;
const LIMITS = { wallClockMs: 5000, memoryBytes: 32 * MiB };

let build: Build;
let svc: Service;
let cpuSvc: Service;
let smallSvc: Service;
let backend: CloudRunSandboxBackend;
let noRetry: CloudRunSandboxBackend;
let cpuBackend: CloudRunSandboxBackend;
const backends: CloudRunSandboxBackend[] = [];

/** The small service's limits (SMALL_ENV). */
const SMALL = { maxWallClockMs: 1000, maxMemoryBytes: 16 * MiB, maxInputBytes: 4096, maxScriptBytes: 4096 };
const SMALL_ENV = {
  CPU_BUDGET: "100000000",
  MAX_WALL_CLOCK: "1s",
  DEFAULT_WALL_CLOCK: "1s",
  MAX_MEMORY_BYTES: String(SMALL.maxMemoryBytes),
  DEFAULT_MEMORY_BYTES: String(SMALL.maxMemoryBytes),
  MAX_INPUT_BYTES: String(SMALL.maxInputBytes),
  MAX_SCRIPT_BYTES: String(SMALL.maxScriptBytes),
  POOL_SIZE: "1",
};

async function open(url: string, opts: Partial<CloudRunSandboxBackendOptions> = {}): Promise<CloudRunSandboxBackend> {
  const b = await CloudRunSandboxBackend.create({ url, ...opts });
  backends.push(b);
  return b;
}

/** Evaluates through the class and checks the outcome against the closed vocabulary. */
async function run(b: CloudRunSandboxBackend, req: Partial<SandboxRequest> & { script: string }): Promise<SandboxOutcome> {
  const out = await b.evaluate({ inputJson: "null", limits: LIMITS, ...req });
  assertOutcome(out);
  return out;
}

/** The service's own answer to the same request, checked against the closed vocabulary. */
async function raw(url: string, req: { script: string; inputJson?: string; limits?: SandboxRequest["limits"] }): Promise<unknown> {
  const res = await post(url, req);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  // the outcome's members: the usage beside them is not part of it
  const { usage, ...body } = (await res.json()) as Record<string, unknown>;
  assert.equal(typeof usage, "object");
  assertOutcome(body);
  return body;
}

function post(url: string, req: { script: string; inputJson?: string; limits?: SandboxRequest["limits"] }): Promise<Response> {
  return fetch(`${url}/v1/sandbox/evaluate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ inputJson: "null", limits: LIMITS, ...req }),
  });
}

/** A fetch that counts the evaluations it sends. */
function counting(): { fetch: FetchLike; evaluations: () => number } {
  let n = 0;
  return {
    fetch: (u, init) => {
      if (u.endsWith("/v1/sandbox/evaluate")) n++;
      return globalThis.fetch(u, init) as unknown as ReturnType<FetchLike>;
    },
    evaluations: () => n,
  };
}

/** Both ways, and they agree: the class returns the service's outcome as received. */
async function both(url: string, b: CloudRunSandboxBackend, req: { script: string; inputJson?: string; limits?: SandboxRequest["limits"] }): Promise<SandboxOutcome> {
  const viaClass = await run(b, req);
  assert.deepEqual(viaClass, await raw(url, req));
  return viaClass;
}

/** Waits until the service refuses a request as busy (the long run holds its gate). */
async function untilBusy(): Promise<void> {
  const until = Date.now() + 5000;
  for (;;) {
    const o = await run(noRetry, { script: "0", limits: { wallClockMs: 1000, memoryBytes: 16 * MiB } });
    if (!o.ok && o.kind === "infrastructure" && o.message.includes("HTTP 429")) return;
    assert.ok(Date.now() < until, "the long run never held the service");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("against the real service", () => {
  before(async () => {
    build = await buildService();
    // The main service's CPU budget is far away, so long runs end by their
    // wall clock (or an abort); the second one's is tiny, for the cpu limit.
    [svc, cpuSvc, smallSvc] = await Promise.all([
      startService(build.bin, { CPU_BUDGET: "100000000" }),
      startService(build.bin, { CPU_BUDGET: "50" }),
      startService(build.bin, SMALL_ENV),
    ]);
    backend = await open(svc.url);
    noRetry = await open(svc.url, { retryBusy: false });
    cpuBackend = await open(cpuSvc.url);
  });

  after(async () => {
    for (const b of backends) await b.close();
    await Promise.all([svc?.stop(), cpuSvc?.stop(), smallSvc?.stop()]);
    await build?.cleanup();
  });

  test("capabilities are read once, validated and frozen", async () => {
    const doc = (await (await fetch(`${svc.url}/v1/capabilities`)).json()) as Record<string, unknown>;
    assert.deepEqual({ ...backend.capabilities }, doc.capabilities);
    assert.deepEqual(backend.capabilities, {
      language: "javascript",
      network: "none",
      wallClock: "hard",
      memory: true,
      cpu: true,
      freshPerRun: true,
    });
    assert.ok(Object.isFrozen(backend.capabilities));
    assert.throws(() => {
      (backend.capabilities as { network: string }).network = "open";
    }, TypeError);
    assert.match(backend.spiVersion, /^1\./);
    assert.equal(backend.limits.maxWallClockMs, 30000);
    assert.equal(backend.limits.maxConcurrent, 1);
    assert.ok(Object.isFrozen(backend.limits));
    assert.equal(backend.engine.name, "quickjs");
    assert.match(backend.engine.wasmSha256, /^[0-9a-f]{64}$/);
    assert.equal(backend.url, svc.url);
  });

  test("ok: the value comes back exactly", async () => {
    const input = { s: "naïve ☃ 😀 \"q\" \\ \n", n: [1, -2.5, 2 ** 40], deep: { a: { b: { c: [null, true, false] } } } };
    const out = await both(svc.url, backend, { script: "({ echo: input, sum: input.n[0] + 1 })", inputJson: JSON.stringify(input) });
    assert.deepEqual(out, { ok: true, value: { echo: input, sum: 2 } });
  });

  test("ok: a value over the service's maxOutputBytes comes back whole, and loom's effect bounds it as limitExceeded output", async () => {
    // maxOutputBytes bounds /v1/evaluations; the SPI returns the value whole
    // (ADR 0144 D2 has no output limit), and this backend reads it whole, so
    // the bound is loom's effect's to apply: never an untyped failure.
    const maxOutputBytes = backend.limits.maxOutputBytes;
    assert.equal(maxOutputBytes, 1048576);
    const out = await run(backend, { script: `"x".repeat(5000021)`, limits: { wallClockMs: 10000, memoryBytes: 64 * MiB } });
    assert.ok(out.ok, `not ok: ${JSON.stringify(out).slice(0, 300)}`);
    assert.equal(JSON.stringify(out.value).length, 5000023);
    assert.deepEqual(effectOutput(out, maxOutputBytes), { ok: false, channel: "limitExceeded", kind: "output" });
  });

  test("ok: a script with a lone surrogate runs as written", async () => {
    assert.deepEqual(await both(svc.url, backend, { script: "'\uD800'.charCodeAt(0)" }), { ok: true, value: 55296 });
  });

  test("ok: undefined completion is null", async () => {
    assert.deepEqual(await both(svc.url, backend, { script: "undefined" }), { ok: true, value: null });
  });

  test("threw with a name", async () => {
    const out = await both(svc.url, backend, { script: "throw new TypeError('bad ' + input.x)", inputJson: '{"x":1}' });
    assert.deepEqual(out, { ok: false, kind: "threw", name: "TypeError", message: "bad 1" });
  });

  test("threw without a name", async () => {
    const out = await both(svc.url, backend, { script: "throw 'plain string'" });
    assert.deepEqual(out, { ok: false, kind: "threw", message: "plain string" });
    assert.ok(!("name" in out));
  });

  test("threw: a syntax error", async () => {
    const out = await both(svc.url, backend, { script: "let = ;" });
    assert.equal(out.ok, false);
    assert.equal(out.ok === false && out.kind, "threw");
    assert.equal((out as { name?: string }).name, "SyntaxError");
  });

  test("limit: cpu (a service with CPU_BUDGET=50)", async () => {
    const out = await both(cpuSvc.url, cpuBackend, { script: "while (true) {}", limits: { wallClockMs: 20000, memoryBytes: 16 * MiB } });
    assert.deepEqual(out, { ok: false, kind: "limit", limit: "cpu" });
    assert.equal(cpuBackend.capabilities.cpu, true);
  });

  test("limit: memory", async () => {
    const out = await both(svc.url, backend, {
      script: "const a = []; while (true) a.push(new Array(1000).fill(1));",
      limits: { wallClockMs: 10000, memoryBytes: 16 * MiB },
    });
    assert.deepEqual(out, { ok: false, kind: "limit", limit: "memory" });
  });

  test("limit: wallClock", async () => {
    const t0 = Date.now();
    const out = await both(svc.url, backend, { script: "while (true) {}", limits: { wallClockMs: 300, memoryBytes: 16 * MiB } });
    assert.deepEqual(out, { ok: false, kind: "limit", limit: "wallClock" });
    assert.ok(Date.now() - t0 < 10_000);
  });

  test("inputTooLarge: the input overflows a small memoryBytes while being parsed", async () => {
    const out = await both(svc.url, backend, {
      script: "1",
      inputJson: JSON.stringify("ab".repeat(400 << 10)),
      limits: { wallClockMs: 5000, memoryBytes: MiB },
    });
    assert.deepEqual(out, { ok: false, kind: "inputTooLarge" });
  });

  describe("answers no retry can change (docs/spi.md) are the service's, against a service with small limits", () => {
    test("the limits create() read are the service's", async () => {
      const b = await open(smallSvc.url);
      assert.deepEqual(
        { maxWallClockMs: b.limits.maxWallClockMs, maxMemoryBytes: b.limits.maxMemoryBytes, maxInputBytes: b.limits.maxInputBytes, maxScriptBytes: b.limits.maxScriptBytes },
        SMALL,
      );
    });

    // Each row through the class and sent as it is: the outcome is the
    // service's own answer to the same request (both), and the service gave
    // it, since the backend keeps no rule of its own (onRun has the
    // service's request id and usage, under the memory limit it ran with).
    const min = 256 << 10; // the service's minMemoryBytes
    const cases: [string, { script: string; inputJson?: string; limits: SandboxRequest["limits"] }, SandboxOutcome, number][] = [
      ["wallClockMs above maxWallClockMs runs", { script: "'ran'", limits: { wallClockMs: 60_000, memoryBytes: 8 * MiB } }, { ok: true, value: "ran" }, 8 * MiB],
      ["and meets maxWallClockMs", { script: "while (true) {}", limits: { wallClockMs: 60_000, memoryBytes: 8 * MiB } }, { ok: false, kind: "limit", limit: "wallClock" }, 8 * MiB],
      ["memoryBytes above maxMemoryBytes runs at it", { script: "'ran'", limits: { wallClockMs: 1000, memoryBytes: 1 << 30 } }, { ok: true, value: "ran" }, SMALL.maxMemoryBytes],
      [
        "and meets it",
        { script: "const a = []; while (true) a.push(new Array(1000).fill(1));", limits: { wallClockMs: 1000, memoryBytes: 1 << 30 } },
        { ok: false, kind: "limit", limit: "memory" },
        SMALL.maxMemoryBytes,
      ],
      ["memoryBytes below minMemoryBytes is limit memory", { script: "'ran'", limits: { wallClockMs: 1000, memoryBytes: min - 1 } }, { ok: false, kind: "limit", limit: "memory" }, min - 1],
      ["memoryBytes at minMemoryBytes runs", { script: "'ran'", limits: { wallClockMs: 1000, memoryBytes: min } }, { ok: true, value: "ran" }, min],
      [
        "inputJson over maxInputBytes in UTF-8 bytes, under it in UTF-16 units, is inputTooLarge",
        { script: "input.length", inputJson: JSON.stringify("é".repeat(SMALL.maxInputBytes / 2)), limits: { wallClockMs: 1000, memoryBytes: 8 * MiB } },
        { ok: false, kind: "inputTooLarge" },
        8 * MiB,
      ],
      [
        "inputJson at maxInputBytes runs",
        { script: "input.length", inputJson: JSON.stringify("é".repeat(SMALL.maxInputBytes / 2 - 1)), limits: { wallClockMs: 1000, memoryBytes: 8 * MiB } },
        { ok: true, value: SMALL.maxInputBytes / 2 - 1 },
        8 * MiB,
      ],
      [
        "a script over maxScriptBytes is threw RangeError naming both sizes",
        { script: `'${"x".repeat(SMALL.maxScriptBytes - 1)}'`, limits: { wallClockMs: 1000, memoryBytes: 8 * MiB } },
        {
          ok: false,
          kind: "threw",
          name: "RangeError",
          message: `the script is ${SMALL.maxScriptBytes + 1} bytes, over the service's maxScriptBytes of ${SMALL.maxScriptBytes}`,
        },
        8 * MiB,
      ],
      [
        "the script before the memory and the input",
        { script: " ".repeat(SMALL.maxScriptBytes + 1), inputJson: JSON.stringify("x".repeat(SMALL.maxInputBytes)), limits: { wallClockMs: 1000, memoryBytes: 1 } },
        {
          ok: false,
          kind: "threw",
          name: "RangeError",
          message: `the script is ${SMALL.maxScriptBytes + 1} bytes, over the service's maxScriptBytes of ${SMALL.maxScriptBytes}`,
        },
        1,
      ],
      [
        "the memory before the input",
        { script: "1", inputJson: JSON.stringify("x".repeat(SMALL.maxInputBytes)), limits: { wallClockMs: 1000, memoryBytes: 1 } },
        { ok: false, kind: "limit", limit: "memory" },
        1,
      ],
    ];
    for (const [name, req, want, memory] of cases) {
      test(name, async () => {
        const reports: RunReport[] = [];
        const b = await open(smallSvc.url, { onRun: (r) => reports.push(r) });
        assert.deepEqual(await both(smallSvc.url, b, req), want);
        assert.equal(reports.length, 1, "the service answered");
        assert.match(reports[0]!.requestId, /^[A-Za-z0-9._~-]{1,128}$/);
        assert.equal(reports[0]!.usage?.memoryLimitBytes, memory);
      });
    }
  });

  test("a script and an input at their bounds reach the service however their escapes swell the body", async () => {
    const reports: RunReport[] = [];
    const b = await open(svc.url, { onRun: (r) => reports.push(r) });
    const tail = "'.length + input.length";
    // a control character is six bytes on the wire, a backslash two: about 8 MiB in all
    const script = "'" + "\u0001".repeat(b.limits.maxScriptBytes! - 1 - tail.length) + tail;
    const inputJson = `"${"\\\\".repeat((b.limits.maxInputBytes! - 2) / 2)}"`;
    const body = JSON.stringify({ script, inputJson });
    assert.ok(body.length > 6 * b.limits.maxScriptBytes! + 2 * b.limits.maxInputBytes! - 1024, `a body of ${body.length} bytes`);
    const out = await run(b, { script, inputJson, limits: { wallClockMs: 5000, memoryBytes: 64 * MiB } });
    assert.deepEqual(out, { ok: true, value: b.limits.maxScriptBytes! - 1 - tail.length + (b.limits.maxInputBytes! - 2) / 2 });
    assert.equal(reports.length, 1, "the service answered");
  });

  test("infrastructure: zero and negative limits are refused here, never sent as 'the default'", async () => {
    for (const limits of [
      { wallClockMs: 0, memoryBytes: 16 * MiB },
      { wallClockMs: 1000, memoryBytes: 0 },
      { wallClockMs: -5, memoryBytes: 16 * MiB },
      { wallClockMs: 1000, memoryBytes: -1 },
    ]) {
      assertInfrastructure(await run(backend, { script: "1", limits }), "sandbox service client: invalid limits");
    }
  });

  test("abort before the run: rejects with the signal's reason, no outcome", async () => {
    const reason = new Error("caller gave up");
    await assert.rejects(backend.evaluate({ script: "1", inputJson: "null", limits: LIMITS, signal: AbortSignal.abort(reason) }), (e) => e === reason);
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(backend.evaluate({ script: "1", inputJson: "null", limits: LIMITS, signal: ac.signal }), (e) => e === ac.signal.reason && (e as Error).name === "AbortError");
  });

  test("abort during the run: rejects with the reason, and the service stops the run", async () => {
    const ac = new AbortController();
    const reason = new Error("cancelled mid-run");
    const long = backend.evaluate({ script: "while (true) {}", inputJson: "null", limits: { wallClockMs: 25_000, memoryBytes: 16 * MiB }, signal: ac.signal });
    await untilBusy();
    const t0 = Date.now();
    ac.abort(reason);
    await assert.rejects(long, (e) => e === reason);
    assert.ok(Date.now() - t0 < 1000, "the abort settled the call at once");
    // The service saw the client go and stopped the run: the next request is
    // not refused as busy within about 2 s (the run had 25 s left).
    for (;;) {
      const o = await run(noRetry, { script: "'free'", limits: { wallClockMs: 1000, memoryBytes: 16 * MiB } });
      if (o.ok) {
        assert.equal(o.value, "free");
        break;
      }
      assertInfrastructure(o, "HTTP 429");
      assert.ok(Date.now() - t0 < 2000, `still busy ${Date.now() - t0} ms after the abort`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  test("busy: 429 is retried with a short back-off within the signal's life, else infrastructure", async () => {
    const long = run(backend, { script: "while (true) {}", limits: { wallClockMs: 3000, memoryBytes: 16 * MiB } });
    await untilBusy();

    // Retry disabled: at once, saying busy.
    assertInfrastructure(await run(noRetry, { script: "1" }), "HTTP 429", "Busy");

    // Busy past the request's own timeout: retried, then given up before
    // the wait that would pass the deadline.
    const short = await open(svc.url, { timeoutGraceMs: 200 });
    const t1 = Date.now();
    assertInfrastructure(await run(short, { script: "1", limits: { wallClockMs: 100, memoryBytes: 16 * MiB } }), "HTTP 429", /busy after \d+ attempts: the next, in \d+ ms, would pass the request's deadline/);
    assert.ok(Date.now() - t1 < 1000, "gave up within the request's timeout");

    // The caller aborts while the client retries: the abort wins.
    const reason = new Error("stop waiting");
    const ac = new AbortController();
    const waiting = backend.evaluate({ script: "1", inputJson: "null", limits: LIMITS, signal: ac.signal });
    setTimeout(() => ac.abort(reason), 200);
    await assert.rejects(waiting, (e) => e === reason);

    // With a signal that allows it, the client retries until the service is
    // free and gets the outcome.
    const c = counting();
    const patient = await open(svc.url, { fetch: c.fetch });
    assert.deepEqual(await run(patient, { script: "'after the wait'" }), { ok: true, value: "after the wait" });
    assert.ok(c.evaluations() > 1, "retried");

    assert.deepEqual(await long, { ok: false, kind: "limit", limit: "wallClock" });
  });

  test("onRun: the script's console, what the run used and the request id reach the caller; the outcome stays D2's", async () => {
    const reports: RunReport[] = [];
    const b = await open(svc.url, { onRun: (r) => reports.push(r), requestId: () => "loom-run-1" });
    const out = await run(b, { script: "console.log('hello', input.n); console.error('oops'); input.n * 2", inputJson: '{"n":21}' });
    assert.deepEqual(out, { ok: true, value: 42 });
    assert.equal(reports.length, 1);
    const r = reports[0]!;
    assert.equal(r.outcome, out);
    assert.equal(r.requestId, "loom-run-1", "the service took loom's id");
    assert.equal(r.logs, "hello 21\n[error] oops\n");
    const u = r.usage!;
    assert.deepEqual(Object.keys(u.phasesMs), ["fetch", "verify", "setup", "compile", "run", "serialise"]);
    assert.equal(u.memoryLimitBytes, LIMITS.memoryBytes);
    assert.ok(u.peakMemoryBytes > 0 && u.peakMemoryBytes <= u.memoryLimitBytes);
    assert.ok(u.cpuBudgetUsed > 0 && u.cpuBudgetUsed <= u.cpuBudget);

    // without a requestId hook, the service's own id; a limit has its usage too
    const plain = await open(svc.url, { onRun: (r) => reports.push(r) });
    assert.deepEqual(await run(plain, { script: "while (true) {}", limits: { wallClockMs: 200, memoryBytes: 16 * MiB } }), { ok: false, kind: "limit", limit: "wallClock" });
    assert.match(reports[1]!.requestId, /^[A-Za-z0-9._~-]{1,128}$/);
    assert.notEqual(reports[1]!.requestId, "loom-run-1");
    assert.equal(reports[1]!.logs, "");
    assert.ok(reports[1]!.usage!.phasesMs.run > 0 && reports[1]!.usage!.cpuMs > 0);

    // captureLogs: false leaves the console out
    const quiet = await open(svc.url, { onRun: (r) => reports.push(r), captureLogs: false });
    await run(quiet, { script: "console.log('x'); 1" });
    assert.equal(reports[2]!.logs, undefined);
    assert.ok(reports[2]!.usage);
  });

  test("a later version of the service: its answers' new report members and usage figures are ignored, the typed outcome kept", async () => {
    // A loopback proxy that answers as a later version would (docs/spi.md,
    // "How the wire evolves"): each answer gains a usage figure, a phase and
    // report members this client does not know.
    let changed = 0;
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const headers: Record<string, string> = {};
        for (const k of ["content-type", "x-request-id"]) if (typeof req.headers[k] === "string") headers[k] = req.headers[k] as string;
        const init: RequestInit = { method: req.method!, headers };
        if (req.method === "POST") init.body = Buffer.concat(chunks);
        const upstream = await fetch(`${svc.url}${req.url}`, init);
        let body = await upstream.text();
        if (req.method === "POST" && upstream.status === 200) {
          const later = body
            .replace('"usage":{"phasesMs":{', '"usage":{"gpuMs":0.5,"phasesMs":{"queue":1.25,')
            .replace('"memoryLimitBytes":', '"heapObjects":[1,2],"memoryLimitBytes":')
            .replace(/}\n?$/, ',"trace":{"spans":[{"name":"run"}]},"warnings":[]}');
          if (later !== body) changed++;
          body = later;
        }
        const out: Record<string, string> = { "content-type": upstream.headers.get("content-type") ?? "" };
        const id = upstream.headers.get("x-request-id");
        if (id !== null) out["x-request-id"] = id;
        res.writeHead(upstream.status, out);
        res.end(body);
      });
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    try {
      const reports: RunReport[] = [];
      const b = await open(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, { onRun: (r) => reports.push(r) });
      const limits = { wallClockMs: 500, memoryBytes: 16 * MiB };
      assert.deepEqual(await run(b, { script: "console.log('a is', input.a); input.a + 1", inputJson: '{"a":1}', limits }), { ok: true, value: 2 });
      assert.deepEqual(await run(b, { script: "console.warn('about to'); null.x", limits }), {
        ok: false,
        kind: "threw",
        name: "TypeError",
        message: "cannot read property 'x' of null",
      });
      assert.deepEqual(await run(b, { script: "for (;;) {}", limits }), { ok: false, kind: "limit", limit: "wallClock" });
      assert.equal(changed, 3, "every answer came from the later version");
      assert.deepEqual(
        reports.map((r) => [r.logs, r.usage?.memoryLimitBytes, Object.keys(r.usage?.phasesMs ?? {})]),
        [
          ["a is 1\n", limits.memoryBytes, ["fetch", "verify", "setup", "compile", "run", "serialise"]],
          ["[warn] about to\n", limits.memoryBytes, ["fetch", "verify", "setup", "compile", "run", "serialise"]],
          ["", limits.memoryBytes, ["fetch", "verify", "setup", "compile", "run", "serialise"]],
        ],
        "the console and the figures this client knows, and nothing else",
      );
      assert.ok(reports.every((r) => !("gpuMs" in r.usage!) && r.requestId !== ""));
    } finally {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    }
  });

  test("determinism: Math.random and the clocks give one outcome on every run with the option, and differ without", async () => {
    const script = "[Math.random(), Math.random(), Date.now(), new Date().toISOString()]";
    const req = { script, inputJson: '{"step":3}' };
    const replayable = await open(svc.url, { determinism: true });
    // another backend sends the same request: the same run, whatever instance or worker takes it
    const other = await open(svc.url, { determinism: true });
    const outcomes = [await run(replayable, req), await run(replayable, req), await run(other, req), await run(other, req)];
    for (const o of outcomes) assert.deepEqual(o, outcomes[0]);
    const first = outcomes[0]!;
    assert.ok(first.ok, JSON.stringify(first));
    const [a, b, ms, iso] = first.value as [number, number, number, string];
    assert.ok(a !== b && a >= 0 && a < 1 && b >= 0 && b < 1, JSON.stringify(first));
    assert.deepEqual([ms, iso], [Date.UTC(2000, 0, 1), "2000-01-01T00:00:00.000Z"], "the service's default instant");
    // the seed is derived from the script and the input's value: its other spellings draw the same
    // numbers, another input other numbers
    for (const inputJson of ['{ "step": 3 }', '{"step":3.0}', '{"step":30e-1}']) {
      assert.deepEqual(await run(replayable, { script, inputJson }), first, inputJson);
    }
    const otherInput = await run(replayable, { script, inputJson: '{"step":4}' });
    assert.notDeepEqual(otherInput, first);

    const without = [await run(backend, req), await run(backend, req)];
    assert.notDeepEqual(without[0], without[1], "two runs without the option drew the same numbers at the same instant");
  });

  test("determinism: an explicit now shows in Date, and a seed of its own draws numbers of its own", async () => {
    const script = "[Math.random(), Date.now(), new Date().toISOString(), String(new Date())]";
    const now = new Date(Date.UTC(2026, 11, 2, 7, 16, 17, 500));
    const seeded = await open(svc.url, { determinism: { seed: "flow-42/step-3", now } });
    const o = await run(seeded, { script });
    assert.deepEqual(await run(seeded, { script }), o);
    assert.ok(o.ok, JSON.stringify(o));
    const [random, ms, iso, local] = o.value as [number, number, string, string];
    assert.equal(ms, now.getTime());
    assert.equal(iso, "2026-12-02T07:16:17.500Z");
    assert.match(local, /^Wed Dec 0?2 2026 07:16:17 GMT\+0000/, "local time is UTC");
    // the same instant written in another offset reads the same
    const offset = await open(svc.url, { determinism: { seed: "flow-42/step-3", now: "2026-12-02T08:16:17.5+01:00" } });
    assert.deepEqual(await run(offset, { script }), o);
    // another seed: other numbers, the same clock
    const reseeded = await open(svc.url, { determinism: { seed: "flow-42/step-4", now } });
    const r = await run(reseeded, { script });
    assert.ok(r.ok);
    assert.notEqual((r.value as number[])[0], random);
    assert.deepEqual((r.value as unknown[]).slice(1), [ms, iso, local]);
  });

  test("warm() answers once the service is ready", async () => {
    await backend.warm();
  });

  test("close() stops further use", async () => {
    const b = await open(svc.url);
    await b.close();
    assertInfrastructure(await run(b, { script: "1" }), "closed");
    await assert.rejects(b.warm(), (e) => e instanceof CloudRunSandboxError && e.code === "closed");
    await b.close(); // idempotent
  });

  test("an unreachable URL", async () => {
    const port = await freePort();
    await assert.rejects(CloudRunSandboxBackend.create({ url: `http://127.0.0.1:${port}` }), (e) => {
      assert.ok(e instanceof CloudRunSandboxError);
      assert.equal(e.code, "unavailable");
      assert.equal(e.retryable, true, "no answer: a retry may reach it");
      assert.match(e.message, /GET \/v1\/capabilities/);
      assert.match(e.message, /ECONNREFUSED/);
      return true;
    });
  });

  test("a service that went away: evaluate is infrastructure", async () => {
    const other = await startService(build.bin);
    const b = await open(other.url);
    await other.stop();
    assertInfrastructure(await run(b, { script: "1" }), "POST /v1/sandbox/evaluate", /ECONNREFUSED|socket|closed|reset/i);
  });
});
