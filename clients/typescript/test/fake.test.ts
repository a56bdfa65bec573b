// The package against a tiny local HTTP server (or a fetch function) that
// answers what the real service never would: garbage, wrong content types,
// members of another kind or mistyped, redirects, 5xx, oversized bodies, no answer at
// all, busy for a while; and what the package sends and reports around it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, describe, test } from "node:test";
import {
  CloudRunSandboxBackend,
  CloudRunSandboxError,
  DEFAULT_MAX_RESPONSE_BYTES,
  responseBoundFor,
  type CloudRunSandboxBackendOptions,
  type FetchLike,
  type FetchLikeResponse,
  type RunReport,
  type SandboxOutcome,
  type SandboxRequest,
} from "@loom-plugins/sandbox-cloudrun";
import { effectOutput } from "./effect.js";
import { assertInfrastructure, assertOutcome } from "./vocabulary.js";

/** The capabilities document as the service writes it: the golden file the Go tests read too. */
interface CapabilitiesDoc {
  spiVersion: string;
  capabilities: { language: string; network: string; wallClock: string; memory: boolean; cpu: boolean; freshPerRun: boolean };
  idempotent: boolean;
  scriptStore: boolean;
  determinism?: boolean;
  limits: Record<string, number>;
  engine: { name: string; version: string; wasmSha256: string };
}
const CAPABILITIES = JSON.parse(readFileSync(new URL("../../../api/testdata/capabilities/service.json", import.meta.url), "utf8")) as CapabilitiesDoc;

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface Fake {
  url: string;
  /** Requests seen, as "METHOD /path". */
  seen: string[];
  bodies: string[];
  headers: IncomingMessage["headers"][];
  evaluations(): number;
  close(): Promise<void>;
}

const servers = new Set<Server>();
after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/**
 * A server that answers GET /v1/capabilities with `capabilities` (raw text
 * when a string) and everything else with `handler`.
 */
async function fake(handler: Handler, capabilities: unknown = CAPABILITIES, capabilitiesType = "application/json"): Promise<Fake> {
  const seen: string[] = [];
  const bodies: string[] = [];
  const headers: IncomingMessage["headers"][] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      seen.push(`${req.method} ${path}`);
      headers.push(req.headers);
      const body = Buffer.concat(chunks).toString("utf8");
      bodies.push(body);
      if (req.method === "GET" && path.endsWith("/v1/capabilities")) {
        res.writeHead(200, { "content-type": capabilitiesType });
        res.end(typeof capabilities === "string" ? capabilities : JSON.stringify(capabilities));
        return;
      }
      handler(req, res, body);
    });
  });
  servers.add(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    bodies,
    headers,
    evaluations: () => seen.filter((s) => s.startsWith("POST ")).length,
    close: async () => {
      servers.delete(server);
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A server that answers every request, GET /v1/capabilities included, with handler. */
async function raw(handler: Handler): Promise<{ url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => handler(req, res, ""));
  });
  servers.add(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

/** Answers every evaluation with status, content type and body. */
function answer(status: number, body: string | Buffer, type = "application/json", extra: Record<string, string> = {}): Handler {
  return (_req, res) => {
    res.writeHead(status, { "content-type": type, ...extra });
    res.end(body);
  };
}

function problem(status: number, title: string, detail: string, extra: Record<string, string> = {}): Handler {
  return answer(status, JSON.stringify({ type: "about:blank#x", title, status, detail, retryable: false }), "application/problem+json", extra);
}

const REQ: SandboxRequest = { script: "1", inputJson: "null", limits: { wallClockMs: 1000, memoryBytes: 1 << 24 } };

/** A usage member's JSON text, every member zero unless patched with raw JSON text. */
function usage(patch: Record<string, string | number> = {}): string {
  const members: Record<string, string | number> = {
    phasesMs: '{"fetch":0,"verify":0,"setup":0,"compile":0,"run":0,"serialise":0}',
    cpuMs: 0,
    cpuBudgetUsed: 0,
    cpuBudget: 0,
    peakMemoryBytes: 0,
    memoryLimitBytes: 0,
    ...patch,
  };
  return `{${Object.entries(members).map(([k, v]) => `"${k}":${v}`).join(",")}}`;
}

async function backendFor(f: Fake, opts: Partial<CloudRunSandboxBackendOptions> = {}): Promise<CloudRunSandboxBackend> {
  return CloudRunSandboxBackend.create({ url: f.url, ...opts });
}

async function evaluate(b: CloudRunSandboxBackend, req: Partial<SandboxRequest> = {}): Promise<SandboxOutcome> {
  const out = await b.evaluate({ ...REQ, ...req });
  assertOutcome(out);
  return out;
}

describe("outcome bodies", () => {
  const valid: [string, string, SandboxOutcome][] = [
    ["ok", '{"ok":true,"value":{"a":[1,2]}}', { ok: true, value: { a: [1, 2] } }],
    ["ok with null", '{"ok":true,"value":null}', { ok: true, value: null }],
    ["limit", '{"ok":false,"kind":"limit","limit":"memory"}', { ok: false, kind: "limit", limit: "memory" }],
    ["threw, empty message", '{"ok":false,"kind":"threw","message":""}', { ok: false, kind: "threw", message: "" }],
    ["threw with name", '{"ok":false,"kind":"threw","name":"E","message":"m"}', { ok: false, kind: "threw", name: "E", message: "m" }],
    ["inputTooLarge", '{"ok":false,"kind":"inputTooLarge"}', { ok: false, kind: "inputTooLarge" }],
    ["infrastructure", '{"ok":false,"kind":"infrastructure","message":"engine gone"}', { ok: false, kind: "infrastructure", message: "engine gone" }],
    ["escaped keys", '{"\\u006fk":true,"value":1}', { ok: true, value: 1 }],
    ["charset parameter", '{"ok":true,"value":1}', { ok: true, value: 1 }],
    ["a report member of a later version", '{"ok":true,"value":1,"trace":""}', { ok: true, value: 1 }],
    ["a later usage figure and phase", `{"ok":false,"kind":"inputTooLarge","usage":${usage({ gpuMs: 1, phasesMs: '{"fetch":0,"verify":0,"setup":0,"run":0,"serialise":0,"gc":0}' })}}`, { ok: false, kind: "inputTooLarge" }],
  ];
  for (const [name, body, want] of valid) {
    test(`accepted as received: ${name}`, async () => {
      const f = await fake(answer(200, body, name === "charset parameter" ? "application/json; charset=utf-8" : "application/json"));
      assert.deepEqual(await evaluate(await backendFor(f)), want);
    });
  }

  const malformed: [string, string | Buffer, string][] = [
    ["garbage", "<html>oops</html>", "not JSON"],
    ["an empty body", "", "not JSON"],
    ["data after the object", '{"ok":true,"value":1} {}', "not JSON"],
    ["a byte-order mark", "\uFEFF" + '{"ok":true,"value":1}', "not JSON"],
    ["invalid UTF-8", Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), "not valid UTF-8"],
    ["an array", '[{"ok":true,"value":1}]', "a JSON object is required"],
    ["a string", '"ok"', "a JSON object is required"],
    ["ok without value", '{"ok":true}', '"value": missing'],
    ["null logs", '{"ok":true,"value":1,"logs":null}', '"logs": must be a string, got null'],
    ["an empty usage", '{"ok":true,"value":1,"usage":{}}', '"usage"."phasesMs": missing'],
    ["a usage without a figure this client knows", `{"ok":true,"value":1,"usage":${usage({ gpuMs: 1 }).replace('"cpuMs":0,', "")}}`, '"usage"."cpuMs": missing'],
    ["a fractional count in the usage", `{"ok":true,"value":1,"usage":${usage({ cpuBudgetUsed: 1.5 })}}`, '"cpuBudgetUsed": must be a non-negative integer, got 1.5'],
    ["a negative zero in the usage", `{"ok":true,"value":1,"usage":${usage({ cpuMs: "-0" })}}`, '"cpuMs": must be a non-negative number of milliseconds, got 0'],
    ["a time as a string in the usage", `{"ok":true,"value":1,"usage":${usage({ cpuMs: '"1"' })}}`, '"cpuMs": must be a non-negative number of milliseconds, got a string'],
    ["a time past the Go decoder's range", `{"ok":true,"value":1,"usage":${usage({ cpuMs: "1e16" })}}`, '"cpuMs": must be a non-negative number of milliseconds'],
    ["ok as a string", '{"ok":"true","value":1}', '"ok": must be a boolean, got a string'],
    ["no ok", '{"kind":"limit","limit":"cpu"}', '"ok": missing'],
    ["an unknown kind", '{"ok":false,"kind":"timeout"}', "must be one of limit, threw, inputTooLarge, infrastructure"],
    ["an unknown limit", '{"ok":false,"kind":"limit","limit":"time"}', "must be one of cpu, memory, wallClock"],
    ["limit with a message", '{"ok":false,"kind":"limit","limit":"cpu","message":"m"}', '"message": not a member of this kind of outcome'],
    ["threw without message", '{"ok":false,"kind":"threw","name":"E"}', '"message": missing'],
    ["threw with a null name", '{"ok":false,"kind":"threw","name":null,"message":"m"}', '"name": must be a string, got null'],
    ["threw with a number message", '{"ok":false,"kind":"threw","message":5}', '"message": must be a string, got a number'],
    ["inputTooLarge with a message", '{"ok":false,"kind":"inputTooLarge","message":"m"}', '"message": not a member of this kind of outcome'],
    ["infrastructure without message", '{"ok":false,"kind":"infrastructure"}', '"message": missing'],
    ["infrastructure with an empty message", '{"ok":false,"kind":"infrastructure","message":""}', "must not be empty"],
    ["failed with a value", '{"ok":false,"kind":"inputTooLarge","value":1}', '"value": not a member of this kind of outcome'],
    ["a duplicate member", '{"ok":true,"ok":false,"kind":"inputTooLarge","value":1}', '"ok": duplicate member'],
    ["a duplicate after unescaping", '{"ok":true,"\\u006fk":true,"value":1}', '"ok": duplicate member'],
    ["a duplicate in the value", '{"ok":true,"value":{"a":1,"b":[{"c":1,"c":2}]}}', '"c": duplicate member'],
  ];
  for (const [name, body, fragment] of malformed) {
    test(`malformed 200 body is infrastructure: ${name}`, async () => {
      const f = await fake(answer(200, body));
      assertInfrastructure(await evaluate(await backendFor(f)), "POST /v1/sandbox/evaluate: HTTP 200: malformed outcome", fragment);
    });
  }

  test("an infrastructure outcome's message is bounded", async () => {
    const f = await fake(answer(200, JSON.stringify({ ok: false, kind: "infrastructure", message: "é".repeat(5000) })));
    const m = assertInfrastructure(await evaluate(await backendFor(f)));
    assert.equal(m, "é".repeat(2048));
  });

  test("a deeply nested value costs no stack", async () => {
    const depth = 20000;
    const f = await fake(answer(200, `{"ok":true,"value":${"[".repeat(depth)}${"]".repeat(depth)}}`));
    const out = await evaluate(await backendFor(f));
    assert.equal(out.ok, true);
  });
});

