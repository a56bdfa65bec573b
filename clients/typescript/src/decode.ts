// Decoding of the service's answers, as the Go decoders (api/) do it: an
// evaluation's answer is exactly one of ADR 0144 D2's shapes, with beside it
// the report members (the logs and usage this client knows, checked; any
// other, a later version's, ignored: docs/spi.md, "How the wire evolves"),
// and GET /v1/capabilities is read strictly where a capability is declared.

import type { SandboxBackendCapabilities, SandboxOutcome } from "./spi.js";
import { boundText, MAX_MESSAGE_UNITS, quote } from "./text.js";

/** A body that does not decode; its message says what is wrong, never the body. */
export class DecodeError extends Error {
  override name = "DecodeError";
}

type JsonObject = Record<string, unknown>;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Parses a response body: UTF-8 (no byte-order mark), one JSON value, and no
 * object anywhere with the same key twice (parsers disagree on which one
 * counts, so the service refuses them too).
 */
export function parseJson(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new DecodeError("the body is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new DecodeError(`not JSON: ${boundText(err instanceof Error ? err.message : String(err), 200)}`);
  }
  const dup = duplicateKey(text);
  if (dup !== undefined) throw new DecodeError(`${quote(dup)}: duplicate member`);
  return value;
}

/**
 * Returns a key that some object in text (valid JSON) has twice, comparing
 * keys after unescaping, or undefined. Iterative, so nesting depth costs no
 * stack.
 */
export function duplicateKey(text: string): string | undefined {
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    switch (ch) {
      case 0x7b: // {
        stack.push(new Set());
        expectKey = true;
        break;
      case 0x5b: // [
        stack.push(null);
        expectKey = false;
        break;
      case 0x7d: // }
      case 0x5d: // ]
        stack.pop();
        expectKey = false;
        break;
      case 0x2c: // ,
        expectKey = stack[stack.length - 1] instanceof Set;
        break;
      case 0x22: {
        // "
        let j = i + 1;
        let escaped = false;
        for (;;) {
          const cj = text.charCodeAt(j);
          if (cj === 0x22) break;
          if (cj === 0x5c) {
            escaped = true;
            j += 2;
          } else {
            j += 1;
          }
        }
        if (expectKey) {
          const raw = text.slice(i + 1, j);
          const key = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : raw;
          const set = stack[stack.length - 1] as Set<string>;
          if (set.has(key)) return key;
          set.add(key);
          expectKey = false;
        }
        i = j;
        break;
      }
      default:
      // whitespace, ':', numbers and literals
    }
  }
  return undefined;
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  switch (typeof v) {
    case "string":
      return "a string";
    case "number":
      return "a number";
    case "boolean":
      return "a boolean";
    default:
      return "an object";
  }
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * One JSON object read strictly: each member is taken at most once with the
 * kind it must have, and done() reports the first problem, including a member
 * nobody took.
 */
class Reader {
  private readonly used = new Set<string>();
  private err: string | undefined;

  constructor(
    private readonly path: string,
    private readonly obj: JsonObject,
  ) {}

  static of(path: string, v: unknown): Reader {
    if (!isObject(v)) throw new DecodeError(`${at(path)}a JSON object is required, got ${kindOf(v)}`);
    return new Reader(path, v);
  }

  fail(key: string, what: string): void {
    this.err ??= `${at(join(this.path, key))}${what}`;
  }

  take(key: string, required: boolean): { present: boolean; value: unknown } {
    if (!Object.prototype.hasOwnProperty.call(this.obj, key)) {
      if (required) this.fail(key, "missing");
      return { present: false, value: undefined };
    }
    this.used.add(key);
    return { present: true, value: this.obj[key] };
  }

  str(key: string, required: boolean): string | undefined {
    const { present, value } = this.take(key, required);
    if (!present) return undefined;
    if (typeof value !== "string") {
      this.fail(key, `must be a string, got ${kindOf(value)}`);
      return undefined;
    }
    return value;
  }

  nonEmpty(key: string): string | undefined {
    const s = this.str(key, true);
    if (s === "") this.fail(key, "must not be empty");
    return s;
  }

