// The package against the golden documents of api/testdata, which the Go
// tests read too, so that the Go and TypeScript readers of the wire format
// cannot drift apart: every outcome the service writes comes back as that
// outcome, every answer as its outcome alone with its logs and usage handed
// to onRun (an answer of a later version as what this client knows of it),
// every malformed one as infrastructure saying so, and the
// capabilities document is accepted as the service writes it; and every
// line of a batch's answer, with the answers of POST /v1/evaluations and
// the problem documents in them, comes back as what this client knows of
// it, every malformed one refused.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import {
  CloudRunSandboxBackend,
  CloudRunSandboxError,
  type BatchLine,
  type FetchLike,
  type FetchLikeResponse,
  type RunReport,
} from "@loom-plugins/sandbox-cloudrun";
import { assertInfrastructure, assertOutcome } from "./vocabulary.js";

const testdata = new URL("../../../api/testdata/", import.meta.url);

/** The golden documents of a folder of api/testdata, by file name. */
function golden(dir: string): [string, string][] {
  const url = new URL(`${dir}/`, testdata);
  return readdirSync(url)
    .filter((n) => n.endsWith(".json"))
    .sort()
    .map((n) => [n, readFileSync(new URL(n, url), "utf8").replace(/\n$/, "")]);
}

const capabilities = readFileSync(new URL("capabilities/service.json", testdata), "utf8");

const REQUEST_ID = "golden-1";

function answer(body: string, status = 200, contentType = "application/json"): FetchLikeResponse {
  const bytes = new TextEncoder().encode(body);
  const headers: Record<string, string> = { "content-type": contentType, "content-length": String(bytes.length), "x-request-id": REQUEST_ID };
  return {
    status,
    headers: { get: (name: string) => headers[name.toLowerCase()] ?? null },
    body: (async function* () {
      yield bytes;
    })(),
  };
}

/**
 * A backend whose service answers GET /v1/capabilities with the golden
 * document and every evaluation with outcome; onRun, when given, gets the
 * reports.
 */
async function backendAnswering(outcome: string, onRun?: (r: RunReport) => void): Promise<CloudRunSandboxBackend> {
  const fetch: FetchLike = async (url) => answer(url.endsWith("/v1/capabilities") ? capabilities : outcome);
  return CloudRunSandboxBackend.create({ url: "http://golden.invalid", fetch, ...(onRun ? { onRun } : {}) });
}

const request = { script: "1", inputJson: "null", limits: { wallClockMs: 1000, memoryBytes: 1 << 24 } };

