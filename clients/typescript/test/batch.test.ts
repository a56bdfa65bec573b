// batch(): one stored script over many inputs (POST /v1/evaluations:batch),
// as the Go client's Batch reads it. Against a local server that answers
// what the real service never would (a cut answer, lines out of order or
// malformed, the wrong content type), and what the package sends; then
// against the real service, built from this repository and started with a
// script store: each input's line is what POST /v1/evaluations answers for
// it alone, a refused batch is the service's problem, and leaving the
// iteration early stops the batch's runs on the service.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  CloudRunSandboxBackend,
  CloudRunSandboxError,
  type BatchLine,
  type BatchRequest,
  type CloudRunSandboxBackendOptions,
} from "@loom-plugins/sandbox-cloudrun";
import { buildService, putScript, startService, type Build, type Service } from "./service.js";

const CAPABILITIES = readFileSync(new URL("../../../api/testdata/capabilities/service.json", import.meta.url), "utf8");
const REF = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";
const MiB = 1 << 20;

/** The lines a batch yields, and the error that ended them. */
async function collect(lines: AsyncIterable<BatchLine>): Promise<{ lines: BatchLine[]; err?: unknown }> {
  const got: BatchLine[] = [];
  try {
    for await (const l of lines) got.push(l);
  } catch (err) {
    return { lines: got, err };
  }
  return { lines: got };
}

/** Asserts err is a CloudRunSandboxError of code, retryable or not, whose message says each of says. */
function assertError(err: unknown, code: string, retryable: boolean, ...says: (string | RegExp)[]): CloudRunSandboxError {
  assert.ok(err instanceof CloudRunSandboxError, `want a CloudRunSandboxError, got ${String(err)}`);
  assert.equal(err.code, code, err.message);
  assert.equal(err.retryable, retryable, err.message);
  for (const s of says) {
    if (typeof s === "string") assert.ok(err.message.includes(s), `${err.message} does not say ${s}`);
    else assert.match(err.message, s);
  }
  return err;
}

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
  /** Settles when the connection of the request closes. */
  closed: Promise<void>;
}

const servers = new Set<Server>();
after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A server that answers GET /v1/capabilities with the golden document (or capabilities) and every batch with handler. */
async function fake(handler: (res: ServerResponse, seen: Seen) => void, capabilities = CAPABILITIES): Promise<{ url: string; batches: Seen[] }> {
  const batches: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const closed = new Promise<void>((r) => res.once("close", () => r()));
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (req.method === "GET" && path === "/v1/capabilities") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(capabilities);
        return;
      }
      const seen = { method: req.method ?? "", path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), closed };
      batches.push(seen);
      handler(res, seen);
    });
  });
  servers.add(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, batches };
}

/** Answers body, each character a byte (the lines are ASCII, and "\xff" is the byte that is no UTF-8). */
function ndjson(res: ServerResponse, body: string, type = "application/x-ndjson"): void {
  res.writeHead(200, { "content-type": type, "x-request-id": "fake-batch-1" });
  res.end(Buffer.from(body, "latin1"));
}

const USAGE = '{"phasesMs":{"fetch":0,"verify":0,"setup":0,"compile":0,"run":0,"serialise":0},"cpuMs":0,"cpuBudgetUsed":0,"cpuBudget":0,"peakMemoryBytes":0,"memoryLimitBytes":0}';
const line = (i: number) => `{"index":${i},"ok":true,"value":${i},"usage":${USAGE}}\n`;
const summary = (n: number) => `{"summary":{"items":${n},"outcomes":{"ok":${n}},"problems":0,"notRun":0,"usage":${USAGE}}}\n`;

async function open(url: string, opts: Partial<CloudRunSandboxBackendOptions> = {}): Promise<CloudRunSandboxBackend> {
  return CloudRunSandboxBackend.create({ url, ...opts });
}