  bool(key: string, required: boolean): boolean | undefined {
    const { present, value } = this.take(key, required);
    if (!present) return undefined;
    if (typeof value !== "boolean") {
      this.fail(key, `must be a boolean, got ${kindOf(value)}`);
      return undefined;
    }
    return value;
  }

  /** A non-negative integer. */
  count(key: string, required: boolean): number | undefined {
    const { present, value } = this.take(key, required);
    if (!present) return undefined;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || Object.is(value, -0)) {
      this.fail(key, `must be a non-negative integer, got ${typeof value === "number" ? String(value) : kindOf(value)}`);
      return undefined;
    }
    return value;
  }

  oneOf<T extends string>(key: string, s: string | undefined, allowed: readonly T[]): T | undefined {
    if (s === undefined) return undefined;
    if ((allowed as readonly string[]).includes(s)) return s as T;
    this.fail(key, `must be one of ${allowed.join(", ")}, got ${quote(s)}`);
    return undefined;
  }

  child(key: string, required = true): Reader | undefined {
    const { present, value } = this.take(key, required);
    if (!present) return undefined;
    if (!isObject(value)) {
      this.fail(key, `must be an object, got ${kindOf(value)}`);
      return undefined;
    }
    return new Reader(join(this.path, key), value);
  }

  /** Whether the object has the member key and nothing took it. */
  unread(key: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.obj, key) && !this.used.has(key);
  }

  /** Whether a problem has been found. */
  get failed(): boolean {
    return this.err !== undefined;
  }

  /** The member names of the object. */
  keys(): string[] {
    return Object.keys(this.obj);
  }

  /** Marks every member read (where unknown members are tolerated). */
  skip(): void {
    for (const k of Object.keys(this.obj)) this.used.add(k);
  }

  /** Adopts a child's problem as this object's, if it has none of its own. */
  adopt(child: Reader | undefined): void {
    if (child === undefined) return;
    try {
      child.done();
    } catch (err) {
      this.err ??= (err as Error).message;
    }
  }

  done(): void {
    if (this.err !== undefined) throw new DecodeError(this.err);
    for (const k of Object.keys(this.obj)) {
      if (!this.used.has(k)) throw new DecodeError(`${at(join(this.path, k))}unknown member`);
    }
  }
}

function at(path: string): string {
  return path === "" ? "" : `${path}: `;
}

function join(path: string, key: string): string {
  const q = quote(key);
  return path === "" ? q : `${path}.${q}`;
}

const KINDS = ["limit", "threw", "inputTooLarge", "infrastructure"] as const;
const LIMITS = ["cpu", "memory", "wallClock"] as const;
/**
 * The members of every kind of outcome together: ADR 0144 D2's closed
 * vocabulary. Any other member of an answer is a report member.
 */
const OUTCOME_MEMBERS = ["ok", "value", "kind", "limit", "name", "message"] as const;

/**
 * What a run used, as the service measured it (docs/spi.md, "Usage";
 * api/openapi.yaml, Usage). It is never part of the outcome: the outcome is
 * a pure function of (script, input, limits), the usage is not. Times are
 * milliseconds with microseconds as the fraction; a step the run did not
 * reach, or a figure the engine does not measure, is 0.
 */
export interface SandboxUsage {
  /** Wall time of each phase, in the order of a run. */
  readonly phasesMs: {
    /** The script store's read of a script asked for by reference (0 for a script sent by value). */
    readonly fetch: number;
    /** The check of the script's bytes against its reference. */
    readonly verify: number;
    /** A fresh instance taken, the script and input copied in, the input parsed. */
    readonly setup: number;
    /** The script's global code and the jobs after it. */
    readonly run: number;
    /** The result's JSON text made and copied out. */
    readonly serialise: number;
  };
  /** Processor time of the run in its engine. */
  readonly cpuMs: number;
  /** Interrupt polls the run took, the unit of the cpu limit. */
  readonly cpuBudgetUsed: number;
  /** The run's CPU budget in interrupt polls; 0 for none. */
  readonly cpuBudget: number;
  /** The most the guest's heap held at once, counted as the memory limit counts it. */
  readonly peakMemoryBytes: number;
  /** The run's memory limit: the memoryBytes the service ran it under. */
  readonly memoryLimitBytes: number;
}

