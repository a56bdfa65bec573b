// CloudRunSandboxBackend: loom's SandboxBackend (ADR 0144 D1) over the
// service's POST /v1/sandbox/evaluate. It mirrors the Go client (client/):
// an outcome comes only from a 200 answer whose body decodes into ADR 0144
// D2's closed vocabulary (with the report members beside it: the logs and
// usage go to the onRun hook and never onto the outcome, and members of a
// later version are ignored), or, for a body the service cannot read, from
// the service's rule for answers no retry can change (docs/spi.md); every
// other answer (a problem document, a 5xx, a network error, a redirect, a
// malformed or oversized body, no answer in time) becomes an infrastructure
// outcome, which the effect treats as untyped and retryable. Only the
// caller's own cancellation is thrown.

import { decodeAnswer, type BatchLine, type SandboxAnswer, type SandboxUsage } from "./decode.js";
import { decodeInfo, semverMajor, type ServiceEngine, type ServiceInfo, type ServiceLimits } from "./capabilities.js";
import { DecodeError, parseJson } from "./json.js";
import {
  SANDBOX_BACKEND_SPI_VERSION,
  type SandboxBackend,
  type SandboxBackendCapabilities,
  type SandboxOutcome,
  type SandboxRequest,
} from "./spi.js";
import { resolveDeterminism, type Determinism, type DeterminismOptions } from "./determinism.js";
import { boundText, isWellFormed, MAX_MESSAGE_UNITS, quote, utf8Length } from "./text.js";
import { runBatch, type BatchRequest } from "./batch.js";
import { CloudRunSandboxError } from "./error.js";
import {
  CLIENT,
  describe,
  errorText,
  Failure,
  MAX_PROBLEM_BYTES,
  MIN_CONTROL_TIMEOUT_MS,
  REQUEST_ID,
  Transport,
  type IdTokenHook,
  type Seen,
  type TransportConfig,
} from "./transport.js";
import { isAbortSignal, mediaType, type FetchLike, type FetchLikeResponse } from "./fetch.js";

/** The default of timeoutGraceMs: how long past the run's wall clock an evaluation may take. */
export const DEFAULT_TIMEOUT_GRACE_MS = 30_000;
/**
 * The least default of maxResponseBytes: the default is the larger of this and
 * what a run under the service's maxMemoryBytes can make (responseBoundFor).
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 << 20;

/**
 * The default of maxResponseBytes for a service whose maxMemoryBytes is
 * maxMemory: the longest value its SPI route returns (2 × maxMemoryBytes + 1
 * MiB, api/openapi.yaml) and a MiB for the outcome around it, at least
 * DEFAULT_MAX_RESPONSE_BYTES. The tests check it, and the Go client's bound,
 * against one table: api/testdata/bounds/response-bounds.json. The service does not bound the value by its
 * maxOutputBytes on this route (ADR 0144 D2 has no output limit), so this
 * backend reads any value the service can make and loom's effect, which bounds
 * the output, reports limitExceeded { kind: "output" } rather than an
 * infrastructure failure of the transport.
 */
export function responseBoundFor(maxMemory: number | undefined): number {
  if (typeof maxMemory !== "number" || !Number.isSafeInteger(maxMemory) || maxMemory < 0) return DEFAULT_MAX_RESPONSE_BYTES;
  return Math.max(DEFAULT_MAX_RESPONSE_BYTES, Math.min(2 * maxMemory + (2 << 20), Number.MAX_SAFE_INTEGER));
}

const MAX_CAPABILITIES_BYTES = 1 << 20;
const EVALUATE_PATH = "/v1/sandbox/evaluate";


/**
 * What one evaluation answered beside its outcome, which ADR 0144 D2's closed
 * outcome cannot carry: the run's console, what it used, and the service's id
 * for it. Frozen.
 */