describe("answers other than a 200 outcome", () => {
  test("a 200 with another content type", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}', "text/plain"));
    assertInfrastructure(await evaluate(await backendFor(f)), "HTTP 200", 'Content-Type is "text/plain", want application/json');
    const g = await fake((_req, res) => {
      res.writeHead(200);
      res.end('{"ok":true,"value":1}');
    });
    assertInfrastructure(await evaluate(await backendFor(g)), "Content-Type");
  });

  test("a 500 problem: the service's detail, never retried", async () => {
    const f = await fake(problem(500, "Internal", "internal error"));
    assertInfrastructure(await evaluate(await backendFor(f)), "sandbox service: POST /v1/sandbox/evaluate: HTTP 500: Internal: internal error");
    assert.equal(f.evaluations(), 1);
  });

  test("a 503 with Retry-After is not retried either", async () => {
    const f = await fake(problem(503, "Backend unavailable", "engine failed", { "retry-after": "1" }));
    assertInfrastructure(await evaluate(await backendFor(f)), "HTTP 503", "engine failed");
    assert.equal(f.evaluations(), 1);
  });

  test("a 502 HTML page: the status, not the page", async () => {
    const f = await fake(answer(502, "<html><body>Bad gateway from a proxy</body></html>", "text/html"));
    const m = assertInfrastructure(await evaluate(await backendFor(f)), "HTTP 502");
    assert.ok(!m.includes("html"));
  });

  test("a problem whose members have the wrong types is reported by status only", async () => {
    const f = await fake(answer(400, JSON.stringify({ title: 5, detail: "d" }), "application/problem+json"));
    assert.equal(assertInfrastructure(await evaluate(await backendFor(f))), "sandbox service: POST /v1/sandbox/evaluate: HTTP 400");
  });

  test("redirects are reported, never followed", async () => {
    for (const status of [301, 302, 307, 308]) {
      const f = await fake((req, res) => {
        if (req.url === "/elsewhere") {
          res.writeHead(200, { "content-type": "application/json" });
          res.end('{"ok":true,"value":"followed"}');
          return;
        }
        res.writeHead(status, { location: "/elsewhere" });
        res.end();
      });
      assertInfrastructure(await evaluate(await backendFor(f)), `HTTP ${status}`, "redirects are not followed");
      assert.ok(!f.seen.some((s) => s.endsWith("/elsewhere")), "the redirect was not followed");
    }
  });

  test("a redirect on GET /v1/capabilities fails create()", async () => {
    const target = await fake(() => {});
    const r = await raw((_req, res) => {
      res.writeHead(302, { location: `${target.url}/v1/capabilities` });
      res.end();
    });
    await assert.rejects(CloudRunSandboxBackend.create({ url: r.url }), (e) => {
      assert.ok(e instanceof CloudRunSandboxError);
      assert.equal(e.code, "unavailable");
      assert.equal(e.status, 302);
      assert.match(e.message, /GET \/v1\/capabilities: HTTP 302: redirects are not followed/);
      return true;
    });
    assert.equal(target.seen.length, 0);
  });

  test("an oversized body: declared, or streamed without a length", async () => {
    const big = JSON.stringify({ ok: true, value: "x".repeat(5000) });
    const declared = await fake(answer(200, big, "application/json", { "content-length": String(Buffer.byteLength(big)) }));
    assertInfrastructure(await evaluate(await backendFor(declared, { maxResponseBytes: 1024 })), `response body of ${big.length} bytes exceeds the client's limit of 1024 bytes`);
    const chunked = await fake((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      for (let i = 0; i < 100; i++) res.write("x".repeat(100));
      res.end();
    });
    assertInfrastructure(await evaluate(await backendFor(chunked, { maxResponseBytes: 1024 })), "response body exceeds the client's limit of 1024 bytes");
  });

  test("by default, any value the service can make is read, even one over 64 MiB", async () => {
    // The service returns an SPI value whole (its maxOutputBytes bounds
    // /v1/evaluations only); a value of up to 2 × maxMemoryBytes + 1 MiB is
    // read, so that loom's effect bounds it as limitExceeded output.
    assert.equal(responseBoundFor(268435456), 2 * 268435456 + (2 << 20));
    assert.equal(responseBoundFor(1 << 20), DEFAULT_MAX_RESPONSE_BYTES);
    assert.equal(responseBoundFor(undefined), DEFAULT_MAX_RESPONSE_BYTES);
    const value = "x".repeat(DEFAULT_MAX_RESPONSE_BYTES);
    const f = await fake(answer(200, JSON.stringify({ ok: true, value })));
    const out = await evaluate(await backendFor(f));
    assert.ok(out.ok && out.value === value, "the value did not come back whole");
    assert.deepEqual(effectOutput(out, 1 << 20), { ok: false, channel: "limitExceeded", kind: "output" });
    // a service whose memory cannot make such a value keeps the least default
    const small = await fake(answer(200, JSON.stringify({ ok: true, value })), {
      ...CAPABILITIES,
      limits: { ...CAPABILITIES.limits, maxMemoryBytes: 1 << 20, defaultMemoryBytes: 1 << 20 },
    });
    assertInfrastructure(await evaluate(await backendFor(small)), `exceeds the client's limit of ${DEFAULT_MAX_RESPONSE_BYTES} bytes`);
  });

  test("an oversized problem is reported without its text", async () => {
    const f = await fake(problem(400, "Huge", "d".repeat(100 << 10)));
    assert.equal(assertInfrastructure(await evaluate(await backendFor(f))), "sandbox service: POST /v1/sandbox/evaluate: HTTP 400");
  });

  test("a long problem detail is bounded to 2048 units", async () => {
    const f = await fake(problem(400, "Long", "😀".repeat(3000)));
    const m = assertInfrastructure(await evaluate(await backendFor(f)), "HTTP 400: Long: 😀");
    assert.ok(m.length <= 2048 && m.length >= 2046);
    assert.ok(m.isWellFormed(), "no surrogate pair was split");
  });

  test("a service that never answers: infrastructure after wallClockMs + timeoutGraceMs", async () => {
    const f = await fake(() => {}); // never answers
    const b = await backendFor(f, { timeoutGraceMs: 200 });
    const t0 = Date.now();
    assertInfrastructure(await evaluate(b, { limits: { wallClockMs: 100, memoryBytes: 1 << 24 } }), "no answer within 300 ms", "limits.wallClockMs 100 + timeoutGraceMs 200");
    const took = Date.now() - t0;
    assert.ok(took >= 290 && took < 3000, `took ${took} ms`);
  });

  test("a body that never ends: the same timeout", async () => {
    const f = await fake((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"ok":true,');
    });
    const b = await backendFor(f, { timeoutGraceMs: 200 });
    assertInfrastructure(await evaluate(b, { limits: { wallClockMs: 100, memoryBytes: 1 << 24 } }), "no answer within 300 ms");
  });

  test("a network error after create()", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const b = await backendFor(f);
    await f.close();
    assertInfrastructure(await evaluate(b), "sandbox service: POST /v1/sandbox/evaluate: fetch failed", "ECONNREFUSED");
  });

  test("a fetch that throws something odd", async () => {
    const f = await fake(answer(200, "{}"));
    const b = await backendFor(f, {
      fetch: async (u, init) => {
        if (u.endsWith("/v1/sandbox/evaluate")) throw Object.assign(new Error("boom"), { code: "EODD" });
        return fetch(u, init);
      },
    });
    assertInfrastructure(await evaluate(b), "POST /v1/sandbox/evaluate: boom (EODD)");
  });
});