/** A 200 answer of POST /v1/sandbox/evaluate: the outcome, and what is beside it. */
export interface SandboxAnswer {
  /** Exactly ADR 0144 D2's shape: the answer's other members are not on it. */
  readonly outcome: SandboxOutcome;
  /** The run's console output, when it was asked for (captureLogs). */
  readonly logs?: string;
  readonly usage?: SandboxUsage;
}

const PHASES = ["fetch", "verify", "setup", "run", "serialise"] as const;

/**
 * The most milliseconds the Go decoder takes (a time.Duration's range): a
 * figure past it is as malformed there as here.
 */
const MAX_MILLIS = 9_223_372_036_854;

function millis(r: Reader, key: string): number | undefined {
  const { present, value } = r.take(key, true);
  if (!present) return undefined;
  if (typeof value !== "number" || !(value >= 0) || value > MAX_MILLIS || Object.is(value, -0)) {
    r.fail(key, `must be a non-negative number of milliseconds, got ${typeof value === "number" ? String(value) : kindOf(value)}`);
    return undefined;
  }
  return value;
}

/**
 * Reads a usage member: the members spi/wire.go writes (spi.AppendUsage), each required and
 * checked; any other, in usage or in its phases, a figure of a later version,
 * is ignored (docs/spi.md, "How the wire evolves").
 */
function readUsage(o: Reader, required = false): SandboxUsage | undefined {
  const u = o.child("usage", required);
  if (u === undefined) return undefined;
  const p = u.child("phasesMs");
  const phases: Record<string, number | undefined> = {};
  if (p) {
    for (const k of PHASES) phases[k] = millis(p, k);
    p.skip();
    u.adopt(p);
  }
  const cpuMs = millis(u, "cpuMs");
  const cpuBudgetUsed = u.count("cpuBudgetUsed", true);
  const cpuBudget = u.count("cpuBudget", true);
  const peakMemoryBytes = u.count("peakMemoryBytes", true);
  const memoryLimitBytes = u.count("memoryLimitBytes", true);
  u.skip();
  o.adopt(u);
  if (
    PHASES.some((k) => phases[k] === undefined) ||
    cpuMs === undefined ||
    cpuBudgetUsed === undefined ||
    cpuBudget === undefined ||
    peakMemoryBytes === undefined ||
    memoryLimitBytes === undefined
  ) {
    return undefined; // the reader holds the problem
  }
  const [fetch, verify, setup, run, serialise] = PHASES.map((k) => phases[k]!) as [number, number, number, number, number];
  return deepFreeze({ phasesMs: { fetch, verify, setup, run, serialise }, cpuMs, cpuBudgetUsed, cpuBudget, peakMemoryBytes, memoryLimitBytes });
}

/**
 * Reads a 200 answer of POST /v1/sandbox/evaluate as the Go decoder does
 * (api.DecodeSandboxAnswer), and as docs/spi.md, "How the wire evolves", says
 * a reader does: one outcome in ADR 0144 D2's closed vocabulary, with no
 * member of another kind; beside it the report members this client knows, a
 * string `logs` and a `usage` with the schema's figures, checked; and any
 * other member, a report member of a later version, ignored. The outcome
 * returned is a new object of the outcome's members alone, so that what
 * reaches loom's effect is D2's shape and nothing else.
 */
export function decodeAnswer(v: unknown): SandboxAnswer {
  const o = Reader.of("", v);
  readOutcome(o, v);
  for (const k of OUTCOME_MEMBERS) if (o.unread(k)) o.fail(k, "not a member of this kind of outcome");
  const logs = o.str("logs", false);
  const usage = readUsage(o);
  o.skip();
  o.done();
  const outcome: JsonObject = {};
  const members: readonly string[] = OUTCOME_MEMBERS;
  for (const k of Object.keys(v as JsonObject)) if (members.includes(k)) outcome[k] = (v as JsonObject)[k];
  const a: { outcome: SandboxOutcome; logs?: string; usage?: SandboxUsage } = { outcome: outcome as SandboxOutcome };
  if (logs !== undefined) a.logs = logs;
  if (usage !== undefined) a.usage = usage;
  return a;
}