export interface RunReport {
  /**
   * The service's id for the request (its X-Request-Id answer header): every
   * log line the service wrote for it, and a problem document's instance,
   * carry it. The one requestId gave when the service's answer had none, else
   * "".
   */
  readonly requestId: string;
  /** The run's console output, when it was asked for (captureLogs) and the service answered 200. */
  readonly logs?: string;
  /** What the run used, when the service answered 200 (docs/spi.md, "Usage"). */
  readonly usage?: SandboxUsage;
  /** The outcome evaluate resolves with: the same object, to read and not to change. */
  readonly outcome: SandboxOutcome;
}

/** Receives a RunReport; see the onRun option. */
export type RunHook = (run: RunReport) => void;

/**
 * Returns the id to send as X-Request-Id for a request (loom's own id for the
 * run, say), or undefined for none. An id the service would not take (1 to
 * 128 of A-Z a-z 0-9 - . _ ~) is not sent, and the service makes its own.
 */
export type RequestIdHook = (request: SandboxRequest) => string | undefined;


/** Options of CloudRunSandboxBackend.create. */
export interface CloudRunSandboxBackendOptions {
  /** The service's base URL, http or https, without credentials, query or fragment (a path prefix is kept). */
  url: string;
  /** The fetch to send requests with; default the global `fetch`. Its connection pool is its own (see close()). */
  fetch?: FetchLike;
  /**
   * Returns an ID token for the audience; every request then carries
   * `Authorization: Bearer <token>`. Called once per request: cache in the
   * hook (google-auth-library's IdTokenClient does). The token never appears
   * in an outcome or error this package composes.
   */
  idToken?: IdTokenHook;
  /** The audience passed to idToken; default the URL's origin, which is what Cloud Run expects for a service URL. */
  audience?: string;
  /**
   * How long an evaluation may take beyond its limits.wallClockMs before this
   * client gives up on the HTTP call and reports infrastructure (a hung
   * service, a cold start that never ends). Default 30 000; a finite number
   * >= 0. GET /v1/capabilities (in create) and GET /readyz (in warm) have
   * this as their whole timeout, at least 1 s.
   */
  timeoutGraceMs?: number;
  /**
   * Whether a 429 (the instance is running another evaluation) is retried
   * after its Retry-After, within the request's signal and timeout (default
   * true), or reported at once as infrastructure.
   */
  retryBusy?: boolean;
  /**
   * The largest outcome body accepted; default: what a run under the service's
   * maxMemoryBytes can make (responseBoundFor), at least 64 MiB. A longer one is
   * infrastructure.
   */
  maxResponseBytes?: number;
  /** Cancels create(): it rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Called once for each evaluate whose request the service answered, with
   * the outcome and what the outcome cannot carry (the console, the usage,
   * the request id), synchronously before evaluate resolves. Not called for
   * an answer given here without sending (an invalid request, or a body
   * the service cannot read), nor when the service never answered (a
   * network error, a timeout) or the caller aborted. Whatever the hook
   * throws, or an async hook rejects with, is dropped: the outcome is
   * evaluate's to return, and this package writes nothing to the console.
   */
  onRun?: RunHook;
  /**
   * Ask the service for the run's console output (captureLogs), which only
   * the RunReport carries. Default: true when onRun is given, else false.
   */
  captureLogs?: boolean;
  /** The X-Request-Id to send with each evaluation; default none (the service makes one). */
  requestId?: RequestIdHook;
  /**
   * Make every run replayable (docs/spi.md, "Replayable runs"): the service
   * seeds `Math.random` and freezes every clock the script can read, so that
   * the outcome is a pure function of the script, the input, the limits and
   * these values. `true` takes the service's defaults (a seed derived from
   * the script and the input, the instant 2000-01-01T00:00:00Z); an object
   * names the seed, the instant, or both. The wall-clock limit stays the
   * machine's: a run near its wall clock may meet it once and finish another
   * time. create() refuses a seed or an instant the service would refuse
   * ("invalid-options"), and a service whose capabilities do not say
   * `determinism: true` ("not-replayable"). Default false.
   */
  determinism?: boolean | DeterminismOptions;
}


interface Config extends TransportConfig {
  onRun: RunHook | undefined;
  captureLogs: boolean;
  requestId: RequestIdHook | undefined;
  determinism: Determinism | undefined;
}