/** A response of the fetch-function fakes, with an X-Request-Id. */
function response(status: number, body: string, headers: Record<string, string> = {}): FetchLikeResponse {
  const bytes = new TextEncoder().encode(body);
  const all: Record<string, string> = {
    "content-type": status === 200 ? "application/json" : "application/problem+json",
    "x-request-id": "fake-1",
    ...headers,
  };
  return {
    status,
    headers: { get: (name: string) => all[name.toLowerCase()] ?? null },
    body: (async function* () {
      yield bytes;
    })(),
  };
}

const BUSY = JSON.stringify({ type: "about:blank#busy", title: "Busy", status: 429, detail: "busy", retryable: true });

/**
 * A fetch that answers GET /v1/capabilities with the golden document and the
 * evaluations with answers in turn (the last one from then on), pushing
 * "fetch" onto log at each evaluation.
 */
function fetchAnswering(log: (string | number)[], ...answers: (() => FetchLikeResponse)[]): FetchLike {
  let n = 0;
  return async (url) => {
    if (url.endsWith("/v1/capabilities")) return response(200, JSON.stringify(CAPABILITIES));
    log.push("fetch");
    return answers[Math.min(n++, answers.length - 1)]!();
  };
}

/**
 * Runs fn while the delays that the package's busy waits (its sleep) ask
 * setTimeout for are pushed onto log; with quick, those timers fire at once,
 * so that a test of many waits takes no time. What is asserted is the waits
 * asked for, never how long anything took. Other timers of the process (the
 * request's own timeout, Node's) pass through untouched.
 */
async function recordingWaits<T>(log: (string | number)[], fn: () => Promise<T>, quick = false): Promise<T> {
  const real = globalThis.setTimeout;
  const patched = (cb: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const stack = new Error().stack ?? "";
    if (ms !== undefined && /\bsleep\b[^\n]*\/dist\/transport\.js/.test(stack)) {
      log.push(ms);
      return real(cb, quick ? 0 : ms, ...args);
    }
    return real(cb, ms, ...args);
  };
  globalThis.setTimeout = patched as unknown as typeof setTimeout;
  try {
    return await fn();
  } finally {
    globalThis.setTimeout = real;
  }
}