/** Takes the outcome's members of o (whose object is v). */
function readOutcome(o: Reader, v: unknown): void {
  const ok = o.bool("ok", true);
  if (ok === true) {
    o.take("value", true);
  } else if (ok === false) {
    const kind = o.oneOf("kind", o.str("kind", true), KINDS);
    switch (kind) {
      case "limit":
        o.oneOf("limit", o.str("limit", true), LIMITS);
        break;
      case "threw":
        o.str("name", false);
        o.str("message", true);
        break;
      case "inputTooLarge":
        break;
      case "infrastructure": {
        const m = o.nonEmpty("message");
        if (m !== undefined && isObject(v)) v.message = boundText(m, MAX_MESSAGE_UNITS);
        break;
      }
    }
  }
}

/** The service's limits as GET /v1/capabilities reports them, with members this client does not know. */
export interface ServiceLimits {
  readonly defaultWallClockMs?: number;
  readonly maxWallClockMs?: number;
  readonly defaultMemoryBytes?: number;
  /** The least memoryBytes the service takes: below it nothing runs, and the request is refused. */
  readonly minMemoryBytes?: number;
  readonly maxMemoryBytes?: number;
  readonly maxInputBytes?: number;
  readonly maxOutputBytes?: number;
  readonly maxScriptBytes?: number;
  readonly maxRequestBytes?: number;
  /** The largest request header block; a larger one is a 431 problem (header-too-large). */
  readonly maxHeaderBytes?: number;
  readonly maxConcurrent?: number;
  /** How long the service gives a request, a batch's whole answer included: past it, a batch's runs not ended are not run. */
  readonly requestTimeoutMs?: number;
  /** The most inputs one batch takes (batch()); more are refused, 413 too-many-inputs. */
  readonly maxBatchItems?: number;
  readonly [member: string]: unknown;
}

/** The service's engine build. */
export interface ServiceEngine {
  readonly name: string;
  readonly version: string;
  readonly wasmSha256: string;
}

/** GET /v1/capabilities, validated. */
export interface ServiceInfo {
  readonly spiVersion: string;
  readonly capabilities: Readonly<SandboxBackendCapabilities>;
  /**
   * Whether a request's determinism member makes its run replayable
   * (docs/spi.md, "Replayable runs"); false when the document does not say,
   * as a service from before the member does not.
   */
  readonly determinism: boolean;
  readonly limits: ServiceLimits;
  readonly engine: ServiceEngine;
}

const KNOWN_LIMITS = [
  "defaultWallClockMs",
  "maxWallClockMs",
  "defaultMemoryBytes",
  "minMemoryBytes",
  "maxMemoryBytes",
  "maxInputBytes",
  "maxOutputBytes",
  "maxScriptBytes",
  "maxRequestBytes",
  "maxHeaderBytes",
  "maxConcurrent",
  "requestTimeoutMs",
  "maxBatchItems",
] as const;

const SEMVER = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

/** The major version of a semantic version, or undefined. */
export function semverMajor(v: string): string | undefined {
  return SEMVER.exec(v)?.[1];
}

/**
 * Reads GET /v1/capabilities. The declaration ("capabilities", ADR 0144 D4's
 * closed set) and "engine" are read strictly: a capability this client cannot
 * vouch for must not be dropped silently. The document itself and "limits"
 * may carry members this client does not know (a later minor SPI version may
 * add some; none of them weakens the declaration). The result is deeply
 * frozen.
 */