describe("api/testdata", () => {
  test("the capabilities document is accepted as the service writes it", async () => {
    const b = await backendAnswering("{}");
    const doc = JSON.parse(capabilities);
    assert.deepEqual({ ...b.capabilities }, doc.capabilities);
    assert.equal(b.spiVersion, doc.spiVersion);
    assert.equal(b.limits.maxInputBytes, doc.limits.maxInputBytes);
    assert.equal(doc.determinism, true);
    // create() takes determinism of the service the golden document describes
    await CloudRunSandboxBackend.create({ url: "http://golden.invalid", fetch: async () => answer(capabilities), determinism: true });
  });

  for (const [name, doc] of golden("outcome")) {
    test(`outcome ${name} comes back as written`, async () => {
      const o = await (await backendAnswering(doc)).evaluate(request);
      assertOutcome(o);
      assert.deepEqual(o, JSON.parse(doc));
    });
  }

  for (const [name, doc] of golden("outcome/invalid")) {
    test(`outcome invalid/${name} is infrastructure`, async () => {
      assertInfrastructure(await (await backendAnswering(doc)).evaluate(request), "malformed outcome");
    });
  }

  // An answer of a later version has its reading in answer/read: what this
  // client keeps of it (docs/spi.md, "How the wire evolves").
  const readings = new Map(golden("answer/read"));
  for (const [name, doc] of golden("answer")) {
    test(`answer ${name}: the outcome alone comes back, its logs and usage reach onRun`, async () => {
      const reports: RunReport[] = [];
      const o = await (await backendAnswering(doc, (r) => reports.push(r))).evaluate(request);
      assertOutcome(o); // D2's shape: no logs, no usage, no later member
      const { logs, usage, ...outcome } = JSON.parse(readings.get(name) ?? doc) as Record<string, unknown>;
      assert.deepEqual(o, outcome);
      assert.equal(reports.length, 1);
      const r = reports[0]!;
      assert.equal(r.outcome, o, "the report carries the very outcome evaluate returns");
      assert.equal(r.requestId, REQUEST_ID);
      assert.equal(r.logs, logs);
      assert.deepEqual(r.usage, usage);
      assert.deepEqual(Object.keys(r).sort(), ["requestId", "outcome", ...(logs === undefined ? [] : ["logs"]), ...(usage === undefined ? [] : ["usage"])].sort());
      assert.ok(Object.isFrozen(r) && (r.usage === undefined || (Object.isFrozen(r.usage) && Object.isFrozen(r.usage.phasesMs))));
    });
  }

  test("every reading in answer/read reads an answer", () => {
    const answers = new Set(golden("answer").map(([n]) => n));
    for (const name of readings.keys()) assert.ok(answers.has(name), `answer/read/${name} reads no answer`);
  });

  for (const [name, doc] of golden("answer/invalid")) {
    test(`answer invalid/${name} is infrastructure, and onRun gets neither logs nor usage`, async () => {
      const reports: RunReport[] = [];
      const o = await (await backendAnswering(doc, (r) => reports.push(r))).evaluate(request);
      assertInfrastructure(o, "malformed outcome");
      assert.deepEqual(reports, [{ requestId: REQUEST_ID, outcome: o }]);
    });
  }

  /** The message of the outcome when the service answers an evaluation with a problem document. */
  async function problemMessage(doc: string, status: number): Promise<string> {
    const fetch: FetchLike = async (url) =>
      url.endsWith("/v1/capabilities") ? answer(capabilities) : answer(doc, status, "application/problem+json");
    const b = await CloudRunSandboxBackend.create({ url: "http://golden.invalid", fetch, retryBusy: false });
    const o = await b.evaluate(request);
    assertOutcome(o);
    assert.equal(o.ok, false);
    return (o as { message: string }).message;
  }

  for (const [name, doc] of golden("problem")) {
    test(`problem ${name} is read: its title and detail reach the message`, async () => {
      const p = JSON.parse(doc);
      const m = await problemMessage(doc, p.status);
      assert.ok(m.includes(`HTTP ${p.status}: ${p.title}: ${p.detail}`), `${m} lacks the problem's title and detail`);
    });
  }

  for (const [name, doc] of golden("problem/invalid")) {
    test(`problem invalid/${name} is not read as a problem`, async () => {
      const m = await problemMessage(doc, 500);
      assert.ok(!m.includes(": x"), `${m} took its title from a document that is not a problem`);
    });
  }

  test("the request body is request/sandbox/script.json, byte for byte", async () => {
    const sent: string[] = [];
    const fetch: FetchLike = async (url, init) => {
      if (url.endsWith("/v1/capabilities")) return answer(capabilities);
      sent.push(init.body ?? "");
      return answer('{"ok":true,"value":55297}');
    };
    const b = await CloudRunSandboxBackend.create({ url: "http://golden.invalid", fetch });
    await b.evaluate({ script: "'\ud800'.charCodeAt(0) + input.n", inputJson: '{"n":1}', limits: { wallClockMs: 5000, memoryBytes: 16777216 } });
    const [, want] = golden("request/sandbox").find(([n]) => n === "script.json")!;
    assert.deepEqual(sent, [want]);
  });

  test("a replayable run's body is request/sandbox/determinism.json, byte for byte", async () => {
    const sent: string[] = [];
    const fetch: FetchLike = async (url, init) => {
      if (url.endsWith("/v1/capabilities")) return answer(capabilities);
      sent.push(init.body ?? "");
      return answer('{"ok":true,"value":[0.5,1796195777500]}');
    };
    // the instant in another offset, as the Go test writes it: both clients send it in UTC
    const now = new Date("2026-12-02T08:16:17.5+01:00");
    const b = await CloudRunSandboxBackend.create({ url: "http://golden.invalid", fetch, determinism: { seed: "flow-42/step-3", now } });
    await b.evaluate({ script: "[Math.random(), Date.now()]", inputJson: "null", limits: { wallClockMs: 1000, memoryBytes: 16777216 } });
    const [, want] = golden("request/sandbox").find(([n]) => n === "determinism.json")!;
    assert.deepEqual(sent, [want]);
  });

  for (const [name, doc] of golden("capabilities/invalid")) {
    test(`capabilities invalid/${name} is refused`, async () => {
      const fetch: FetchLike = async () => answer(doc);
      await assert.rejects(CloudRunSandboxBackend.create({ url: "http://golden.invalid", fetch }), /invalid capabilities document/);
    });
  }

  // A batch's lines (docs/batch.md). Each golden line is read where it
  // belongs: at its index, after the lines of the inputs before it, and a
  // summary at the end.
  const usage = JSON.parse(golden("batch").find(([n]) => n === "ok.json")![1]).usage;
  const filler = (i: number) => JSON.stringify({ index: i, ok: true, value: i });
  const summary = (n: number) => JSON.stringify({ summary: { items: n, outcomes: { ok: n }, problems: 0, notRun: 0, usage } });

  /** The lines a batch of n inputs yields when the service answers lines, and the error that ended them. */
  async function batchOf(n: number, lines: string[]): Promise<{ lines: BatchLine[]; err?: unknown }> {
    const fetch: FetchLike = async (url) =>
      url.endsWith("/v1/capabilities") ? answer(capabilities) : answer(lines.map((l) => `${l}\n`).join(""), 200, "application/x-ndjson");
    const b = await CloudRunSandboxBackend.create({ url: "http://golden.invalid", fetch });
    const got: BatchLine[] = [];
    try {
      for await (const l of b.batch({ scriptRef: "sha256:" + "0".repeat(64), inputsJson: Array(n).fill("null") })) got.push(l);
    } catch (err) {
      return { lines: got, err };
    }
    return { lines: got };
  }

  /** A golden line read where it belongs; what it was read as. */
  async function readLine(doc: string): Promise<BatchLine> {
    const w = JSON.parse(doc) as { index?: number; summary?: { items: number } };
    const at = w.summary ? w.summary.items : w.index!;
    const before = Array.from({ length: at }, (_, i) => filler(i));
    const got = await batchOf(w.summary ? at : at + 1, w.summary ? [...before, doc] : [...before, doc, summary(at + 1)]);
    assert.equal(got.err, undefined);
    return got.lines[at]!;
  }

  /** What this client reads a line of the wire as: the test's own mapping of docs/batch.md onto the package's types. */
  function expected(doc: string): unknown {
    const { index, ...rest } = JSON.parse(doc) as Record<string, unknown>;
    if ("summary" in rest) return { summary: rest.summary };
    if ("problem" in rest) return { index, problem: rest.problem };
    if ("notRun" in rest) return { index, notRun: rest.detail };
    return { index, answer: rest };
  }

  /** A malformed line, first: the batch ends there, an error of the protocol. */
  async function assertRefused(doc: string): Promise<void> {
    const got = await batchOf(1, [doc, summary(1)]);
    assert.deepEqual(got.lines, []);
    assert.ok(got.err instanceof CloudRunSandboxError, `accepted, or ${String(got.err)}`);
    assert.equal(got.err.code, "invalid-answer");
    assert.equal(got.err.retryable, false);
    assert.match(got.err.message, /: HTTP 200: malformed line 1: /);
  }

  const batchReadings = new Map(golden("batch/read"));
  for (const [name, doc] of golden("batch")) {
    test(`batch line ${name} is read as written`, async () => {
      assert.deepEqual(await readLine(doc), expected(batchReadings.get(name) ?? doc));
    });
  }

  test("every reading in batch/read reads a line", () => {
    const lines = new Set(golden("batch").map(([n]) => n));
    for (const name of batchReadings.keys()) assert.ok(lines.has(name), `batch/read/${name} reads no line`);
  });

  for (const [name, doc] of golden("batch/invalid")) {
    test(`batch line invalid/${name} is refused`, () => assertRefused(doc));
  }

  // An input's answer is POST /v1/evaluations' for it alone: every golden
  // answer of that route, given an index, is such a line.
  const evaluationReadings = new Map(golden("evaluation/read"));
  const indexed = (doc: string) => `{"index":0,${doc.slice(1)}`;
  for (const [name, doc] of golden("evaluation")) {
    test(`evaluation ${name} is an input's answer, read as written`, async () => {
      assert.deepEqual(await readLine(indexed(doc)), { index: 0, answer: JSON.parse(evaluationReadings.get(name) ?? doc) });
    });
  }

  for (const [name, doc] of golden("evaluation/invalid")) {
    test(`evaluation invalid/${name} is refused as an input's answer`, () => assertRefused(indexed(doc)));
  }

  for (const [name, doc] of golden("problem")) {
    test(`problem ${name} is an input's problem, read as written`, async () => {
      assert.deepEqual(await readLine(`{"index":0,"problem":${doc}}`), { index: 0, problem: JSON.parse(doc) });
    });
  }

  for (const [name, doc] of golden("problem/invalid")) {
    test(`problem invalid/${name} is refused as an input's problem`, () => assertRefused(`{"index":0,"problem":${doc}}`));
  }
});
