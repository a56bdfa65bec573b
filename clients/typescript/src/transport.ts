// The HTTP side of the client, as the Go client's (client/http.go): one
// attempt, busy retries with their back-off, a deadline and the caller's
// abort for each exchange, close(), and what a failed exchange says,
// bounded and with the ID token blanked.

import { decodeProblem, type ServiceProblem } from "./decode.js";
import { parseJson } from "./json.js";
import { CloudRunSandboxError, type CloudRunSandboxErrorCode } from "./error.js";
import { boundText, MAX_MESSAGE_UNITS } from "./text.js";
import { discard, mediaType, race, readCapped, type FetchLike, type FetchLikeInit, type FetchLikeResponse } from "./fetch.js";

export const MAX_PROBLEM_BYTES = 64 << 10;
export const MIN_CONTROL_TIMEOUT_MS = 1_000;
// A busy instance is often free again within milliseconds (a run ends, or
// Cloud Run routes the retry to another instance), so a 429 is retried after
// a short wait that doubles each time, never longer than the Retry-After (or
// DEFAULT_BUSY_WAIT_MS without one). The first wait is jittered so that
// callers refused together do not come back together.
const FIRST_BUSY_WAIT_MS = 10;
const BUSY_JITTER_MS = 15;
const DEFAULT_BUSY_WAIT_MS = 1_000;
const MAX_TIMER_MS = 2 ** 31 - 1;
export const CLIENT = "sandbox service client";

/** Returns a Google-signed ID token for audience (the service URL's origin unless `audience` says otherwise). */
export type IdTokenHook = (audience: string) => Promise<string>;

/** What a Failure carries beside its message. */
export interface FailureFacts {
  /** The HTTP status, when a response arrived. */
  status?: number;
  code?: CloudRunSandboxErrorCode;
  /** Whether the same request may succeed later (as the Go client's Error.Retryable). */
  retryable?: boolean;
  problem?: ServiceProblem;
  /** The service's id for the request, when an answer named one. */
  requestId?: string;
}

/** A failed exchange, already described (bounded, token redacted). Internal. */
export class Failure {
  constructor(
    readonly message: string,
    readonly facts: FailureFacts = {},
  ) {}

  get status(): number | undefined {
    return this.facts.status;
  }

  get code(): CloudRunSandboxErrorCode | undefined {
    return this.facts.code;
  }

  /** The error a caller gets for it: code "unavailable" unless the failure names another. */
  toError(): CloudRunSandboxError {
    const { code, status, ...rest } = this.facts;
    return new CloudRunSandboxError(this.message, code ?? "unavailable", status, rest);
  }
}

/** What the last attempt of an exchange got from the service, for the RunReport. */
export interface Seen {
  /** A response arrived (any status). */
  answered: boolean;
  requestId: string;
}

/** The X-Request-Id the service takes from a caller and gives back (api/openapi.yaml, RequestId). */
export const REQUEST_ID = /^[A-Za-z0-9._~-]{1,128}$/;

/** What a failed attempt says, before a reason is added. */
interface Said {
  op: string;
  status?: number;
  problem?: ServiceProblem;
  reason?: string;
}

/** Blanks the request's ID token in a text. */
export type Redact = (s: string) => string;

type Answer =
  | ({ ok: true } & Opened)
  | { ok: false; said: Said; redact: Redact; requestId: string; retryAfterMs?: number };

/**
 * Whether a non-200 answer may succeed later, as the Go client decides: the
 * problem document's retryable when it has one; else true for a busy
 * service and a gateway or availability status (502, 503, 504).
 */
function retryableStatus(status: number, problem: ServiceProblem | undefined): boolean {
  if (problem?.retryable !== undefined) return problem.retryable;
  return status === 429 || status === 502 || status === 503 || status === 504;
}

/** Composes a message as the Go client's Error.Error does: bounded, token redacted. */
export function describe(s: Said, redact: Redact = (x) => x): string {
  let m = `sandbox service: ${s.op}`;
  if (s.status !== undefined) m += `: HTTP ${s.status}`;
  for (const t of [s.problem?.title, s.problem?.detail]) if (t) m += `: ${t}`;
  if (s.reason) m += `: ${s.reason}`;
  return boundText(redact(m), MAX_MESSAGE_UNITS);
}