/** A value for a message, whatever its type. */
function show(v: unknown): string {
  return typeof v === "number" ? String(v) : typeof v === "string" ? quote(v) : v === null ? "null" : typeof v;
}

/** Checks the service URL; returns it without a trailing slash, and its origin. */
function parseBase(raw: unknown): { base: string; origin: string } {
  if (typeof raw !== "string" || raw === "") throw new CloudRunSandboxError(`${CLIENT}: url must be a non-empty string`, "invalid-options");
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new CloudRunSandboxError(`${CLIENT}: url ${quote(raw, 200)} is not a URL`, "invalid-options");
  }
  if (u.username !== "" || u.password !== "") {
    throw new CloudRunSandboxError(`${CLIENT}: url must not carry credentials (use idToken)`, "invalid-options");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new CloudRunSandboxError(`${CLIENT}: url ${quote(raw, 200)}: scheme must be http or https`, "invalid-options");
  }
  if (u.hostname === "") throw new CloudRunSandboxError(`${CLIENT}: url ${quote(raw, 200)} has no host`, "invalid-options");
  if (u.search !== "" || u.hash !== "" || /[?#]/.test(raw)) {
    throw new CloudRunSandboxError(`${CLIENT}: url ${quote(raw, 200)} must not have a query or fragment`, "invalid-options");
  }
  return { base: u.origin + u.pathname.replace(/\/+$/, ""), origin: u.origin };
}

function configure(options: CloudRunSandboxBackendOptions): Config {
  if (typeof options !== "object" || options === null) {
    throw new CloudRunSandboxError(`${CLIENT}: create needs an options object`, "invalid-options");
  }
  const { url, fetch, idToken, audience, timeoutGraceMs, retryBusy, maxResponseBytes, signal, onRun, captureLogs, requestId, determinism } = options;
  const { base, origin } = parseBase(url);
  const bad = (what: string) => new CloudRunSandboxError(`${CLIENT}: ${what}`, "invalid-options");
  if (fetch !== undefined && typeof fetch !== "function") throw bad("fetch must be a function");
  if (fetch === undefined && typeof globalThis.fetch !== "function") throw bad("no global fetch: pass options.fetch");
  if (idToken !== undefined && typeof idToken !== "function") throw bad("idToken must be a function");
  if (audience !== undefined && (typeof audience !== "string" || audience === "")) throw bad("audience must be a non-empty string");
  const grace = timeoutGraceMs ?? DEFAULT_TIMEOUT_GRACE_MS;
  if (typeof grace !== "number" || !Number.isFinite(grace) || grace < 0) {
    throw bad(`timeoutGraceMs must be a finite number >= 0, got ${show(timeoutGraceMs)}`);
  }
  if (retryBusy !== undefined && typeof retryBusy !== "boolean") throw bad("retryBusy must be a boolean");
  const maxBody = maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (typeof maxBody !== "number" || !Number.isSafeInteger(maxBody) || maxBody <= 0) {
    throw bad(`maxResponseBytes must be a positive integer, got ${show(maxResponseBytes)}`);
  }
  if (signal !== undefined && !isAbortSignal(signal)) throw bad("signal must be an AbortSignal");
  if (onRun !== undefined && typeof onRun !== "function") throw bad("onRun must be a function");
  if (captureLogs !== undefined && typeof captureLogs !== "boolean") throw bad("captureLogs must be a boolean");
  if (requestId !== undefined && typeof requestId !== "function") throw bad("requestId must be a function");
  let replay: Determinism | undefined;
  try {
    replay = resolveDeterminism(determinism);
  } catch (err) {
    throw bad((err as Error).message);
  }
  return {
    base,
    origin,
    fetch: fetch ?? ((u, init) => globalThis.fetch(u, init) as unknown as Promise<FetchLikeResponse>),
    idToken,
    audience: audience ?? origin,
    timeoutGraceMs: grace,
    controlTimeoutMs: Math.max(grace, MIN_CONTROL_TIMEOUT_MS),
    retryBusy: retryBusy ?? true,
    maxResponseBytes: maxBody,
    onRun,
    captureLogs: captureLogs ?? onRun !== undefined,
    requestId,
    determinism: replay,
  };
}