describe("busy (429)", () => {
  test("retried after a short wait that doubles, each within the Retry-After", async () => {
    const log: (string | number)[] = [];
    const busy = () => response(429, BUSY, { "retry-after": "1" });
    const b = await CloudRunSandboxBackend.create({
      url: "http://fake.invalid",
      fetch: fetchAnswering(log, busy, busy, () => response(200, '{"ok":true,"value":"third"}')),
    });
    assert.deepEqual(await recordingWaits(log, () => evaluate(b)), { ok: true, value: "third" });
    assert.equal(log.length, 5, `attempts and waits: ${log.join(", ")}`);
    const [f1, w1, f2, w2, f3] = log;
    assert.deepEqual([f1, f2, f3], ["fetch", "fetch", "fetch"]);
    assert.ok(typeof w1 === "number" && w1 >= 10 && w1 <= 25, `the first wait is 10 to 25 ms, got ${w1}`);
    assert.equal(w2, 2 * w1, "the second wait is twice the first");
  });

  // Each case: the 429's Retry-After, and the bound every wait stays within.
  const bounds: [string, Record<string, string>, number][] = [
    ["without a Retry-After: at most 1 s", {}, 1000],
    ["Retry-After: 1", { "retry-after": "1" }, 1000],
    ["Retry-After: 2", { "retry-after": "2" }, 2000],
  ];
  for (const [name, headers, bound] of bounds) {
    test(`the waits double up to their bound, ${name}`, async () => {
      const log: (string | number)[] = [];
      const busy = () => response(429, BUSY, headers);
      const answers = [...Array(10).fill(busy), () => response(200, '{"ok":true,"value":1}')];
      const b = await CloudRunSandboxBackend.create({ url: "http://fake.invalid", fetch: fetchAnswering(log, ...answers) });
      assert.deepEqual(await recordingWaits(log, () => evaluate(b), true), { ok: true, value: 1 });
      assert.equal(log.filter((x) => x === "fetch").length, 11);
      const waits = log.filter((x): x is number => typeof x === "number");
      assert.equal(waits.length, 10);
      for (let i = 1; i < waits.length; i++) {
        assert.equal(waits[i], Math.min(2 * waits[i - 1]!, bound), `waits ${waits.join(", ")}`);
      }
      assert.equal(waits.at(-1), bound, `the waits reach their bound: ${waits.join(", ")}`);
    });
  }

  test("an HTTP-date Retry-After bounds the waits as its delay does", async () => {
    const log: (string | number)[] = [];
    const busy = () => response(429, BUSY, { "retry-after": new Date(Date.now() + 3000).toUTCString() });
    const answers = [...Array(10).fill(busy), () => response(200, '{"ok":true,"value":1}')];
    const b = await CloudRunSandboxBackend.create({ url: "http://fake.invalid", fetch: fetchAnswering(log, ...answers) });
    assert.deepEqual(await recordingWaits(log, () => evaluate(b), true), { ok: true, value: 1 });
    const waits = log.filter((x): x is number => typeof x === "number");
    assert.ok(waits.every((w) => w <= 3000), `waits ${waits.join(", ")}`);
    assert.ok(waits.at(-1)! > 1000, `the date, not the 1 s default, bounds the waits: ${waits.join(", ")}`);
  });

  test("Retry-After: 0 still leaves 10 ms between attempts", async () => {
    const log: (string | number)[] = [];
    const busy = () => response(429, BUSY, { "retry-after": "0" });
    const answers = [...Array(5).fill(busy), () => response(200, '{"ok":true,"value":1}')];
    const b = await CloudRunSandboxBackend.create({ url: "http://fake.invalid", fetch: fetchAnswering(log, ...answers) });
    assert.deepEqual(await recordingWaits(log, () => evaluate(b), true), { ok: true, value: 1 });
    assert.deepEqual(log.filter((x) => typeof x === "number"), [10, 10, 10, 10, 10]);
  });

  test("busy past the request's deadline: given up before the wait that would pass it", async () => {
    const f = await fake(problem(429, "Busy", "this instance is busy", { "retry-after": "5" }));
    const m = assertInfrastructure(
      await evaluate(await backendFor(f, { timeoutGraceMs: 300 }), { limits: { wallClockMs: 100, memoryBytes: 1 << 24 } }),
      "HTTP 429: Busy: this instance is busy: busy after ",
      "would pass the request's deadline",
    );
    const attempts = Number(/busy after (\d+) attempts/.exec(m)?.[1]);
    assert.ok(attempts > 1, `retried before giving up: ${m}`);
    assert.equal(f.evaluations(), attempts);
  });

  test("retryBusy: false reports the 429 at once", async () => {
    const f = await fake(problem(429, "Busy", "busy", { "retry-after": "1" }));
    assertInfrastructure(await evaluate(await backendFor(f, { retryBusy: false })), "HTTP 429: Busy");
    assert.equal(f.evaluations(), 1);
  });

  test("an abort during the wait rejects with the reason", async () => {
    const f = await fake(problem(429, "Busy", "busy", { "retry-after": "10" }));
    const reason = new Error("enough");
    await assert.rejects(evaluate(await backendFor(f), { signal: AbortSignal.timeout(200), limits: { wallClockMs: 20000, memoryBytes: 1 << 24 } }), (e) => (e as Error).name === "TimeoutError");
    const ac = new AbortController();
    setTimeout(() => ac.abort(reason), 100);
    await assert.rejects(evaluate(await backendFor(f), { signal: ac.signal, limits: { wallClockMs: 20000, memoryBytes: 1 << 24 } }), (e) => e === reason);
  });
});

describe("aborts", () => {
  test("an aborted signal sends nothing", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const reason = new Error("before");
    await assert.rejects(evaluate(await backendFor(f), { signal: AbortSignal.abort(reason) }), (e) => e === reason);
    assert.equal(f.evaluations(), 0);
  });

  test("an abort while the body arrives", async () => {
    const f = await fake((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"ok":true,"value":');
    });
    const ac = new AbortController();
    const reason = new Error("mid-body");
    setTimeout(() => ac.abort(reason), 150);
    await assert.rejects(evaluate(await backendFor(f), { signal: ac.signal }), (e) => e === reason);
  });

  test("cancellation wins over an outcome that arrived", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const ac = new AbortController();
    const reason = new Error("late");
    const b = await backendFor(f, {
      fetch: async (u, init) => {
        const r = await fetch(u, init);
        if (u.endsWith("/v1/sandbox/evaluate")) ac.abort(reason);
        return r;
      },
    });
    await assert.rejects(evaluate(b, { signal: ac.signal }), (e) => e === reason);
  });

  test("close() aborts a request in flight and stops further use", async () => {
    const f = await fake(() => {});
    const b = await backendFor(f);
    const pending = evaluate(b);
    await new Promise((r) => setTimeout(r, 100));
    await b.close();
    assertInfrastructure(await pending, "the backend was closed while the request was in flight");
    assertInfrastructure(await evaluate(b), "the backend is closed");
    assert.equal(f.evaluations(), 1);
  });
});

describe("the request", () => {
  test("POSTs exactly {script, inputJson, limits} as JSON, a fractional wall clock rounded up", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    await evaluate(await backendFor(f), { script: "input.a", inputJson: '{"a":1}', limits: { wallClockMs: 1200.2, memoryBytes: 1 << 24 } });
    assert.deepEqual(f.seen, ["GET /v1/capabilities", "POST /v1/sandbox/evaluate"]);
    assert.deepEqual(JSON.parse(f.bodies[1]!), { script: "input.a", inputJson: '{"a":1}', limits: { wallClockMs: 1201, memoryBytes: 1 << 24 } });
    assert.equal(f.headers[1]!["content-type"], "application/json");
    assert.equal(f.headers[1]!.authorization, undefined);
  });

  test("a path prefix in the URL is kept", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const b = await CloudRunSandboxBackend.create({ url: `${f.url}/sandbox/` });
    assert.equal(b.url, `${f.url}/sandbox`);
    await evaluate(b);
    await b.warm().catch(() => {});
    assert.deepEqual(f.seen, ["GET /sandbox/v1/capabilities", "POST /sandbox/v1/sandbox/evaluate", "GET /sandbox/readyz"]);
  });

  test("refused here, nothing sent: bad limits, bad types, a lone surrogate in the input text", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const b = await backendFor(f);
    const bad: [unknown, string][] = [
      [{ ...REQ, limits: { wallClockMs: 0, memoryBytes: 1 } }, "invalid limits"],
      [{ ...REQ, limits: { wallClockMs: 1, memoryBytes: 0 } }, "invalid limits"],
      [{ ...REQ, limits: { wallClockMs: -1, memoryBytes: 1 } }, "invalid limits"],
      [{ ...REQ, limits: { wallClockMs: NaN, memoryBytes: 1 } }, "invalid limits"],
      [{ ...REQ, limits: { wallClockMs: Infinity, memoryBytes: 1 } }, "invalid limits"],
      [{ ...REQ, limits: { wallClockMs: 1, memoryBytes: 1.5 } }, "invalid limits"],
      [{ ...REQ, limits: { wallClockMs: "100", memoryBytes: 1 } }, "invalid limits"],
      [{ ...REQ, limits: undefined }, "limits must be an object"],
      [{ ...REQ, script: 5 }, "script must be a string"],
      [{ ...REQ, inputJson: undefined }, "inputJson must be a string"],
      [{ ...REQ, inputJson: '"\uDC00"' }, "the input has a lone surrogate"],
      [{ ...REQ, signal: { aborted: "no" } }, "signal is not an AbortSignal"],
      [null, "invalid request"],
    ];
    for (const [req, fragment] of bad) {
      assertInfrastructure(await b.evaluate(req as SandboxRequest), "sandbox service client: ", fragment);
    }
    assert.equal(f.evaluations(), 0);
  });
});