/** The text of something thrown, with its causes (a fetch's "fetch failed" says little alone); never throws. */
export function errorText(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let i = 0; i < 4 && e !== undefined && e !== null; i++) {
    try {
      let t: string;
      if (e instanceof Error) {
        t = e.message || e.name;
        const code = (e as { code?: unknown }).code;
        if (typeof code === "string" && !t.includes(code)) t += ` (${code})`;
      } else {
        t = String(e);
      }
      if (t && !parts.some((p) => p.includes(t))) parts.push(t);
      e = e instanceof Error ? e.cause : undefined;
    } catch {
      parts.push("an error that cannot be described");
      break;
    }
  }
  return boundText(parts.join(": ") || "unknown error", MAX_MESSAGE_UNITS);
}


/** An RFC 6750 b64token: a JWT, or any opaque token of the same alphabet, so a hook cannot smuggle a header through it. */
function validToken(t: unknown): t is string {
  return typeof t === "string" && t.length > 0 && t.length <= 16 << 10 && /^[A-Za-z0-9\-._~+/=]+$/.test(t);
}

/** Waits ms, or rejects with the signal's reason when it aborts first (the timer is released). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The Retry-After of a 429 as delay-seconds or an HTTP-date (RFC 9110 10.2.3), in ms. */
function retryAfter(v: string | null): number | undefined {
  const s = (v ?? "").trim();
  if (s === "") return undefined;
  if (/^[0-9]+$/.test(s)) {
    const n = Number(s);
    return n <= 0xffffffff ? n * 1000 : undefined;
  }
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : Math.max(t - Date.now(), 0);
}


/** What the HTTP side needs of the backend's options, resolved (configure). */
export interface TransportConfig {
  base: string;
  origin: string;
  fetch: FetchLike;
  idToken: IdTokenHook | undefined;
  audience: string;
  timeoutGraceMs: number;
  controlTimeoutMs: number;
  retryBusy: boolean;
  maxResponseBytes: number;
}

/** The Accept of a request whose answer is JSON. */
const ACCEPT_JSON = "application/json, application/problem+json";

/** A 200 answer, its body still to be read. */
export interface Opened {
  readonly res: FetchLikeResponse;
  /** Blanks the request's ID token in a text. */
  readonly redact: Redact;
  /** The service's id for the request (its X-Request-Id answer header, when well formed), else "". */
  readonly requestId: string;
}

/**
 * One exchange's life: its signal aborts on the caller's abort, on its
 * timeout and on close(). end() releases it.
 */
export class Call {
  readonly signal: AbortSignal;
  /** When the timeout aborts the call, in ms since the epoch. */
  readonly deadline: number;
  readonly #ac = new AbortController();
  readonly #timer: ReturnType<typeof setTimeout>;
  readonly #onUser: () => void;
  #timedOut = false;