export function decodeInfo(v: unknown): ServiceInfo {
  const o = Reader.of("", v);
  const spiVersion = o.str("spiVersion", true);

  let capabilities: SandboxBackendCapabilities | undefined;
  const c = o.child("capabilities");
  if (c) {
    const language = c.nonEmpty("language");
    const network = c.oneOf("network", c.str("network", true), ["none", "allowlist", "open"] as const);
    const wallClock = c.oneOf("wallClock", c.str("wallClock", true), ["hard", "soft"] as const);
    const memory = c.bool("memory", true);
    const cpu = c.bool("cpu", true);
    const freshPerRun = c.bool("freshPerRun", true);
    o.adopt(c);
    if (
      language !== undefined &&
      network !== undefined &&
      wallClock !== undefined &&
      memory !== undefined &&
      cpu !== undefined &&
      freshPerRun !== undefined
    ) {
      capabilities = { language, network, wallClock, memory, cpu, freshPerRun };
    }
  }

  const determinism = o.bool("determinism", false) ?? false;

  let limits: Record<string, unknown> | undefined;
  const l = o.child("limits");
  if (l) {
    for (const k of KNOWN_LIMITS) l.count(k, false);
    l.skip();
    o.adopt(l);
    limits = structuredClone((v as JsonObject).limits) as Record<string, unknown>;
  }

  let engine: ServiceEngine | undefined;
  const e = o.child("engine");
  if (e) {
    const name = e.nonEmpty("name");
    const version = e.nonEmpty("version");
    const wasmSha256 = e.str("wasmSha256", true);
    if (wasmSha256 !== undefined && !/^[0-9a-f]{64}$/.test(wasmSha256)) {
      e.fail("wasmSha256", "must be 64 lowercase hex digits");
    }
    o.adopt(e);
    if (name !== undefined && version !== undefined && wasmSha256 !== undefined) engine = { name, version, wasmSha256 };
  }

  o.skip();
  o.done();
  if (spiVersion === undefined || capabilities === undefined || limits === undefined || engine === undefined) {
    throw new DecodeError("incomplete document"); // unreachable: done() reported the missing member
  }
  if (semverMajor(spiVersion) === undefined) {
    throw new DecodeError(`spiVersion ${quote(spiVersion)} is not a semantic version`);
  }
  return deepFreeze({ spiVersion, capabilities, determinism, limits, engine });
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as JsonObject)[k]);
  }
  return v;
}

/**
 * A problem document (RFC 9457) with the service's extension members
 * (api/openapi.yaml, Problem; docs/problems.md): a refused request, or an
 * input of a batch that its route would answer with one.
 */
export interface ServiceProblem {
  /** docs/problems.md, with the problem's slug as the fragment. */
  readonly type?: string;
  readonly title?: string;
  readonly status?: number;
  readonly detail?: string;
  /** Whether sending the same request (or input) again can help. */
  readonly retryable?: boolean;
  /** The name of the limit that applied, as GET /v1/capabilities names it (maxBatchItems, say). */
  readonly limit?: string;
  readonly limitValue?: number;
  /** The body member at fault, dotted (limits.wallClockMs). */
  readonly field?: string;
  /** The request's id, to quote when reporting it. */
  readonly instance?: string;
  /** The byte offset, line and column of a decoding problem in the body. */
  readonly offset?: number;
  readonly line?: number;
  readonly column?: number;
}

const PROBLEM_STRINGS = ["type", "title", "detail", "limit", "field", "instance"] as const;
const PROBLEM_COUNTS = ["status", "limitValue", "offset", "line", "column"] as const;

/**
 * Reads a problem document as the Go decoder does (api.DecodeProblem):
 * every member optional, each it knows of its type, any other ignored.
 */
export function decodeProblem(v: unknown): ServiceProblem {
  const o = Reader.of("", v);
  const p: Record<string, unknown> = {};
  for (const k of PROBLEM_STRINGS) {
    const s = o.str(k, false);
    if (s !== undefined) p[k] = s;
  }
  for (const k of PROBLEM_COUNTS) {
    const n = o.count(k, false);
    if (n !== undefined) p[k] = k === "status" ? Math.min(n, 999) : n;
  }
  const retryable = o.bool("retryable", false);
  if (retryable !== undefined) p.retryable = retryable;
  o.skip();
  o.done();
  return p as ServiceProblem;
}