describe("a batch's answer, read strictly", () => {
  // The Go client's cases (client/batch_test.go, TestBatchReadsStrictly), for two inputs.
  const cases: { name: string; body: string; type?: string; lines: number; code?: string; retryable?: boolean; says?: string }[] = [
    { name: "whole", body: line(0) + line(1) + summary(2), lines: 3 },
    { name: "a later member is ignored", body: line(0) + line(1).replace('"ok":true', '"ok":true,"later":1') + summary(2), lines: 3 },
    { name: "cut before the summary", body: line(0) + line(1), lines: 2, code: "cut", retryable: true, says: "the answer was cut after 2 of 2 inputs' lines, before its summary" },
    { name: "cut inside a line", body: line(0) + line(1).slice(0, 20), lines: 1, code: "cut", retryable: true, says: "reading the answer after 1 lines: the answer ended inside a line" },
    { name: "out of order", body: line(1) + line(0) + summary(2), lines: 0, code: "invalid-answer", retryable: false, says: "line 1 is not input 0's" },
    { name: "summary too early", body: line(0) + summary(1) + line(1), lines: 1, code: "invalid-answer", retryable: false, says: "line 2 is not input 1's" },
    { name: "a summary of other inputs", body: line(0) + line(1) + summary(3), lines: 2, code: "invalid-answer", retryable: false, says: "line 3 is not the summary of 2 inputs" },
    { name: "malformed", body: line(0) + '{"index":1,"ok":"yes"}\n', lines: 1, code: "invalid-answer", retryable: false, says: 'malformed line 2: "ok": must be a boolean' },
    { name: "not UTF-8", body: line(0) + '{"index":1,"ok":true,"value":"\xff"}\n', lines: 1, code: "invalid-answer", retryable: false, says: "malformed line 2" },
    { name: "not NDJSON", body: line(0), type: "application/json", lines: 0, code: "invalid-answer", retryable: false, says: 'response Content-Type is "application/json", want application/x-ndjson' },
  ];
  for (const tc of cases) {
    test(tc.name, async () => {
      const f = await fake((res) => ndjson(res, tc.body, tc.type));
      const got = await collect((await open(f.url)).batch({ scriptRef: REF, inputsJson: ["1", "2"] }));
      assert.equal(got.lines.length, tc.lines, `lines ${JSON.stringify(got.lines)}, error ${String(got.err)}`);
      got.lines.forEach((l, i) => (i < 2 ? assert.deepEqual(l.index, i) : assert.equal(l.summary?.items, 2)));
      if (tc.code === undefined) assert.equal(got.err, undefined);
      else {
        const e = assertError(got.err, tc.code, tc.retryable!, `sandbox service: POST /v1/evaluations:batch: HTTP 200: `, tc.says!);
        assert.equal(e.status, 200);
        assert.equal(e.requestId, "fake-batch-1");
      }
      assert.equal(f.batches.length, 1);
      const [b] = f.batches;
      assert.equal(b!.method, "POST");
      assert.equal(b!.path, "/v1/evaluations:batch");
      assert.match(b!.headers.accept ?? "", /^application\/x-ndjson, application\/problem\+json$/);
      assert.equal(b!.headers["content-type"], "application/json");
      assert.equal(b!.body, `{"scriptRef":"${REF}","inputs":[1,2]}`);
    });
  }

  test("a line is read whatever chunks it arrives in", async () => {
    const body = line(0) + line(1) + summary(2);
    const f = await fake((res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      const parts: string[] = [];
      for (let i = 0; i < body.length; i += 7) parts.push(body.slice(i, i + 7));
      const next = () => (parts.length ? res.write(parts.shift()!, () => setImmediate(next)) : res.end());
      next();
    });
    const got = await collect((await open(f.url)).batch({ scriptRef: REF, inputsJson: ["1", "2"] }));
    assert.equal(got.err, undefined);
    assert.deepEqual(
      got.lines.map((l) => l.answer?.value ?? l.summary?.items),
      [0, 1, 2],
    );
  });

  test("a line over maxResponseBytes is not read: retryable, saying the limit", async () => {
    const f = await fake((res) => ndjson(res, line(0) + `{"index":1,"ok":true,"value":"${"x".repeat(4096)}"}\n` + summary(2)));
    const got = await collect((await open(f.url, { maxResponseBytes: 1024 })).batch({ scriptRef: REF, inputsJson: ["1", "2"] }));
    assert.equal(got.lines.length, 1);
    assertError(got.err, "cut", true, "reading the answer after 1 lines: a line exceeds the client's limit of 1024 bytes");
  });

  test("every kind of line, and the request's options, as sent", async () => {
    const lines =
      `{"index":0,"ok":false,"failure":{"channel":"scriptError","name":"RangeError","message":"no 0"},"logs":"n 0\\n","usage":${USAGE}}\n` +
      `{"index":1,"problem":{"type":"about:blank#backend-unavailable","title":"Backend unavailable","status":503,"detail":"later","retryable":true}}\n` +
      `{"index":2,"notRun":true,"detail":"the server's request timeout passed"}\n` +
      `{"summary":{"items":3,"outcomes":{"scriptError":1},"problems":1,"notRun":1,"usage":${USAGE}}}\n`;
    const f = await fake((res) => ndjson(res, lines));
    const b = await open(f.url, { determinism: { seed: "s" } });
    const got = await collect(
      b.batch({
        scriptRef: REF,
        inputsJson: [' { "a" : [1, "x y"] } ', "null", '"\\ud800"'],
        limits: { wallClockMs: 250.5, memoryBytes: MiB },
        expectedOutputShapeHash: REF,
        captureLogs: true,
        requestId: "my-batch-7",
      }),
    );
    assert.equal(got.err, undefined);
    assert.deepEqual(got.lines, [
      { index: 0, answer: { ok: false, failure: { channel: "scriptError", name: "RangeError", message: "no 0" }, logs: "n 0\n", usage: JSON.parse(USAGE) } },
      { index: 1, problem: { type: "about:blank#backend-unavailable", title: "Backend unavailable", status: 503, detail: "later", retryable: true } },
      { index: 2, notRun: "the server's request timeout passed" },
      { summary: { items: 3, outcomes: { scriptError: 1 }, problems: 1, notRun: 1, usage: JSON.parse(USAGE) } },
    ]);
    // the members in the Go client's order, each input without its white space
    assert.equal(
      f.batches[0]!.body,
      `{"scriptRef":"${REF}","inputs":[{"a":[1,"x y"]},null,"\\ud800"],"limits":{"wallClockMs":251,"memoryBytes":1048576},"expectedOutputShapeHash":"${REF}","captureLogs":true,"determinism":{"seed":"s"}}`,
    );
    assert.equal(f.batches[0]!.headers["x-request-id"], "my-batch-7");
  });

  test("a batch refused is the service's problem, before any line; busy is retried", async () => {
    let n = 0;
    const f = await fake((res) => {
      n++;
      if (n === 1) {
        res.writeHead(429, { "content-type": "application/problem+json", "retry-after": "1" });
        res.end(JSON.stringify({ type: "about:blank#busy", title: "Busy", status: 429, detail: "busy", retryable: true }));
      } else if (n === 2) {
        ndjson(res, line(0) + summary(1));
      } else {
        res.writeHead(413, { "content-type": "application/problem+json", "x-request-id": "refused-1" });
        res.end(JSON.stringify({ type: "about:blank#too-many-inputs", title: "Too many inputs", status: 413, detail: "split the batch", retryable: false, limit: "maxBatchItems", limitValue: 1000, field: "inputs" }));
      }
    });
    const b = await open(f.url);
    const busy = await collect(b.batch({ scriptRef: REF, inputsJson: ["1"] }));
    assert.equal(busy.err, undefined);
    assert.equal(busy.lines.length, 2);
    assert.equal(f.batches.length, 2, "the 429 was retried");

    const refused = await collect(b.batch({ scriptRef: REF, inputsJson: ["1"] }));
    assert.deepEqual(refused.lines, []);
    const e = assertError(refused.err, "unavailable", false, "sandbox service: POST /v1/evaluations:batch: HTTP 413: Too many inputs: split the batch");
    assert.equal(e.status, 413);
    assert.equal(e.requestId, "refused-1");
    assert.deepEqual(e.problem, { type: "about:blank#too-many-inputs", title: "Too many inputs", status: 413, detail: "split the batch", retryable: false, limit: "maxBatchItems", limitValue: 1000, field: "inputs" });

    // retryBusy: false reports the 429 at once, retryable
    n = 0;
    assertError((await collect((await open(f.url, { retryBusy: false })).batch({ scriptRef: REF, inputsJson: ["1"] }))).err, "unavailable", true, "HTTP 429: Busy");
  });

  test("a request no service takes is refused here, never sent; nothing is sent before the iteration begins", async () => {
    const f = await fake(() => assert.fail("an invalid batch was sent"));
    const b = await open(f.url);
    const bad: [string, BatchRequest, string][] = [
      ["no script", { scriptRef: "", inputsJson: ["1"] }, "scriptRef must be a non-empty string"],
      ["not JSON text", { scriptRef: REF, inputsJson: ["1", "{"] }, "inputsJson[1] is not JSON text"],
      ["a key twice", { scriptRef: REF, inputsJson: ['{"a":1,"a":2}'] }, `inputsJson[0] is not JSON text: it has the key "a" twice`],
      ["a lone surrogate", { scriptRef: REF, inputsJson: ['"\ud800"'] }, "inputsJson[0] has a lone surrogate"],
      ["not a string", { scriptRef: REF, inputsJson: [1 as unknown as string] }, "inputsJson[0] must be a string"],
      ["a zero wall clock", { scriptRef: REF, inputsJson: ["1"], limits: { wallClockMs: 0 } }, "limits.wallClockMs must be a positive number, got 0"],
      ["a fractional memory", { scriptRef: REF, inputsJson: ["1"], limits: { memoryBytes: 1.5 } }, "limits.memoryBytes must be a positive integer, got 1.5"],
    ];
    for (const [name, req, says] of bad) {
      const got = await collect(b.batch(req));
      assert.deepEqual(got.lines, [], name);
      assertError(got.err, "invalid-request", false, `sandbox service client: invalid batch: ${says}`);
    }
    b.batch({ scriptRef: REF, inputsJson: ["1"] }); // never iterated
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(f.batches.length, 0);
  });

  test("leaving the iteration early closes the connection", { timeout: 60_000 }, async () => {
    // The answer's first line, and then nothing: the batch's next run goes on.
    const f = await fake((res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.write(line(0));
    });
    const b = await open(f.url);
    for await (const l of b.batch({ scriptRef: REF, inputsJson: ["1", "2"] })) {
      assert.equal(l.index, 0);
      break;
    }
    await f.batches[0]!.closed; // the test's timeout is the bound

    // and so does a throw in the loop's body
    const boom = new Error("boom");
    await assert.rejects(async () => {
      for await (const _ of b.batch({ scriptRef: REF, inputsJson: ["1", "2"] })) throw boom;
    }, (e) => e === boom);
    await f.batches[1]!.closed;
  });

  test("an abort mid-answer throws the signal's reason and closes the connection; close() ends the batch as closed", { timeout: 60_000 }, async () => {
    const f = await fake((res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.write(line(0));
    });
    const b = await open(f.url);
    const ac = new AbortController();
    const reason = new Error("enough");
    const got = await collect(
      (async function* () {
        for await (const l of b.batch({ scriptRef: REF, inputsJson: ["1", "2"], signal: ac.signal })) {
          yield l;
          ac.abort(reason);
        }
      })(),
    );
    assert.equal(got.lines.length, 1);
    assert.equal(got.err, reason);
    await f.batches[0]!.closed;

    const it = b.batch({ scriptRef: REF, inputsJson: ["1", "2"] });
    assert.equal((await it.next()).value?.index, 0);
    const pending = it.next();
    await b.close();
    await assert.rejects(pending, (e) => e instanceof CloudRunSandboxError && e.code === "closed" && !e.retryable);
    await f.batches[1]!.closed;
    assertError((await collect(b.batch({ scriptRef: REF, inputsJson: ["1"] }))).err, "closed", false, "the backend is closed");
  });

  test("no whole answer by the service's request timeout and timeoutGraceMs: cut, retryable", { timeout: 60_000 }, async () => {
    const f = await fake(
      (res) => {
        res.writeHead(200, { "content-type": "application/x-ndjson" });
        res.write(line(0));
      },
      CAPABILITIES.replace('"requestTimeoutMs":60000', '"requestTimeoutMs":2000'),
    );
    const got = await collect((await open(f.url, { timeoutGraceMs: 200 })).batch({ scriptRef: REF, inputsJson: ["1", "2"] }));
    // the first line comes at once (the count is what arrived, on a machine however busy)
    assertError(got.err, "cut", true, `the answer was cut after ${got.lines.length} of 2 inputs' lines, before its summary, at the client's timeout of 2200 ms (the service's requestTimeoutMs 2000 + timeoutGraceMs 200)`);
    await f.batches[0]!.closed;
  });

  test("a service that goes away mid-answer: cut, retryable, naming the inputs answered", async () => {
    const f = await fake((res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.write(line(0), () => res.destroy());
    });
    const got = await collect((await open(f.url)).batch({ scriptRef: REF, inputsJson: ["1", "2", "3"] }));
    assert.equal(got.lines.length, 1);
    assertError(got.err, "cut", true, /HTTP 200: (the answer was cut after 1 of 3 inputs' lines|reading the answer after 1 lines)/);
  });
});

describe("a batch on the real service", () => {
  let build: Build;
  let store: string;
  let svc: Service;
  let backend: CloudRunSandboxBackend;
  let noRetry: CloudRunSandboxBackend;
  let ref: string;
  let spin: string;

  before(async () => {
    build = await buildService();
    store = await mkdtemp(join(tmpdir(), "sandbox-cloudrun-store-"));
    ref = await putScript(build.bin, store, 'console.log("n", input.n); if (input.fail) throw new RangeError("no " + input.n); ({ twice: input.n * 2 })');
    spin = await putScript(build.bin, store, "if (input.spin) { while (true) {} } input.n");
    // One evaluation at a time (the default), so that a batch's run holds the instance.
    svc = await startService(build.bin, { STORE_URL: store, MAX_BATCH_ITEMS: "50", CPU_BUDGET: "100000000" });
    backend = await open(svc.url);
    noRetry = await open(svc.url, { retryBusy: false });
  });

  after(async () => {
    await backend?.close();
    await noRetry?.close();
    await svc?.stop();
    await build?.cleanup();
    if (store) await rm(store, { recursive: true, force: true });
  });

  /** POST /v1/evaluations for one input, as the service answers it alone. */
  async function alone(scriptRef: string, inputJson: string): Promise<unknown> {
    const res = await fetch(`${svc.url}/v1/evaluations`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"scriptRef":"${scriptRef}","input":${inputJson},"captureLogs":true}`,
    });
    assert.equal(res.status, 200);
    return res.json();
  }

  /** Whether the instance is running an evaluation now: it refuses another as busy. */
  async function busy(): Promise<boolean> {
    const o = await noRetry.evaluate({ script: "'free'", inputJson: "null", limits: { wallClockMs: 1000, memoryBytes: 16 * MiB } });
    if (o.ok) return false;
    assert.ok(o.kind === "infrastructure" && o.message.includes("HTTP 429"), JSON.stringify(o));
    return true;
  }

  test("each input's line is what POST /v1/evaluations answers for it alone, in order, then the summary", async () => {
    assert.equal(backend.limits.maxBatchItems, 50);
    const inputs = Array.from({ length: 20 }, (_, i) => JSON.stringify({ n: i, fail: i % 7 === 3 }));
    const got = await collect(backend.batch({ scriptRef: ref, inputsJson: inputs, captureLogs: true }));
    assert.equal(got.err, undefined, String(got.err));
    assert.equal(got.lines.length, inputs.length + 1);
    for (const [i, input] of inputs.entries()) {
      const l = got.lines[i]!;
      assert.equal(l.index, i);
      assert.ok(l.answer?.usage, `input ${i}: ${JSON.stringify(l)}`);
      const { usage: _usage, ...answer } = l.answer;
      const { usage: _aloneUsage, ...want } = (await alone(ref, input)) as Record<string, unknown>;
      assert.deepEqual(answer, want, `input ${i}`);
    }
    const s = got.lines[inputs.length]!.summary;
    assert.ok(s);
    assert.equal(s.items, 20);
    assert.deepEqual({ ...s.outcomes }, { ok: 17, scriptError: 3 });
    assert.equal(s.problems + s.notRun, 0);
  });

  test("more inputs than maxBatchItems: the service's 413, not retryable, before any line", async () => {
    const got = await collect(backend.batch({ scriptRef: ref, inputsJson: Array(51).fill("null") }));
    assert.deepEqual(got.lines, []);
    const e = assertError(got.err, "unavailable", false, "HTTP 413");
    assert.equal(e.status, 413);
    assert.equal(e.problem?.limit, "maxBatchItems");
    assert.equal(e.problem?.limitValue, 50);
    assert.ok(e.requestId, "the service's request id");
  });

  test("a script the store does not have is each input's scriptMissing, as it would be alone", async () => {
    const missing = "sha256:" + "0".repeat(64);
    const got = await collect(backend.batch({ scriptRef: missing, inputsJson: ["1", "2"] }));
    assert.equal(got.err, undefined, String(got.err));
    assert.deepEqual(
      got.lines.slice(0, 2).map((l) => [l.index, l.answer?.ok === false && l.answer.failure]),
      [
        [0, { channel: "scriptMissing", scriptRef: missing }],
        [1, { channel: "scriptMissing", scriptRef: missing }],
      ],
    );
    assert.deepEqual({ ...got.lines[2]!.summary!.outcomes }, { scriptMissing: 2 });
  });

  // Leaving early closes the connection, and the service stops the batch's
  // runs: the spinning run had 25 s of wall clock left, and the input after
  // it 25 s more, yet the instance takes a request again well before.
  for (const how of ["break", "abort"] as const) {
    test(`leaving a batch of long runs early (${how}) frees the instance`, async () => {
      const ac = new AbortController();
      const inputs = ['{"n":0}', '{"spin":true}', '{"spin":true}'];
      const it = backend.batch({ scriptRef: spin, inputsJson: inputs, limits: { wallClockMs: 25_000 }, signal: ac.signal });
      let first: BatchLine | undefined;
      let left: number | undefined;
      try {
        for await (const l of it) {
          first = l;
          // the next input's run holds the instance
          const until = Date.now() + 20_000;
          while (!(await busy())) {
            assert.ok(Date.now() < until, "the batch's next run never held the instance");
            await new Promise((r) => setTimeout(r, 20));
          }
          left = Date.now();
          if (how === "abort") ac.abort(new Error("enough"));
          else break;
        }
      } catch (err) {
        assert.equal((err as Error).message, "enough");
      }
      assert.equal(first?.index, 0);
      assert.equal(first.answer?.ok === true && first.answer.value, 0);
      while (await busy()) {
        // 15 s: well within the 25 s the spinning run had left, with room for a busy machine
        assert.ok(Date.now() - left! < 15_000, `still busy ${Date.now() - left!} ms after the client left`);
        await new Promise((r) => setTimeout(r, 50));
      }
    });
  }
});
