// The test's own check of ADR 0144 D2's closed vocabulary, written from the
// ADR's text and independent of the package's decoder: exactly these shapes,
// these members and these types, nothing else.
import assert from "node:assert/strict";
import type { SandboxOutcome } from "@loom-plugins/sandbox-cloudrun";

const LIMITS = new Set(["cpu", "memory", "wallClock"]);

export function assertOutcome(o: unknown): asserts o is SandboxOutcome {
  assert.ok(typeof o === "object" && o !== null && !Array.isArray(o), `an outcome is an object, got ${o === null ? "null" : Array.isArray(o) ? "an array" : typeof o}`);
  const proto = Object.getPrototypeOf(o);
  assert.ok(proto === Object.prototype || proto === null, "an outcome is a plain object");
  const r = o as Record<string, unknown>;
  const keys = Object.keys(r).sort();
  let shape: string;
  try {
    shape = JSON.stringify(r).slice(0, 300);
  } catch {
    shape = `{${keys.join(",")}}`;
  }
  if (r.ok === true) {
    assert.deepEqual(keys, ["ok", "value"], `ok outcome members: ${shape}`);
    return;
  }
  assert.equal(r.ok, false, `ok is a boolean: ${shape}`);
  switch (r.kind) {
    case "limit":
      assert.deepEqual(keys, ["kind", "limit", "ok"], shape);
      assert.ok(LIMITS.has(r.limit as string), `limit is cpu, memory or wallClock: ${shape}`);
      return;
    case "threw":
      if (keys.includes("name")) {
        assert.deepEqual(keys, ["kind", "message", "name", "ok"], shape);
        assert.equal(typeof r.name, "string", shape);
      } else {
        assert.deepEqual(keys, ["kind", "message", "ok"], shape);
      }
      assert.equal(typeof r.message, "string", shape);
      return;
    case "inputTooLarge":
      assert.deepEqual(keys, ["kind", "ok"], shape);
      return;
    case "infrastructure":
      assert.deepEqual(keys, ["kind", "message", "ok"], shape);
      assert.equal(typeof r.message, "string", shape);
      assert.ok((r.message as string).length > 0, "an infrastructure message is not empty");
      assert.ok((r.message as string).length <= 2048, `an infrastructure message is bounded, got ${(r.message as string).length} units`);
      return;
    default:
      assert.fail(`kind outside the vocabulary: ${shape}`);
  }
}

/** Asserts an infrastructure outcome whose message matches every pattern. */
export function assertInfrastructure(o: SandboxOutcome, ...patterns: (string | RegExp)[]): string {
  assertOutcome(o);
  assert.equal(o.ok, false, `expected infrastructure, got ${JSON.stringify(o)}`);
  assert.equal((o as { kind: string }).kind, "infrastructure", `expected infrastructure, got ${JSON.stringify(o)}`);
  const message = (o as { message: string }).message;
  for (const p of patterns) {
    if (typeof p === "string") assert.ok(message.includes(p), `message ${JSON.stringify(message)} lacks ${JSON.stringify(p)}`);
    else assert.match(message, p);
  }
  return message;
}