/** The channels of a typed failure (docs/spi.md, "Channels"). */
const CHANNELS = ["limitExceeded", "scriptError", "shapeMismatch", "scriptMissing", "inputTooLarge", "inputNotSerializable"] as const;

/**
 * A typed failure of POST /v1/evaluations (docs/spi.md, "Channels"): the
 * channel, and exactly that channel's members.
 */
export type EvaluationFailure =
  | { readonly channel: "limitExceeded"; readonly kind: "cpu" | "memory" | "wallClock" | "output" }
  | { readonly channel: "scriptError"; readonly name?: string; readonly message: string }
  | { readonly channel: "shapeMismatch"; readonly expected: string; readonly observed: string }
  | { readonly channel: "scriptMissing"; readonly scriptRef: string }
  | { readonly channel: "inputTooLarge"; readonly limitBytes: number }
  | { readonly channel: "inputNotSerializable"; readonly message: string };

/**
 * A 200 answer of POST /v1/evaluations, as a batch's line gives it for one
 * input: the value, or the typed failure; with the console output when it
 * was asked for (captureLogs) and what the run used.
 */
export type EvaluationAnswer = (
  | { readonly ok: true; readonly value: unknown; readonly failure?: never }
  | { readonly ok: false; readonly failure: EvaluationFailure; readonly value?: never }
) & {
  readonly logs?: string;
  readonly usage?: SandboxUsage;
};

/** Reads a failure object, strictly: its channel's members and no other (spi.DecodeFailure). */
function readFailure(v: unknown): EvaluationFailure {
  const o = Reader.of("", v);
  const channel = o.str("channel", true);
  const f: Record<string, unknown> = { channel };
  switch (channel) {
    case "limitExceeded":
      f.kind = o.oneOf("kind", o.str("kind", true), ["cpu", "memory", "wallClock", "output"] as const);
      break;
    case "scriptError": {
      const name = o.str("name", false);
      if (name !== undefined) f.name = name;
      f.message = o.str("message", true);
      break;
    }
    case "shapeMismatch":
      f.expected = o.str("expected", true);
      f.observed = o.str("observed", true);
      break;
    case "scriptMissing":
      f.scriptRef = o.str("scriptRef", true);
      break;
    case "inputTooLarge":
      f.limitBytes = o.count("limitBytes", true);
      break;
    case "inputNotSerializable":
      f.message = o.str("message", true);
      break;
    default:
      if (!o.failed) o.oneOf("channel", channel, CHANNELS);
  }
  o.done();
  return f as EvaluationFailure;
}

/** Runs read, and hands its DecodeError to o as the problem of o's member key. */
function within<T>(o: Reader, key: string, read: () => T): T | undefined {
  try {
    return read();
  } catch (err) {
    if (!(err instanceof DecodeError)) throw err;
    o.fail(key, err.message);
    return undefined;
  }
}

/**
 * Reads a 200 body of POST /v1/evaluations as the Go decoder does
 * (api.DecodeEvaluation): ok, then the value or a failure whose members
 * are exactly its channel's; the report members this client knows, logs
 * and usage, checked; any other member, a later version's, ignored.
 */
export function decodeEvaluation(v: unknown): EvaluationAnswer {
  const o = Reader.of("", v);
  const ok = o.bool("ok", true);
  const logs = o.str("logs", false);
  const usage = readUsage(o);
  const a: Record<string, unknown> = { ok };
  if (o.failed) {
    // the reader holds the problem
  } else if (ok) {
    a.value = o.take("value", true).value;
  } else {
    const { present, value } = o.take("failure", true);
    if (present) a.failure = within(o, "failure", () => readFailure(value));
  }
  for (const k of ["ok", "value", "failure"]) if (o.unread(k)) o.fail(k, "not a member of this kind of outcome");
  o.skip();
  o.done();
  if (logs !== undefined) a.logs = logs;
  if (usage !== undefined) a.usage = usage;
  return a as EvaluationAnswer;
}