function requireJson(op: string, a: { contentType: string | null; bytes: Uint8Array }): Failure | undefined {
  if (mediaType(a.contentType) !== "application/json") {
    return new Failure(describe({ op, status: 200, reason: `response Content-Type is ${quote(a.contentType ?? "")}, want application/json` }), { status: 200 });
  }
  return undefined;
}

/**
 * The answer to a request whose body, text, is over the service's
 * maxRequestBytes, which the service cannot read; undefined for any other,
 * which is sent. The service's bound holds every request whose script and
 * input are within their bounds however they are escaped, so such a body has
 * a script or an input over its bound, and it is answered by the service's
 * own rule for what no retry can change (docs/spi.md; spi.Bounds in the
 * service, whose table api/testdata/bounds/settled.json this package's tests
 * check this against), sizes in UTF-8 bytes as the service counts them, in
 * its order: the script, the memory, the input. A request the rule leaves
 * to a run is sent, and the service's 413 is infrastructure.
 */
function unreadable(l: ServiceLimits, text: string, script: string, memoryBytes: number, inputJson: string): SandboxOutcome | undefined {
  if (l.maxRequestBytes === undefined || text.length <= l.maxRequestBytes / 3 || utf8Length(text) <= l.maxRequestBytes) return undefined;
  const scriptBytes = utf8Length(script);
  if (l.maxScriptBytes !== undefined && scriptBytes > l.maxScriptBytes) {
    return { ok: false, kind: "threw", name: "RangeError", message: `the script is ${scriptBytes} bytes, over the service's maxScriptBytes of ${l.maxScriptBytes}` };
  }
  if (l.minMemoryBytes !== undefined && memoryBytes < l.minMemoryBytes) return { ok: false, kind: "limit", limit: "memory" };
  if (l.maxInputBytes !== undefined && utf8Length(inputJson) > l.maxInputBytes) return { ok: false, kind: "inputTooLarge" };
  return undefined;
}

/**
 * Keeps what a hook returned from ending the process: a rejected promise
 * nobody handles is an unhandled rejection, which ends a Node process. The
 * value itself is not used.
 */
function settle(v: unknown): void {
  if (typeof v === "object" && v !== null && typeof (v as PromiseLike<unknown>).then === "function") {
    (v as PromiseLike<unknown>).then(undefined, () => {});
  }
}

function infrastructure(message: string): SandboxOutcome {
  return { ok: false, kind: "infrastructure", message: boundText(message, MAX_MESSAGE_UNITS) };
}

/**
 * loom's SandboxBackend (ADR 0144 D1) backed by a sandbox-cloudrun service.
 *
 * ```ts
 * const backend = await CloudRunSandboxBackend.create({ url: "https://sandbox-….run.app" });
 * ```
 */
export class CloudRunSandboxBackend implements SandboxBackend {
  /** The service's base URL, as used. */
  readonly url: string;
  /** The service's declaration (ADR 0144 D4), as create() read and validated it; frozen. */
  readonly capabilities: Readonly<SandboxBackendCapabilities>;
  /** The backend SPI version the service reported. */
  readonly spiVersion: string;
  /** The service's limits as create() read them (members this client does not know included); frozen. */
  readonly limits: ServiceLimits;
  /** The service's engine build; frozen. */
  readonly engine: ServiceEngine;
  /**
   * The determinism member every evaluate sends, as the option resolved it
   * (a Date as the RFC 3339 text sent), to record beside a run so that it can
   * be replayed; undefined when runs are not replayable. Frozen.
   */
  readonly determinism: Determinism | undefined;
  readonly #t: Transport<Config>;

  private constructor(t: Transport<Config>, info: ServiceInfo) {
    this.#t = t;
    this.url = t.cfg.base;
    this.capabilities = info.capabilities;
    this.spiVersion = info.spiVersion;
    this.limits = info.limits;
    this.engine = info.engine;
    this.determinism = t.cfg.determinism;
    Object.freeze(this);
  }

