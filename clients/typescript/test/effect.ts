// The output step of loom's effect (ADR 0144 D3: "bound the output
// (limitExceeded { kind: "output" })"), written from the ADR's text as a
// stand-in for @loom/sandbox's, so that a test can show what loom makes of an
// outcome this backend returns: a typed channel, or an untyped failure.
import type { SandboxOutcome } from "@loom-plugins/sandbox-cloudrun";

export type EffectResult =
  | { ok: true; value: unknown }
  | { ok: false; channel: "limitExceeded"; kind: string }
  | { ok: false; channel: "other" }
  | { ok: false; untyped: string };

export function effectOutput(o: SandboxOutcome, maxOutputBytes: number): EffectResult {
  if (!o.ok) {
    if (o.kind === "infrastructure") return { ok: false, untyped: o.message };
    if (o.kind === "limit") return { ok: false, channel: "limitExceeded", kind: o.limit };
    return { ok: false, channel: "other" };
  }
  const text = JSON.stringify(o.value);
  if (Buffer.byteLength(text, "utf8") > maxOutputBytes) return { ok: false, channel: "limitExceeded", kind: "output" };
  return { ok: true, value: JSON.parse(text) };
}
