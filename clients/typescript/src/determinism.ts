// The determinism option: a replayable run (docs/spi.md, "Replayable runs"
// in the service's repository). The service refuses a seed or an instant
// outside the rules of its spi.Replay.Check with a 400, which this package
// would report as infrastructure on every evaluate, and loom would retry it;
// so create() applies the same rules and refuses the option instead.

import { isWellFormed, quote, utf8Length } from "./text.js";

/** The seed and the instant of a replayable run; both optional. */
export interface DeterminismOptions {
  /**
   * The seed of `Math.random`: 1 to 128 bytes of UTF-8 text without a
   * control character (U+0000 to U+001F, U+007F). Leave it out, and the
   * service derives the seed from the script and the input's value (its
   * canonical text), so that the same script on the same input draws the
   * same numbers however the input is spelt (`{"a":1}`, `{ "a": 1.0 }`).
   */
  seed?: string;
  /**
   * The instant every clock of the run reads, frozen for the run: a `Date`,
   * or an RFC 3339 string (`2026-12-02T07:16:17Z`, an offset of its own
   * allowed), from 1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z. Default
   * 2000-01-01T00:00:00Z.
   */
  now?: string | Date;
}

/** The determinism member as it is sent: members in the order the Go encoder writes them. */
export interface Determinism {
  readonly seed?: string;
  readonly now?: string;
}

const MAX_SEED_BYTES = 128;
// The service's clock counts nanoseconds since 1970 in a signed 64-bit
// integer: its last whole second is 2262-04-11T23:47:16Z.
const MAX_NOW_SECONDS = 9_223_372_036;
const RANGE = "1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z, the instants a run's clock can read";
// RFC 3339's date-time as the service reads it: uppercase T and Z, an offset
// of at most 23:59; the fields' ranges are checked below.
const RFC3339 = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(?:Z|([+-])([01][0-9]|2[0-3]):([0-5][0-9]))$/;

/**
 * Resolves the determinism option into the member every evaluate sends, or
 * undefined for none; throws a message for an option the service would
 * refuse.
 */
export function resolveDeterminism(option: unknown): Determinism | undefined {
  if (option === undefined || option === false) return undefined;
  if (option === true) return Object.freeze({});
  if (typeof option !== "object" || option === null || Array.isArray(option) || option instanceof Date) {
    throw new TypeError("determinism must be a boolean or an object { seed?, now? }");
  }
  for (const k of Object.keys(option)) {
    if (k !== "seed" && k !== "now") throw new TypeError(`determinism has the unknown member ${quote(k)}; it takes seed and now`);
  }
  const { seed, now } = option as { seed?: unknown; now?: unknown };
  const out: { seed?: string; now?: string } = {};
  if (seed !== undefined) out.seed = checkSeed(seed);
  if (now !== undefined) out.now = checkNow(now);
  return Object.freeze(out);
}

function checkSeed(seed: unknown): string {
  if (typeof seed !== "string") throw new TypeError(`determinism.seed must be a string, got ${seed === null ? "null" : typeof seed}`);
  if (seed === "") throw new TypeError("determinism.seed must not be empty: leave it out for the seed the service derives from the script and the input");
  // the order of spi.Replay.Check, so that a seed wrong twice reads the same
  const n = utf8Length(seed);
  if (n > MAX_SEED_BYTES) throw new TypeError(`determinism.seed is ${n} bytes, over the ${MAX_SEED_BYTES} a seed may have`);
  if (!isWellFormed(seed)) throw new TypeError("determinism.seed is not valid UTF-8: it has a lone surrogate");
  const c = /[\u0000-\u001f\u007f]/.exec(seed);
  if (c) throw new TypeError(`determinism.seed has the control character U+${c[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`);
  return seed;
}

function checkNow(now: unknown): string {
  if (now instanceof Date) {
    const ms = now.getTime();
    if (Number.isNaN(ms)) throw new TypeError("determinism.now is an invalid Date");
    if (ms < 0 || ms > MAX_NOW_SECONDS * 1000) throw new TypeError(`determinism.now ${now.toISOString()} is outside ${RANGE}`);
    // as the Go encoder writes an instant: UTC, the fraction as short as it
    // can be, so that both clients send one body for one request
    return now.toISOString().replace(/\.?0+Z$/, "Z");
  }
  if (typeof now !== "string") throw new TypeError(`determinism.now must be a string or a Date, got ${now === null ? "null" : typeof now}`);
  const m = RFC3339.exec(now);
  const bad = () => new TypeError(`determinism.now must be an RFC 3339 instant such as "2000-01-01T00:00:00Z", got ${quote(now)}`);
  if (!m) throw bad();
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59) throw bad();
  const t = new Date(0);
  t.setUTCFullYear(y, mo - 1, d);
  t.setUTCHours(h, mi, s, 0);
  const offset = m[8] === undefined ? 0 : (m[8] === "-" ? -1 : 1) * (Number(m[9]) * 3600 + Number(m[10]) * 60);
  const seconds = t.getTime() / 1000 - offset;
  const fraction = /[1-9]/.test(m[7] ?? "");
  if (seconds < 0 || seconds > MAX_NOW_SECONDS || (seconds === MAX_NOW_SECONDS && fraction)) {
    throw new TypeError(`determinism.now ${quote(now)} is outside ${RANGE}`);
  }
  return now;
}

function daysIn(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
}
