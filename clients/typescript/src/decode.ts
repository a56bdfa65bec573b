// Decoding of the service's answers, as the Go decoders (api/) do it: an
// evaluation's answer is exactly one of ADR 0144 D2's shapes, with beside it
// the report members (the logs and usage this client knows, checked; any
// other, a later version's, ignored: docs/spi.md, "How the wire evolves"),
// a problem document, and a batch's lines. GET /v1/capabilities is
// capabilities.ts's.

import type { SandboxOutcome } from "./spi.js";
import { boundText, MAX_MESSAGE_UNITS } from "./text.js";
import { DecodeError, deepFreeze, isObject, kindOf, Reader, type JsonObject } from "./json.js";

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
    /**
     * The script's compile, in the run that compiled it; 0 in a run that started
     * from the script as an earlier run compiled it (and in an answer of a service
     * from before the phase, which lacks it).
     */
    readonly compile: number;
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

const PHASES = ["fetch", "verify", "setup", "compile", "run", "serialise"] as const;

/** The phases added since the wire's first version: 0 when an earlier service's answer lacks them. */
const ADDED: ReadonlySet<string> = new Set(["compile"]);

/**
 * The most milliseconds the Go decoder takes (a time.Duration's range): a
 * figure past it is as malformed there as here.
 */
const MAX_MILLIS = 9_223_372_036_854;

function millis(r: Reader, key: string, required = true): number | undefined {
  const { present, value } = r.take(key, required);
  if (!present) return required ? undefined : 0;
  if (typeof value !== "number" || !(value >= 0) || value > MAX_MILLIS || Object.is(value, -0)) {
    r.fail(key, `must be a non-negative number of milliseconds, got ${typeof value === "number" ? String(value) : kindOf(value)}`);
    return undefined;
  }
  return value;
}

/**
 * Reads a usage member: the members spi/wire.go writes (spi.AppendUsage), each checked and
 * required but a phase added since the first version (0 when absent); any other, in usage or
 * in its phases, a figure of a later version, is ignored (docs/spi.md, "How the wire evolves").
 */
function readUsage(o: Reader, required = false): SandboxUsage | undefined {
  const u = o.child("usage", required);
  if (u === undefined) return undefined;
  const p = u.child("phasesMs");
  const phases: Record<string, number | undefined> = {};
  if (p) {
    for (const k of PHASES) phases[k] = millis(p, k, !ADDED.has(k));
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
  const [fetch, verify, setup, compile, run, serialise] = PHASES.map((k) => phases[k]!) as [number, number, number, number, number, number];
  return deepFreeze({ phasesMs: { fetch, verify, setup, compile, run, serialise }, cpuMs, cpuBudgetUsed, cpuBudget, peakMemoryBytes, memoryLimitBytes });
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