  constructor(
    readonly op: string,
    private readonly user: AbortSignal | undefined,
    readonly timeoutMs: number,
    /** What the timeout is made of, for its message. */
    readonly why: string,
    private readonly inflight: Set<AbortController>,
  ) {
    this.signal = this.#ac.signal;
    this.deadline = Date.now() + timeoutMs;
    this.#onUser = () => this.#ac.abort(user?.reason);
    user?.addEventListener("abort", this.#onUser, { once: true });
    this.#timer = setTimeout(
      () => {
        this.#timedOut = true;
        this.#ac.abort(new Failure("timeout"));
      },
      Math.min(timeoutMs, MAX_TIMER_MS),
    );
    inflight.add(this.#ac);
  }

  /** Whether the call's timeout has passed. */
  get timedOut(): boolean {
    return this.#timedOut;
  }

  /**
   * What err, thrown during the call, is to its caller: the caller's abort
   * reason (whatever else happened: cancellation wins), or a Failure.
   */
  error(err: unknown): unknown {
    if (this.user?.aborted) return this.user.reason;
    if (this.#timedOut) return new Failure(`sandbox service: ${this.op}: no answer within ${this.timeoutMs} ms (${this.why})`, { retryable: true });
    if (this.#ac.signal.aborted) return new Failure(`${CLIENT}: ${this.op}: the backend was closed while the request was in flight`, { code: "closed" });
    if (err instanceof Failure) return err;
    return new Failure(`${CLIENT}: ${this.op}: ${errorText(err)}`);
  }

  /**
   * Ends the call: its timer and listener released; with abort, the request
   * aborted if it is still in flight, which closes its connection.
   */
  end(abort = false): void {
    clearTimeout(this.#timer);
    this.user?.removeEventListener("abort", this.#onUser);
    this.inflight.delete(this.#ac);
    if (abort) this.#ac.abort();
  }
}

/** The HTTP side: attempts, busy retries, deadlines and close(). */
export class Transport<C extends TransportConfig = TransportConfig> {
  readonly #inflight = new Set<AbortController>();
  #closed = false;

  constructor(readonly cfg: C) {}

  get closed(): boolean {
    return this.#closed;
  }

  close(): void {
    this.#closed = true;
    for (const ac of this.#inflight) ac.abort(new CloudRunSandboxError(`${CLIENT}: closed`, "closed"));
    this.#inflight.clear();
  }

  /**
   * Starts a call of timeoutMs; throws the caller's abort reason when it has
   * aborted already, or a Failure when the backend is closed.
   */
  begin(op: string, user: AbortSignal | undefined, timeoutMs: number, why: string): Call {
    user?.throwIfAborted();
    if (this.#closed) throw new Failure(`${CLIENT}: ${op}: the backend is closed`, { code: "closed" });
    return new Call(op, user, timeoutMs, why, this.#inflight);
  }

  /**
   * Runs fn under a call's signal (begin). It returns fn's result, or throws
   * the caller's abort reason (whatever else happened: cancellation wins),
   * or a Failure.
   */
  async run<T>(
    op: string,
    user: AbortSignal | undefined,
    timeoutMs: number,
    why: string,
    fn: (signal: AbortSignal, deadline: number) => Promise<T>,
  ): Promise<T> {
    const call = this.begin(op, user, timeoutMs, why);
    try {
      const result = await fn(call.signal, call.deadline);
      if (user?.aborted) throw user.reason;
      return result;
    } catch (err) {
      throw call.error(err);
    } finally {
      call.end();
    }
  }

  /**
   * Sends the request, retrying a 429 when configured to (with the back-off
   * of FIRST_BUSY_WAIT_MS); returns a 200 answer, its body unread, or throws
   * a Failure. seen, when given, says what the last attempt got from the
   * service.
   */
  async open(
    method: string,
    path: string,
    body: string | undefined,
    signal: AbortSignal,
    deadline: number,
    extraHeaders: Record<string, string> = {},
    seen: Seen = { answered: false, requestId: "" },
    accept = ACCEPT_JSON,
  ): Promise<Opened> {
    let backoff = FIRST_BUSY_WAIT_MS + Math.floor(Math.random() * (BUSY_JITTER_MS + 1));
    for (let attempts = 1; ; attempts++) {
      const a = await this.#once(method, path, body, signal, { accept, ...extraHeaders }, seen);
      if (a.ok) return a;
      const status = a.said.status ?? 0;
      const facts: FailureFacts = { status, retryable: retryableStatus(status, a.said.problem), requestId: a.requestId };
      if (a.said.problem) facts.problem = a.said.problem;
      if (status !== 429 || !this.cfg.retryBusy) throw new Failure(describe(a.said, a.redact), facts);
      // A Retry-After of 0 still leaves FIRST_BUSY_WAIT_MS between attempts,
      // so that a server that says so cannot make this a busy loop.
      const wait = Math.min(backoff, Math.max(a.retryAfterMs ?? DEFAULT_BUSY_WAIT_MS, FIRST_BUSY_WAIT_MS));
      const left = deadline - Date.now();
      if (wait >= left) {
        const reason = `busy after ${attempts} attempt${attempts === 1 ? "" : "s"}: the next, in ${wait} ms, would pass the request's deadline (${Math.max(left, 0)} ms left)`;
        throw new Failure(describe({ ...a.said, reason }, a.redact), facts);
      }
      await sleep(wait, signal);
      backoff = Math.min(backoff * 2, MAX_TIMER_MS);
    }
  }

  /** open, then the whole body, at most limit bytes; or a Failure. */
  async exchange(
    method: string,
    path: string,
    body: string | undefined,
    limit: number,
    signal: AbortSignal,
    deadline: number,
    extraHeaders: Record<string, string> = {},
    seen: Seen = { answered: false, requestId: "" },
  ): Promise<{ contentType: string | null; bytes: Uint8Array }> {
    const { res, redact, requestId } = await this.open(method, path, body, signal, deadline, extraHeaders, seen);
    const op = `${method} ${path}`;
    const status = res.status;
    const declared = res.headers.get("content-length");
    if (declared !== null && /^[0-9]+$/.test(declared.trim()) && Number(declared) > limit) {
      discard(res.body);
      throw new Failure(describe({ op, status, reason: `response body of ${declared.trim()} bytes exceeds the client's limit of ${limit} bytes` }, redact), {
        status,
        requestId,
      });
    }
    let bytes: Uint8Array | "over";
    try {
      bytes = await readCapped(res.body, limit, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      throw new Failure(describe({ op, status, reason: `reading the response: ${errorText(err)}` }, redact), { status, retryable: true, requestId });
    }
    if (bytes === "over") {
      throw new Failure(describe({ op, status, reason: `response body exceeds the client's limit of ${limit} bytes` }, redact), { status, requestId });
    }
    return { contentType: res.headers.get("content-type"), bytes };
  }

  /** One attempt: a 200 answer (its body unread), a failed one, or a Failure thrown (or the signal's reason). */
  async #once(method: string, path: string, body: string | undefined, signal: AbortSignal, extraHeaders: Record<string, string>, seen: Seen): Promise<Answer> {
    seen.answered = false;
    seen.requestId = "";
    const op = `${method} ${path}`;
    const headers: Record<string, string> = { ...extraHeaders };
    if (body !== undefined) headers["content-type"] = "application/json";
    let token = "";
    if (this.cfg.idToken) {
      const hook = this.cfg.idToken;
      let t: unknown;
      try {
        t = await race(
          Promise.resolve().then(() => hook(this.cfg.audience)),
          signal,
        );
      } catch (err) {
        if (signal.aborted) throw err;
        throw new Failure(describe({ op, reason: `ID token: ${errorText(err)}` }), { retryable: true });
      }
      if (!validToken(t)) throw new Failure(describe({ op, reason: "ID token: the hook returned an empty or malformed token" }));
      token = t;
      headers["authorization"] = `Bearer ${token}`;
    }
    const redact = (s: string) => (token === "" ? s : s.split(token).join("[token]"));

    let res: FetchLikeResponse;
    try {
      const init: FetchLikeInit = { method, headers, signal, redirect: "manual" };
      if (body !== undefined) init.body = body;
      res = await race(this.cfg.fetch(this.cfg.base + path, init), signal);
    } catch (err) {
      if (signal.aborted) throw err;
      throw new Failure(describe({ op, reason: errorText(err) }, redact), { retryable: true });
    }

    let status: number;
    let requestId: string;
    try {
      status = res.status;
      const id = res.headers.get("x-request-id");
      requestId = id !== null && REQUEST_ID.test(id) ? id : "";
      seen.requestId = requestId || (extraHeaders["x-request-id"] ?? "");
    } catch (err) {
      throw new Failure(describe({ op, reason: `unreadable response: ${errorText(err)}` }, redact));
    }
    seen.answered = true;
    if (status === 200) return { ok: true, res, redact, requestId };
    const said: Said = { op, status };
    if (res.type === "opaqueredirect" || (status >= 300 && status < 400)) {
      said.reason = "redirects are not followed";
      discard(res.body);
    } else {
      const p = await this.#problem(res, signal, redact);
      if (p) said.problem = p;
    }
    const answer: Answer = { ok: false, said, redact, requestId };
    if (status === 429) {
      const ra = retryAfter(res.headers.get("retry-after"));
      if (ra !== undefined) answer.retryAfterMs = ra;
    }
    return answer;
  }

  /**
   * The problem document (RFC 9457) of a non-200 answer, read as the Go
   * client reads it (decodeProblem), its text redacted and bounded; or
   * undefined when the body is not one.
   */
  async #problem(res: FetchLikeResponse, signal: AbortSignal, redact: Redact): Promise<ServiceProblem | undefined> {
    const mt = mediaType(res.headers.get("content-type"));
    if (mt !== "application/problem+json" && mt !== "application/json") {
      discard(res.body);
      return undefined;
    }
    let bytes: Uint8Array | "over";
    try {
      bytes = await readCapped(res.body, MAX_PROBLEM_BYTES, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      return undefined;
    }
    if (bytes === "over") return undefined;
    let p: Record<string, unknown>;
    try {
      p = { ...decodeProblem(parseJson(bytes)) };
    } catch {
      return undefined;
    }
    for (const k of ["type", "title", "detail"] as const) if (typeof p[k] === "string") p[k] = boundText(redact(p[k] as string), MAX_MESSAGE_UNITS);
    return p as ServiceProblem;
  }
}