describe("answers no retry can change (docs/spi.md) are the service's", () => {
  // The golden capabilities document: maxWallClockMs 30000, minMemoryBytes
  // 262144, maxMemoryBytes 268435456, maxInputBytes and maxScriptBytes
  // 1048576, maxRequestBytes 16777216.
  const L = CAPABILITIES.limits as Record<string, number>;

  test("a request over the service's bounds is sent as it is, limits and all", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const b = await backendFor(f);
    const requests: SandboxRequest[] = [
      { ...REQ, limits: { wallClockMs: 999_999, memoryBytes: 2 ** 40 } },
      { ...REQ, limits: { wallClockMs: 1000, memoryBytes: L.minMemoryBytes! - 1 } },
      { ...REQ, inputJson: JSON.stringify("é".repeat(L.maxInputBytes! / 2)) },
      { ...REQ, script: "1;" + " ".repeat(L.maxScriptBytes!) },
    ];
    for (const req of requests) assert.deepEqual(await evaluate(b, req), { ok: true, value: 1 }, "the service's answer");
    assert.deepEqual(
      f.bodies.slice(1).map((body) => JSON.parse(body)),
      requests.map(({ script, inputJson, limits }) => ({ script, inputJson, limits })),
    );
  });

  // A body over maxRequestBytes, which the service cannot read, is answered
  // here by the service's rule: api/testdata/bounds/settled.json, the table
  // of spi.Bounds that the Go tests check the service against.
  interface SettledCase {
    name: string;
    bounds: { maxScriptBytes?: number; minMemoryBytes?: number; maxInputBytes?: number };
    scriptBytes: number;
    memoryBytes: number;
    inputBytes: number;
    outcome: SandboxOutcome | null;
  }
  const table = JSON.parse(readFileSync(new URL("../../../api/testdata/bounds/settled.json", import.meta.url), "utf8")) as SettledCase[];
  for (const c of table) {
    // by reference, or the service's default memory: neither is a request of this backend
    if (c.scriptBytes < 0 || c.memoryBytes === 0) continue;
    test(`a body the service cannot read is answered by its rule: ${c.name}`, async () => {
      const limits: Record<string, number> = { maxRequestBytes: 1, ...c.bounds };
      const f = await fake(answer(200, '{"ok":true,"value":1}'), { ...CAPABILITIES, limits });
      const reports: RunReport[] = [];
      const b = await backendFor(f, { onRun: (r) => reports.push(r) });
      const out = await evaluate(b, {
        script: "1;" + " ".repeat(c.scriptBytes - 2),
        inputJson: JSON.stringify("i".repeat(c.inputBytes - 2)),
        limits: { wallClockMs: 1000, memoryBytes: c.memoryBytes },
      });
      assert.deepEqual(out, c.outcome ?? { ok: true, value: 1 });
      assert.equal(f.evaluations(), c.outcome === null ? 1 : 0, "sent only when the rule leaves it to a run");
      assert.equal(reports.length, f.evaluations(), "onRun reports answers of the service only");
    });
  }

  test("a body the service cannot read is measured as the service measures it: UTF-8 bytes, a lone surrogate as three", async () => {
    const max = L.maxScriptBytes!;
    const f = await fake(answer(200, '{"ok":true,"value":1}'), { ...CAPABILITIES, limits: { ...L, maxRequestBytes: 1 } });
    const b = await backendFor(f);
    assert.deepEqual(await evaluate(b, { script: "'\uD800'" + "😀".repeat(max / 4) }), {
      ok: false,
      kind: "threw",
      name: "RangeError",
      message: `the script is ${max + 5} bytes, over the service's maxScriptBytes of ${max}`,
    });
    assert.deepEqual(await evaluate(b, { inputJson: JSON.stringify("é".repeat(L.maxInputBytes! / 2)) }), { ok: false, kind: "inputTooLarge" });
    // at the bounds, the rule leaves it to a run: sent, and the service's 413 is its answer
    const script = "1;" + "😀".repeat((max - 4) / 4) + "  ";
    assert.equal(Buffer.byteLength(script), max);
    await evaluate(b, { script, inputJson: JSON.stringify("é".repeat(L.maxInputBytes! / 2 - 1)) });
    assert.equal(f.evaluations(), 1);
  });

  test("a body within maxRequestBytes is sent however its escapes swell it", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const b = await backendFor(f);
    const script = "'" + "\u0001".repeat(L.maxScriptBytes! - 2) + "'";
    assert.deepEqual(await evaluate(b, { script }), { ok: true, value: 1 });
    assert.ok(f.bodies[1]!.length > 6 * L.maxScriptBytes! - 100, "every control character written as a six-byte escape");
  });
});

describe("onRun, captureLogs and requestId", () => {
  const ANSWER = `{"ok":false,"kind":"threw","name":"Error","message":"x","logs":"hi\\n","usage":${usage({ peakMemoryBytes: 7 })}}`;

  test("captureLogs is asked for when onRun is given, unless captureLogs says otherwise", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const sent = async (opts: Partial<CloudRunSandboxBackendOptions>) => {
      await evaluate(await backendFor(f, opts));
      return JSON.parse(f.bodies.at(-1)!).captureLogs;
    };
    assert.equal(await sent({}), undefined);
    assert.equal(await sent({ onRun: () => {} }), true);
    assert.equal(await sent({ onRun: () => {}, captureLogs: false }), undefined);
    assert.equal(await sent({ captureLogs: true }), true);
  });

  test("onRun gets the logs, the usage, the request id and the outcome, once, before evaluate resolves", async () => {
    const f = await fake(answer(200, ANSWER, "application/json", { "x-request-id": "svc-42" }));
    const order: string[] = [];
    const reports: RunReport[] = [];
    const b = await backendFor(f, {
      onRun: (r) => {
        order.push("onRun");
        reports.push(r);
      },
    });
    const out = await evaluate(b);
    order.push("resolved");
    assert.deepEqual(order, ["onRun", "resolved"]);
    assert.deepEqual(out, { ok: false, kind: "threw", name: "Error", message: "x" });
    assert.equal(reports.length, 1);
    const r = reports[0]!;
    assert.equal(r.outcome, out);
    assert.equal(r.requestId, "svc-42");
    assert.equal(r.logs, "hi\n");
    assert.equal(r.usage?.peakMemoryBytes, 7);
    assert.deepEqual(r.usage?.phasesMs, { fetch: 0, verify: 0, setup: 0, compile: 0, run: 0, serialise: 0 });
  });

  test("a problem answer is reported too, with the service's request id and no usage", async () => {
    const f = await fake(problem(400, "Invalid limits", "d", { "x-request-id": "svc-7" }));
    const reports: RunReport[] = [];
    const out = await evaluate(await backendFor(f, { onRun: (r) => reports.push(r) }));
    assertInfrastructure(out, "HTTP 400");
    assert.deepEqual(reports, [{ requestId: "svc-7", outcome: out }]);
  });

  test("not reported: no answer from the service, or the caller's abort", async () => {
    const reports: RunReport[] = [];
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const b = await backendFor(f, { onRun: (r) => reports.push(r) });
    await f.close();
    assertInfrastructure(await evaluate(b), "ECONNREFUSED");
    const slow = await fake(() => {});
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("gone")), 50);
    await assert.rejects(evaluate(await backendFor(slow, { onRun: (r) => reports.push(r) }), { signal: ac.signal }));
    assert.deepEqual(reports, []);
  });

  test("a hook that throws, or rejects, changes nothing", async () => {
    const f = await fake(answer(200, ANSWER));
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      const throwing = await backendFor(f, {
        onRun: () => {
          throw new Error("hook bug");
        },
      });
      assert.deepEqual(await evaluate(throwing), { ok: false, kind: "threw", name: "Error", message: "x" });
      const rejecting = await backendFor(f, { onRun: async () => Promise.reject(new Error("async hook bug")) });
      assert.deepEqual(await evaluate(rejecting), { ok: false, kind: "threw", name: "Error", message: "x" });
      const asyncId = await backendFor(f, { requestId: (async () => Promise.reject(new Error("async id bug"))) as never });
      assert.deepEqual(await evaluate(asyncId), { ok: false, kind: "threw", name: "Error", message: "x" });
      assert.equal(f.headers.at(-1)!["x-request-id"], undefined, "a promise is no id");
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  test("the report cannot be changed by the hook", async () => {
    const f = await fake(answer(200, ANSWER));
    const b = await backendFor(f, {
      onRun: (r) => {
        assert.throws(() => ((r as { requestId: string }).requestId = "x"), TypeError);
        assert.throws(() => ((r.usage as { cpuMs: number }).cpuMs = 1), TypeError);
      },
    });
    await evaluate(b);
  });

  test("requestId: a well-formed id is sent as X-Request-Id and reported when the answer has none", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const reports: RunReport[] = [];
    const seen: SandboxRequest[] = [];
    let id: unknown = "loom-run.1_~a";
    const b = await backendFor(f, {
      onRun: (r) => reports.push(r),
      requestId: (req) => {
        seen.push(req);
        if (id instanceof Error) throw id;
        return id as string;
      },
    });
    await evaluate(b);
    assert.equal(f.headers.at(-1)!["x-request-id"], "loom-run.1_~a");
    assert.equal(reports.at(-1)!.requestId, "loom-run.1_~a");
    assert.equal(seen[0]!.script, REQ.script, "the hook gets the caller's request");
    for (const bad of ["", "a b", "x".repeat(129), "é", "a\r\nX-Evil: 1", 5, new Error("hook bug")]) {
      id = bad;
      assert.deepEqual(await evaluate(b), { ok: true, value: 1 });
      assert.equal(f.headers.at(-1)!["x-request-id"], undefined, `sent ${String(bad)}`);
      assert.equal(reports.at(-1)!.requestId, "");
    }
  });

  test("the service's request id wins over the one sent; a malformed one is not reported", async () => {
    let header = "svc-1";
    const f = await fake(answer(200, '{"ok":true,"value":1}', "application/json", {}));
    const reports: RunReport[] = [];
    const b = await backendFor(f, {
      onRun: (r) => reports.push(r),
      requestId: () => "mine",
      fetch: async (u, init) => {
        const r = await fetch(u, init);
        const get = (name: string) => (name.toLowerCase() === "x-request-id" ? header : r.headers.get(name));
        return { status: r.status, headers: { get }, body: r.body };
      },
    });
    await evaluate(b);
    assert.equal(reports.at(-1)!.requestId, "svc-1");
    header = "not well formed";
    await evaluate(b);
    assert.equal(reports.at(-1)!.requestId, "mine");
  });
});