  /**
   * Reads the service's GET /v1/capabilities once, validates it and keeps a
   * frozen copy. Rejects with a CloudRunSandboxError when the options are
   * invalid ("invalid-options"), the service does not answer usably
   * ("unavailable"), the document is invalid ("invalid-capabilities"), the
   * service implements another major SPI version ("incompatible-spi") or the
   * options ask for determinism of a service that does not offer it
   * ("not-replayable"); with options.signal's reason when it aborts.
   */
  static async create(options: CloudRunSandboxBackendOptions): Promise<CloudRunSandboxBackend> {
    const cfg = configure(options);
    const t = new Transport(cfg);
    const op = "GET /v1/capabilities";
    try {
      const info = await t.run(op, options.signal, cfg.controlTimeoutMs, `timeoutGraceMs ${cfg.timeoutGraceMs}, at least ${MIN_CONTROL_TIMEOUT_MS}`, async (signal, deadline) => {
        const a = await t.exchange("GET", "/v1/capabilities", undefined, MAX_CAPABILITIES_BYTES, signal, deadline);
        const wrong = requireJson(op, a);
        if (wrong) throw new Failure(`invalid capabilities document from ${cfg.base}: ${wrong.message}`, { status: 200, code: "invalid-capabilities" });
        let info: ServiceInfo;
        try {
          info = decodeInfo(parseJson(a.bytes));
        } catch (err) {
          if (!(err instanceof DecodeError)) throw err;
          throw new Failure(`invalid capabilities document from ${cfg.base}: ${err.message}`, { status: 200, code: "invalid-capabilities" });
        }
        if (semverMajor(info.spiVersion) !== semverMajor(SANDBOX_BACKEND_SPI_VERSION)) {
          throw new Failure(
            `incompatible sandbox backend SPI: the service at ${cfg.base} implements ${quote(info.spiVersion)}, this client ${SANDBOX_BACKEND_SPI_VERSION}`,
            { status: 200, code: "incompatible-spi" },
          );
        }
        // A run the caller means to replay must not run otherwise, and the
        // service would refuse every request with the member.
        if (cfg.determinism !== undefined && !info.determinism) {
          throw new Failure(
            `${CLIENT}: the options ask for replayable runs (determinism) and the service at ${cfg.base} does not make runs replayable: its capabilities do not say "determinism": true`,
            { status: 200, code: "not-replayable" },
          );
        }
        return info;
      });
      if (options.maxResponseBytes === undefined) cfg.maxResponseBytes = responseBoundFor(info.limits.maxMemoryBytes);
      return new CloudRunSandboxBackend(t, info);
    } catch (err) {
      if (err instanceof Failure) throw err.toError();
      throw err;
    }
  }