/** A batch's last line: how many inputs came to what, and what their runs used together. */
export interface BatchSummary {
  /** The number of inputs, each answered by one line. */
  readonly items: number;
  /** The answers counted by what they came to: "ok" or the failure's channel. */
  readonly outcomes: Readonly<Record<string, number>>;
  /** The lines with a problem, and those not run. */
  readonly problems: number;
  readonly notRun: number;
  /**
   * The runs' usage summed, with the batch's one fetch and verification of
   * the script; peakMemoryBytes is the most any one run held,
   * memoryLimitBytes each run's limit.
   */
  readonly usage: SandboxUsage;
}

/** An input's answer: what POST /v1/evaluations answers for inputs[index] alone. */
export interface BatchAnswerLine {
  readonly index: number;
  readonly answer: EvaluationAnswer;
  readonly problem?: never;
  readonly notRun?: never;
  readonly summary?: never;
}

/** The problem POST /v1/evaluations would answer inputs[index] alone with; its retryable says whether sending it again can help. */
export interface BatchProblemLine {
  readonly index: number;
  readonly problem: ServiceProblem;
  readonly answer?: never;
  readonly notRun?: never;
  readonly summary?: never;
}

/**
 * An input not run, or not to its end: the batch stopped first (the
 * service's request timeout). notRun says why; sent again, the input runs
 * as if for the first time.
 */
export interface BatchNotRunLine {
  readonly index: number;
  readonly notRun: string;
  readonly answer?: never;
  readonly problem?: never;
  readonly summary?: never;
}

/** The last line of a batch answered whole. */
export interface BatchSummaryLine {
  readonly summary: BatchSummary;
  readonly index?: never;
  readonly answer?: never;
  readonly problem?: never;
  readonly notRun?: never;
}

/**
 * One line of a batch's answer (docs/batch.md): an input's answer, its
 * problem, an input not run, or the summary. Exactly one of answer,
 * problem, notRun and summary is set.
 */
export type BatchLine = BatchAnswerLine | BatchProblemLine | BatchNotRunLine | BatchSummaryLine;

/**
 * Reads one line of a batch's answer as the Go decoder does
 * (api.DecodeBatchLine), and as docs/spi.md, "How the wire evolves", says a
 * reader does: the members it knows checked, any other ignored.
 */
export function decodeBatchLine(v: unknown): BatchLine {
  const obj = Reader.of("", v);
  if (obj.unread("summary")) {
    const s = obj.child("summary", false);
    let summary: BatchSummary | undefined;
    if (s) {
      const items = s.count("items", true);
      const outcomes: Record<string, number> = {};
      const o = s.child("outcomes", true);
      if (o) {
        for (const k of o.keys()) {
          const n = o.count(k, true);
          // defined, not assigned: a channel a later version names "__proto__" is a key like any other
          if (n !== undefined) Object.defineProperty(outcomes, k, { value: n, enumerable: true, writable: true, configurable: true });
        }
        s.adopt(o);
      }
      const problems = s.count("problems", true);
      const notRun = s.count("notRun", true);
      const usage = readUsage(s, true);
      s.skip();
      obj.adopt(s);
      if (items !== undefined && problems !== undefined && notRun !== undefined && usage !== undefined) {
        summary = { items, outcomes, problems, notRun, usage };
      }
    }
    obj.skip();
    obj.done();
    return { summary: summary! };
  }
  const index = obj.count("index", true);
  let line: BatchLine | undefined;
  if (obj.failed) {
    // the reader holds the problem
  } else if (obj.unread("problem")) {
    const { value } = obj.take("problem", true);
    const problem = within(obj, "problem", () => decodeProblem(value));
    if (problem !== undefined) line = { index: index!, problem };
  } else if (obj.unread("notRun")) {
    if (obj.bool("notRun", true) !== true) obj.fail("notRun", "must be true when present");
    const detail = obj.nonEmpty("detail");
    if (detail !== undefined) line = { index: index!, notRun: detail };
  } else {
    obj.skip();
    obj.done();
    return { index: index!, answer: decodeEvaluation(v) }; // the index is a member it ignores
  }
  obj.skip();
  obj.done();
  return line!;
}