describe("the ID token", () => {
  const TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl";

  test("sent as a bearer token to every route, for the URL's origin; blanked in messages", async () => {
    const f = await fake((req, res) => {
      // A server that echoes the credentials it got (a misbehaving proxy).
      problem(401, "Unauthenticated", `bad token ${req.headers.authorization}`)(req, res, "");
    });
    const audiences: string[] = [];
    const b = await backendFor(f, {
      idToken: async (aud) => {
        audiences.push(aud);
        return TOKEN;
      },
    });
    const m = assertInfrastructure(await evaluate(b), "HTTP 401: Unauthenticated: bad token Bearer [token]");
    assert.ok(!m.includes(TOKEN));
    await assert.rejects(b.warm(), (e) => e instanceof CloudRunSandboxError && !e.message.includes(TOKEN) && e.message.includes("[token]"));
    assert.deepEqual(audiences, [f.url, f.url, f.url], "asked once per request, for the origin");
    for (const h of f.headers) assert.equal(h.authorization, `Bearer ${TOKEN}`);
    assert.ok(!JSON.stringify(b).includes(TOKEN));
  });

  test("a custom audience", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    let got = "";
    const b = await backendFor(f, {
      audience: "https://sandbox-abc-uc.a.run.app",
      idToken: async (aud) => {
        got = aud;
        return TOKEN;
      },
    });
    await evaluate(b);
    assert.equal(got, "https://sandbox-abc-uc.a.run.app");
  });

  test("a failing or malformed token is infrastructure, and nothing is sent", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    let mode: "throw" | "header" | "empty" | "ok" = "ok";
    const b = await backendFor(f, {
      idToken: async () => {
        if (mode === "throw") throw new Error("metadata server unreachable");
        if (mode === "header") return "abc\r\nX-Evil: 1";
        if (mode === "empty") return "";
        return TOKEN;
      },
    });
    mode = "throw";
    assertInfrastructure(await evaluate(b), "ID token: metadata server unreachable");
    mode = "header";
    assertInfrastructure(await evaluate(b), "ID token: the hook returned an empty or malformed token");
    mode = "empty";
    assertInfrastructure(await evaluate(b), "ID token: the hook returned an empty or malformed token");
    assert.equal(f.evaluations(), 0);
  });
});