  /**
   * Runs the request on the service (POST /v1/sandbox/evaluate) and returns
   * its outcome object as received, once it is exactly one of ADR 0144 D2's
   * shapes (the answer's logs and usage go to onRun, never onto the outcome).
   * Answers no retry can change are the service's, typed (docs/spi.md,
   * "Answers no retry can change"). The request is sent as it is, but for a
   * body over the service's maxRequestBytes, which it cannot read: that one
   * is answered here by the service's rule, and not sent. Aborting
   * request.signal cancels the HTTP call (and so the run, on the service) and
   * rejects with the signal's reason: an aborted signal never yields an
   * outcome. Everything else that goes wrong is an infrastructure outcome
   * whose message says what happened (bounded to 2048 UTF-16 units, ID token
   * blanked). The HTTP call's own timeout is the wall clock sent +
   * timeoutGraceMs.
   */
  async evaluate(request: SandboxRequest): Promise<SandboxOutcome> {
    const op = `POST ${EVALUATE_PATH}`;
    let signal: AbortSignal | undefined;
    try {
      const s: unknown = request.signal;
      if (s !== undefined && !isAbortSignal(s)) return infrastructure(`${CLIENT}: invalid request: signal is not an AbortSignal`);
      signal = s;
    } catch (err) {
      return infrastructure(`${CLIENT}: invalid request: ${errorText(err)}`);
    }
    signal?.throwIfAborted();
    const cfg = this.#t.cfg;
    const seen: Seen = { answered: false, requestId: "" };
    let answer: SandboxAnswer | undefined;
    let outcome: SandboxOutcome;
    try {
      const prepared = this.#prepare(request);
      if ("refused" in prepared) return infrastructure(`${CLIENT}: ${prepared.refused}`);
      if ("answer" in prepared) return prepared.answer;
      const { body, wallClockMs } = prepared;
      const headers: Record<string, string> = {};
      const id = this.#requestId(request);
      if (id !== undefined) headers["x-request-id"] = id;
      const timeoutMs = wallClockMs + cfg.timeoutGraceMs;
      const why = `limits.wallClockMs ${wallClockMs} + timeoutGraceMs ${cfg.timeoutGraceMs}`;
      answer = await this.#t.run(op, signal, timeoutMs, why, async (s, deadline) => {
        const a = await this.#t.exchange("POST", EVALUATE_PATH, body, cfg.maxResponseBytes, s, deadline, headers, seen);
        const wrong = requireJson(op, a);
        if (wrong) throw wrong;
        try {
          return decodeAnswer(parseJson(a.bytes));
        } catch (err) {
          if (!(err instanceof DecodeError)) throw err;
          throw new Failure(describe({ op, status: 200, reason: `malformed outcome: ${err.message}` }), { status: 200 });
        }
      });
      outcome = answer.outcome;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      outcome = err instanceof Failure ? infrastructure(err.message) : infrastructure(`${CLIENT}: ${op}: ${errorText(err)}`);
    }
    if (seen.answered) this.#report(seen.requestId, answer, outcome);
    return outcome;
  }

  /** Hands the hook what the outcome cannot carry; nothing it does changes the outcome. */
  #report(requestId: string, answer: SandboxAnswer | undefined, outcome: SandboxOutcome): void {
    const hook = this.#t.cfg.onRun;
    if (hook === undefined) return;
    const report: { requestId: string; logs?: string; usage?: SandboxUsage; outcome: SandboxOutcome } = { requestId, outcome };
    if (answer?.logs !== undefined) report.logs = answer.logs;
    if (answer?.usage !== undefined) report.usage = answer.usage;
    try {
      settle(hook(Object.freeze(report)));
    } catch {
      // dropped: see onRun
    }
  }

  /** The caller's id for the request, when it gave a well-formed one. */
  #requestId(request: SandboxRequest): string | undefined {
    const hook = this.#t.cfg.requestId;
    if (hook === undefined) return undefined;
    try {
      const id: unknown = hook(request);
      if (typeof id === "string") return REQUEST_ID.test(id) ? id : undefined;
      settle(id); // an async hook's promise is no id
      return undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Encodes the request's body as it is; or says why it is refused here (an
   * infrastructure outcome); or, for a body the service cannot read, answers
   * it by the service's rule (unreadable).
   */
  #prepare(request: SandboxRequest): { body: string; wallClockMs: number } | { refused: string } | { answer: SandboxOutcome } {
    const { script, inputJson, limits } = request;
    if (typeof script !== "string") return { refused: `invalid request: script must be a string, got ${show(script)}` };
    if (typeof inputJson !== "string") return { refused: `invalid request: inputJson must be a string, got ${show(inputJson)}` };
    if (typeof limits !== "object" || limits === null) return { refused: `invalid request: limits must be an object, got ${show(limits)}` };
    const { wallClockMs, memoryBytes } = limits;
    // A zero or negative limit is refused here rather than sent: the service
    // must never read it as "use the default". A fractional wall clock is
    // rounded up (never ask for less time than the caller gave).
    const wall = typeof wallClockMs === "number" ? Math.ceil(wallClockMs) : NaN;
    if (!(wallClockMs > 0) || !Number.isSafeInteger(wall) || !(memoryBytes > 0) || !Number.isSafeInteger(memoryBytes)) {
      return {
        refused: `invalid limits: wallClockMs and memoryBytes must be positive (memoryBytes an integer), got wallClockMs ${show(wallClockMs)} and memoryBytes ${show(memoryBytes)}`,
      };
    }
    // A lone surrogate in the script is sent as its escape (JSON.stringify
    // writes one so), and the service runs it as that code unit. Inside
    // inputJson it would be a character of JSON text, which UTF-8 cannot
    // carry; escaped inside that text it is fine.
    if (!isWellFormed(inputJson)) return { refused: "the input has a lone surrogate, which a JSON request cannot carry as UTF-8" };
    // Limits over the service's bounds are sent as they are: the service
    // answers what no retry can change (docs/spi.md).
    const body: Record<string, unknown> = { script, inputJson, limits: { wallClockMs: wall, memoryBytes } };
    if (this.#t.cfg.captureLogs) body.captureLogs = true;
    if (this.#t.cfg.determinism !== undefined) body.determinism = this.#t.cfg.determinism;
    const text = JSON.stringify(body);
    const answer = unreadable(this.limits, text, script, memoryBytes, inputJson);
    if (answer !== undefined) return { answer };
    // The service runs no longer than its maximum: the client waits no longer.
    return { body: text, wallClockMs: Math.min(wall, this.limits.maxWallClockMs ?? wall) };
  }

  /**
   * Runs one stored script over many inputs (POST /v1/evaluations:batch):
   * the script is fetched and verified once, each input runs in a fresh run
   * of its own, as /v1/evaluations runs it alone, and the answer's lines are
   * yielded as they arrive: one per input, in the inputs' order (index 0, 1,
   * …), then the summary. The request is sent when the iteration begins.
   * Leaving the iteration early (break, return, a throw in its body) aborts
   * the request: the connection is closed, and the service stops the
   * batch's runs. The backend's determinism option applies; onRun is not
   * called (each answer carries its logs and usage).
   *
   * The iteration throws request.signal's reason when it aborts, or a
   * CloudRunSandboxError: "invalid-request" for a request refused here and
   * never sent; "unavailable" when the service refused the batch (its
   * problem, status and retryable, as POST /v1/evaluations gets one) or
   * could not be reached; "cut", retryable, when the answer ended before its
   * summary (the inputs without a line were not answered, and sent again
   * they run as if for the first time); "invalid-answer" when a line is
   * malformed or out of order; "closed" after close().
   */
  batch(request: BatchRequest): AsyncGenerator<BatchLine, void, undefined> {
    return runBatch(this.#t, this.limits, this.determinism, request);
  }

  /**
   * Asks the service whether it is ready (GET /readyz): an instance that
   * answers 200 has compiled and warmed its engine, so calling this ahead of
   * traffic wakes a Cloud Run instance. Rejects with a CloudRunSandboxError
   * otherwise.
   */
  async warm(): Promise<void> {
    const op = "GET /readyz";
    const t = this.#t;
    try {
      await t.run(op, undefined, t.cfg.controlTimeoutMs, `timeoutGraceMs ${t.cfg.timeoutGraceMs}, at least ${MIN_CONTROL_TIMEOUT_MS}`, (s, d) =>
        t.exchange("GET", "/readyz", undefined, MAX_PROBLEM_BYTES, s, d),
      );
    } catch (err) {
      if (err instanceof Failure) throw err.toError();
      throw err;
    }
  }

  /**
   * Stops this backend: requests in flight are aborted (an evaluate settles
   * as infrastructure, and the service stops the run when the connection
   * goes), and every later evaluate is infrastructure ("closed") and warm
   * rejects. Idle keep-alive connections belong to the fetch implementation:
   * Node's global fetch closes them after its keep-alive timeout (a few
   * seconds) and they do not keep the process alive; with your own fetch
   * over your own undici Agent, close that Agent after this.
   */
  async close(): Promise<void> {
    this.#t.close();
  }
}