describe("create()", () => {
  const doc = (patch: (d: typeof CAPABILITIES & Record<string, unknown>) => void) => {
    const d = structuredClone(CAPABILITIES) as typeof CAPABILITIES & Record<string, unknown>;
    patch(d);
    return d;
  };

  test("accepts a later minor version and members it does not know outside the declaration", async () => {
    const f = await fake(
      () => {},
      doc((d) => {
        d.spiVersion = "1.7.3-rc.1";
        d.future = { x: 1 };
        (d.limits as Record<string, unknown>).maxLogBytes = 65536;
      }),
    );
    const b = await backendFor(f);
    assert.equal(b.spiVersion, "1.7.3-rc.1");
    assert.equal(b.limits.maxLogBytes, 65536);
    assert.ok(Object.isFrozen(b.capabilities) && Object.isFrozen(b.limits) && Object.isFrozen(b.engine));
  });

  test("the declaration holds exactly ADR 0144 D4's six capabilities, frozen", async () => {
    const f = await fake(() => {});
    const b = await backendFor(f);
    assert.deepEqual(Object.keys(b.capabilities).sort(), ["cpu", "freshPerRun", "language", "memory", "network", "wallClock"]);
    assert.throws(() => {
      (b.capabilities as { freshPerRun: boolean }).freshPerRun = false;
    }, TypeError);
    assert.throws(() => {
      (b as unknown as { capabilities: unknown }).capabilities = {};
    }, TypeError);
    assert.equal(b.capabilities.freshPerRun, true);
  });

  test("refuses another major SPI version", async () => {
    for (const v of ["2.0.0", "0.9.0"]) {
      const f = await fake(() => {}, doc((d) => (d.spiVersion = v)));
      await assert.rejects(backendFor(f), (e) => {
        assert.ok(e instanceof CloudRunSandboxError);
        assert.equal(e.code, "incompatible-spi");
        assert.match(e.message, new RegExp(`implements "${v}", this client 1\\.0\\.0`));
        return true;
      });
    }
  });

  const invalid: [string, unknown, string][] = [
    ["not a semantic version", doc((d) => (d.spiVersion = "v1")), "is not a semantic version"],
    ["no spiVersion", doc((d) => delete (d as Record<string, unknown>).spiVersion), '"spiVersion": missing'],
    ["a capability it cannot vouch for", doc((d) => ((d.capabilities as Record<string, unknown>).gpu = true)), '"capabilities"."gpu": unknown member'],
    ["a network outside the set", doc((d) => ((d.capabilities as Record<string, unknown>).network = "sometimes")), "must be one of none, allowlist, open"],
    ["a missing capability", doc((d) => delete (d.capabilities as Record<string, unknown>).freshPerRun), '"freshPerRun": missing'],
    ["a string for a boolean", doc((d) => ((d.capabilities as Record<string, unknown>).memory = "true")), '"memory": must be a boolean'],
    ["an empty language", doc((d) => (d.capabilities.language = "")), '"language": must not be empty'],
    ["a negative limit", doc((d) => (d.limits.maxWallClockMs = -1)), '"maxWallClockMs": must be a non-negative integer'],
    ["a fractional limit", doc((d) => (d.limits.maxMemoryBytes = 1.5)), '"maxMemoryBytes": must be a non-negative integer'],
    ["a bad engine hash", doc((d) => (d.engine.wasmSha256 = "ABC")), "must be 64 lowercase hex digits"],
    ["an unknown engine member", doc((d) => ((d.engine as Record<string, unknown>).build = "x")), '"engine"."build": unknown member'],
    ["an array", [CAPABILITIES], "a JSON object is required"],
    ["garbage", "not json", "not JSON"],
    ["a duplicate member", JSON.stringify(CAPABILITIES).replace('"network":"none"', '"network":"none","network":"open"'), '"network": duplicate member'],
  ];
  for (const [name, body, fragment] of invalid) {
    test(`refuses an invalid document: ${name}`, async () => {
      const f = await fake(() => {}, body);
      await assert.rejects(backendFor(f), (e) => {
        assert.ok(e instanceof CloudRunSandboxError, String(e));
        assert.equal(e.code, "invalid-capabilities");
        assert.ok(e.message.includes(fragment), `${e.message} lacks ${fragment}`);
        return true;
      });
    });
  }

  test("takes limits that publish none of the bounds, and sends what it is given", async () => {
    const f = await fake(
      answer(200, '{"ok":true,"value":1}'),
      doc((d) => {
        d.limits = {};
      }),
    );
    const b = await backendFor(f);
    await evaluate(b, { script: " ".repeat(2 << 20), inputJson: JSON.stringify("x".repeat(2 << 20)), limits: { wallClockMs: 1000, memoryBytes: 1 } });
    assert.equal(f.evaluations(), 1);
  });

  test("refuses a document of another content type", async () => {
    const f = await fake(() => {}, CAPABILITIES, "text/html");
    await assert.rejects(backendFor(f), (e) => e instanceof CloudRunSandboxError && e.code === "invalid-capabilities" && /Content-Type/.test(e.message));
  });

  test("a service that is not up: unavailable, with the status", async () => {
    const h = await raw(problem(503, "Not ready", "engine warming", { "retry-after": "1" }));
    await assert.rejects(CloudRunSandboxBackend.create({ url: h.url }), (e) => {
      assert.ok(e instanceof CloudRunSandboxError);
      assert.equal(e.code, "unavailable");
      assert.equal(e.status, 503);
      assert.match(e.message, /GET \/v1\/capabilities: HTTP 503: Not ready: engine warming/);
      return true;
    });
  });

  test("invalid options are refused before any request", async () => {
    const f = await fake(() => {});
    const bad: [Partial<CloudRunSandboxBackendOptions>, string][] = [
      [{ url: "" }, "url must be a non-empty string"],
      [{ url: "not a url" }, "is not a URL"],
      [{ url: "ftp://example.com" }, "scheme must be http or https"],
      [{ url: `http://user:pw@127.0.0.1:1` }, "must not carry credentials"],
      [{ url: `${f.url}/?q=1` }, "must not have a query or fragment"],
      [{ url: `${f.url}/?` }, "must not have a query or fragment"],
      [{ url: `${f.url}/#x` }, "must not have a query or fragment"],
      [{ url: f.url, timeoutGraceMs: -1 }, "timeoutGraceMs must be a finite number >= 0"],
      [{ url: f.url, timeoutGraceMs: Infinity }, "timeoutGraceMs must be a finite number >= 0"],
      [{ url: f.url, timeoutGraceMs: NaN }, "timeoutGraceMs must be a finite number >= 0"],
      [{ url: f.url, maxResponseBytes: 0 }, "maxResponseBytes must be a positive integer"],
      [{ url: f.url, fetch: "no" as never }, "fetch must be a function"],
      [{ url: f.url, idToken: "token" as never }, "idToken must be a function"],
      [{ url: f.url, audience: "" }, "audience must be a non-empty string"],
      [{ url: f.url, retryBusy: "yes" as never }, "retryBusy must be a boolean"],
      [{ url: f.url, onRun: "log" as never }, "onRun must be a function"],
      [{ url: f.url, captureLogs: 1 as never }, "captureLogs must be a boolean"],
      [{ url: f.url, requestId: "id" as never }, "requestId must be a function"],
    ];
    for (const [opts, fragment] of bad) {
      await assert.rejects(CloudRunSandboxBackend.create(opts as CloudRunSandboxBackendOptions), (e) => {
        assert.ok(e instanceof CloudRunSandboxError, String(e));
        assert.equal(e.code, "invalid-options");
        assert.ok(e.message.includes(fragment), `${e.message} lacks ${fragment}`);
        return true;
      });
    }
    assert.equal(f.seen.length, 0);
  });

  test("an aborted signal rejects with its reason", async () => {
    const f = await fake(() => {});
    const reason = new Error("no");
    await assert.rejects(backendFor(f, { signal: AbortSignal.abort(reason) }), (e) => e === reason);
    assert.equal(f.seen.length, 0);
  });

  test("a capabilities route that never answers times out", async () => {
    const h = await raw(() => {});
    const t0 = Date.now();
    await assert.rejects(CloudRunSandboxBackend.create({ url: h.url, timeoutGraceMs: 0 }), (e) => {
      assert.ok(e instanceof CloudRunSandboxError);
      assert.equal(e.code, "unavailable");
      assert.match(e.message, /no answer within 1000 ms/);
      return true;
    });
    assert.ok(Date.now() - t0 >= 990);
  });
});

describe("determinism", () => {
  test("every evaluate's body carries the member as configured, after the others", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const sent = async (determinism: CloudRunSandboxBackendOptions["determinism"]) => {
      const b = await backendFor(f, determinism === undefined ? {} : { determinism });
      await evaluate(b);
      await evaluate(b);
      const [first, second] = f.bodies.slice(-2);
      assert.equal(first, second, "each evaluate sends the same member");
      return first!;
    };
    const cases: [CloudRunSandboxBackendOptions["determinism"], string | undefined][] = [
      [undefined, undefined],
      [false, undefined],
      [true, "{}"],
      [{}, "{}"],
      [{ seed: "flow-42/step-3" }, '{"seed":"flow-42/step-3"}'],
      [{ now: "2026-12-02T08:16:17.5+01:00" }, '{"now":"2026-12-02T08:16:17.5+01:00"}'],
      // a Date as the Go encoder writes an instant: UTC, the shortest fraction
      [{ now: new Date(Date.UTC(2026, 11, 2, 7, 16, 17, 500)) }, '{"now":"2026-12-02T07:16:17.5Z"}'],
      [{ now: new Date(Date.UTC(2026, 11, 2, 7, 16, 17)), seed: "s" }, '{"seed":"s","now":"2026-12-02T07:16:17Z"}'],
      [{ now: new Date(Date.UTC(2026, 11, 2, 7, 16, 17, 120)) }, '{"now":"2026-12-02T07:16:17.12Z"}'],
      [{ seed: "s".repeat(128), now: "1970-01-01T00:00:00Z" }, `{"seed":"${"s".repeat(128)}","now":"1970-01-01T00:00:00Z"}`],
      [{ seed: "é 😀", now: "2262-04-11T23:47:16.000Z" }, '{"seed":"é 😀","now":"2262-04-11T23:47:16.000Z"}'],
      [{ now: new Date(Date.UTC(2262, 3, 11, 23, 47, 16)) }, '{"now":"2262-04-11T23:47:16Z"}'],
      [{ now: new Date(0) }, '{"now":"1970-01-01T00:00:00Z"}'],
    ];
    for (const [option, member] of cases) {
      const body = await sent(option);
      const got = (JSON.parse(body) as { determinism?: unknown }).determinism;
      assert.equal(got === undefined ? undefined : JSON.stringify(got), member, `${JSON.stringify(option)}: ${body}`);
      if (member !== undefined) assert.ok(body.endsWith(`,"determinism":${member}}`), `${body} does not end with the member`);
    }
    // with captureLogs, the member comes last, as the Go encoder writes it
    const b = await backendFor(f, { determinism: true, captureLogs: true });
    await evaluate(b);
    assert.ok(f.bodies.at(-1)!.endsWith(`,"captureLogs":true,"determinism":{}}`), f.bodies.at(-1));
  });

  test("backend.determinism is what every evaluate sends, frozen", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    assert.equal((await backendFor(f)).determinism, undefined);
    assert.equal((await backendFor(f, { determinism: false })).determinism, undefined);
    const b = await backendFor(f, { determinism: { seed: "s", now: new Date(Date.UTC(2026, 11, 2, 7, 16, 17)) } });
    assert.deepEqual(b.determinism, { seed: "s", now: "2026-12-02T07:16:17Z" });
    assert.ok(Object.isFrozen(b.determinism));
    assert.deepEqual((await backendFor(f, { determinism: true })).determinism, {});
  });

  test("a seed or an instant the service would refuse is refused by create(), before any request", async () => {
    const f = await fake(answer(200, '{"ok":true,"value":1}'));
    const bad: [unknown, string][] = [
      ["yes", "determinism must be a boolean or an object { seed?, now? }"],
      [1, "determinism must be a boolean or an object"],
      [null, "determinism must be a boolean or an object"],
      [[{ seed: "s" }], "determinism must be a boolean or an object"],
      [new Date(0), "determinism must be a boolean or an object"],
      [{ seed: "s", clock: "frozen" }, 'determinism has the unknown member "clock"; it takes seed and now'],
      [{ seed: "" }, "determinism.seed must not be empty: leave it out"],
      [{ seed: 42 }, "determinism.seed must be a string, got number"],
      [{ seed: null }, "determinism.seed must be a string, got null"],
      [{ seed: "s".repeat(129) }, "determinism.seed is 129 bytes, over the 128 a seed may have"],
      [{ seed: "é".repeat(65) }, "determinism.seed is 130 bytes"],
      [{ seed: "step\t3" }, "determinism.seed has the control character U+0009"],
      [{ seed: "step\u007f" }, "determinism.seed has the control character U+007F"],
      [{ seed: "\u0000" }, "determinism.seed has the control character U+0000"],
      [{ seed: "a\uD800" }, "determinism.seed is not valid UTF-8"],
      [{ now: "yesterday" }, 'determinism.now must be an RFC 3339 instant such as "2000-01-01T00:00:00Z", got "yesterday"'],
      [{ now: "2026-12-02T07:16:17" }, "must be an RFC 3339 instant"],
      [{ now: "2026-12-02 07:16:17Z" }, "must be an RFC 3339 instant"],
      [{ now: "2026-12-02t07:16:17z" }, "must be an RFC 3339 instant"],
      [{ now: "2026-12-02T7:16:17Z" }, "must be an RFC 3339 instant"],
      [{ now: "2026-12-02T07:16:17,5Z" }, "must be an RFC 3339 instant"],
      [{ now: "2026-12-02T07:16:17+24:00" }, "must be an RFC 3339 instant"],
      [{ now: "2026-02-29T00:00:00Z" }, "must be an RFC 3339 instant"],
      [{ now: "2026-13-01T00:00:00Z" }, "must be an RFC 3339 instant"],
      [{ now: "2026-12-02T24:00:00Z" }, "must be an RFC 3339 instant"],
      [{ now: "2026-12-31T23:59:60Z" }, "must be an RFC 3339 instant"],
      [{ now: 946684800000 }, "determinism.now must be a string or a Date, got number"],
      [{ now: new Date(NaN) }, "determinism.now is an invalid Date"],
      [{ now: "1969-12-31T23:59:59Z" }, 'determinism.now "1969-12-31T23:59:59Z" is outside 1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z'],
      [{ now: "1969-12-31T23:59:59.999Z" }, "is outside 1970-01-01T00:00:00Z"],
      [{ now: "1970-01-01T00:30:00+01:00" }, "is outside 1970-01-01T00:00:00Z"],
      [{ now: new Date(-1) }, "determinism.now 1969-12-31T23:59:59.999Z is outside"],
      [{ now: "2262-04-11T23:47:16.000000001Z" }, "is outside 1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z"],
      [{ now: "2262-04-11T23:47:17Z" }, "is outside"],
      [{ now: "2262-04-11T23:47:16-00:01" }, "is outside"],
      [{ now: new Date(Date.UTC(2262, 3, 11, 23, 47, 16, 1)) }, "is outside"],
    ];
    for (const [determinism, fragment] of bad) {
      await assert.rejects(backendFor(f, { determinism: determinism as never }), (e) => {
        assert.ok(e instanceof CloudRunSandboxError, String(e));
        assert.equal(e.code, "invalid-options");
        assert.ok(e.message.includes(fragment), `${JSON.stringify(determinism)}: ${e.message} lacks ${fragment}`);
        return true;
      });
    }
    assert.equal(f.seen.length, 0);
    // the edges of the range, in any offset, and a leap day are taken
    for (const now of ["1970-01-01T01:00:00+01:00", "1969-12-31T23:00:00-01:00", "2262-04-11T22:47:16-01:00", "2000-02-29T00:00:00Z"]) {
      await backendFor(f, { determinism: { now } });
    }
  });

  test("a service whose capabilities do not offer it: create() refuses the option, not-replayable", async () => {
    const { determinism: _, ...without } = CAPABILITIES;
    for (const [name, caps] of [
      ["determinism false", { ...CAPABILITIES, determinism: false }],
      ["no determinism member", without],
    ] as const) {
      const f = await fake(answer(200, '{"ok":true,"value":1}'), caps);
      await assert.rejects(backendFor(f, { determinism: true }), (e) => {
        assert.ok(e instanceof CloudRunSandboxError, String(e));
        assert.equal(e.code, "not-replayable", name);
        assert.equal(e.status, 200);
        assert.match(e.message, /the options ask for replayable runs \(determinism\) and the service at .* does not make runs replayable/);
        return true;
      });
      // without the option, the same service is used as before
      await evaluate(await backendFor(f));
      assert.deepEqual(f.seen, ["GET /v1/capabilities", "GET /v1/capabilities", "POST /v1/sandbox/evaluate"], name);
    }
  });

  test("a capabilities document whose determinism is not a boolean is invalid", async () => {
    const f = await fake(() => {}, { ...CAPABILITIES, determinism: "yes" });
    await assert.rejects(backendFor(f), (e) => e instanceof CloudRunSandboxError && e.code === "invalid-capabilities" && /"determinism": must be a boolean/.test(e.message));
  });
});

describe("warm()", () => {
  test("resolves on 200, rejects otherwise", async () => {
    let ready = false;
    const f = await fake((req, res) => {
      if (ready) return answer(200, '{"status":"ready"}')(req, res, "");
      problem(503, "Not ready", "the engine is not yet warm", { "retry-after": "1" })(req, res, "");
    });
    const b = await backendFor(f);
    await assert.rejects(b.warm(), (e) => e instanceof CloudRunSandboxError && e.code === "unavailable" && e.status === 503 && /GET \/readyz: HTTP 503: Not ready/.test(e.message));
    ready = true;
    await b.warm();
    assert.deepEqual(f.seen.slice(1), ["GET /readyz", "GET /readyz"]);
  });
});
