// The HTTP side of the client, as the Go client's (client/http.go): one
// attempt, busy retries with their back-off, a deadline and the caller's
// abort for each exchange, close(), and what a failed exchange says,
// bounded and with the ID token blanked.

import { parseJson } from "./decode.js";
import { CloudRunSandboxError, type CloudRunSandboxErrorCode } from "./error.js";
import { boundText, MAX_MESSAGE_UNITS } from "./text.js";

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

/** What this package passes to `fetch`. */
export interface FetchLikeInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  redirect: "manual";
}

/** A response body: a WHATWG ReadableStream (global fetch) or an async iterable of bytes. */
export type FetchLikeBody =
  | {
      getReader(): {
        read(): Promise<{ done: boolean; value?: Uint8Array }>;
        cancel(reason?: unknown): Promise<void>;
      };
    }
  | AsyncIterable<Uint8Array>;

/** What this package reads from a `fetch` response. */
export interface FetchLikeResponse {
  readonly status: number;
  readonly type?: string;
  readonly headers: { get(name: string): string | null };
  readonly body: FetchLikeBody | null;
}

/** A fetch function: the global `fetch` is one. */
export type FetchLike = (url: string, init: FetchLikeInit) => Promise<FetchLikeResponse>;

/** A failed exchange, already described (bounded, token redacted). Internal. */
export class Failure {
  constructor(
    readonly message: string,
    readonly status?: number,
    readonly code?: CloudRunSandboxErrorCode,
  ) {}
}

/** What the last attempt of an exchange got from the service, for the RunReport. */
export interface Seen {
  /** A response arrived (any status). */
  answered: boolean;
  requestId: string;
}

/** The X-Request-Id the service takes from a caller and gives back (api/openapi.yaml, RequestId). */
export const REQUEST_ID = /^[A-Za-z0-9._~-]{1,128}$/;

interface Problem {
  title?: string;
  detail?: string;
}

/** What a failed attempt says, before a reason is added. */
interface Said {
  op: string;
  status?: number;
  problem?: Problem;
  reason?: string;
}

type Answer =
  | { ok: true; contentType: string | null; bytes: Uint8Array }
  | { ok: false; said: Said; redact: (s: string) => string; retryAfterMs?: number };

/** Composes a message as the Go client's Error.Error does: bounded, token redacted. */
export function describe(s: Said, redact: (s: string) => string = (x) => x): string {
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

export function isAbortSignal(v: unknown): v is AbortSignal {
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as AbortSignal).aborted === "boolean" &&
    typeof (v as AbortSignal).addEventListener === "function"
  );
}

/** Settles as p does, or rejects with the signal's reason when it aborts first. */
function race<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    p.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
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

/** Reads at most limit bytes of body; "over" when it has more (the rest is cancelled). */
async function readCapped(body: FetchLikeBody | null, limit: number, signal: AbortSignal): Promise<Uint8Array | "over"> {
  if (body === null || body === undefined) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  if ("getReader" in body && typeof body.getReader === "function") {
    const reader = body.getReader();
    for (;;) {
      const { done, value } = await race(reader.read(), signal);
      if (done) break;
      if (value === undefined) continue;
      total += value.byteLength;
      if (total > limit) {
        reader.cancel().catch(() => {});
        return "over";
      }
      chunks.push(value);
    }
  } else {
    const it = (body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
    try {
      for (;;) {
        const { done, value } = await race(it.next(), signal);
        if (done) break;
        total += value.byteLength;
        if (total > limit) return "over";
        chunks.push(value);
      }
    } finally {
      if (total > limit || signal.aborted) it.return?.()?.catch(() => {});
    }
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

/** Releases a body that will not be read. */
function discard(body: FetchLikeBody | null): void {
  try {
    if (body && "getReader" in body && typeof body.getReader === "function") {
      body.getReader().cancel().catch(() => {});
    } else if (body) {
      (body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]().return?.()?.catch(() => {});
    }
  } catch {
    // already locked or gone: nothing to release
  }
}

export function mediaType(ct: string | null): string {
  return (ct ?? "").split(";")[0]!.trim().toLowerCase();
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
   * Runs fn under a signal that aborts on the caller's abort, on timeoutMs
   * and on close(). It returns fn's result, or throws the caller's abort
   * reason (whatever else happened: cancellation wins), or a Failure.
   */
  async run<T>(
    op: string,
    user: AbortSignal | undefined,
    timeoutMs: number,
    why: string,
    fn: (signal: AbortSignal, deadline: number) => Promise<T>,
  ): Promise<T> {
    user?.throwIfAborted();
    if (this.#closed) throw new Failure(`${CLIENT}: ${op}: the backend is closed`, undefined, "closed");
    const ac = new AbortController();
    let timedOut = false;
    const onUser = () => ac.abort(user?.reason);
    user?.addEventListener("abort", onUser, { once: true });
    const timer = setTimeout(
      () => {
        timedOut = true;
        ac.abort(new Failure("timeout"));
      },
      Math.min(timeoutMs, MAX_TIMER_MS),
    );
    this.#inflight.add(ac);
    try {
      const result = await fn(ac.signal, Date.now() + timeoutMs);
      if (user?.aborted) throw user.reason;
      return result;
    } catch (err) {
      if (user?.aborted) throw user.reason;
      if (timedOut) throw new Failure(`sandbox service: ${op}: no answer within ${timeoutMs} ms (${why})`);
      if (ac.signal.aborted) throw new Failure(`${CLIENT}: ${op}: the backend was closed while the request was in flight`, undefined, "closed");
      if (err instanceof Failure) throw err;
      throw new Failure(`${CLIENT}: ${op}: ${errorText(err)}`);
    } finally {
      clearTimeout(timer);
      user?.removeEventListener("abort", onUser);
      this.#inflight.delete(ac);
    }
  }

  /**
   * Sends the request, retrying a 429 when configured to (with the back-off
   * of FIRST_BUSY_WAIT_MS); returns a 200 answer or throws a Failure. seen,
   * when given, says what the last attempt got from the service.
   */
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
    let backoff = FIRST_BUSY_WAIT_MS + Math.floor(Math.random() * (BUSY_JITTER_MS + 1));
    for (let attempts = 1; ; attempts++) {
      const a = await this.#once(method, path, body, limit, signal, extraHeaders, seen);
      if (a.ok) return a;
      if (a.said.status !== 429 || !this.cfg.retryBusy) throw new Failure(describe(a.said, a.redact), a.said.status);
      // A Retry-After of 0 still leaves FIRST_BUSY_WAIT_MS between attempts,
      // so that a server that says so cannot make this a busy loop.
      const wait = Math.min(backoff, Math.max(a.retryAfterMs ?? DEFAULT_BUSY_WAIT_MS, FIRST_BUSY_WAIT_MS));
      const left = deadline - Date.now();
      if (wait >= left) {
        const reason = `busy after ${attempts} attempt${attempts === 1 ? "" : "s"}: the next, in ${wait} ms, would pass the request's deadline (${Math.max(left, 0)} ms left)`;
        throw new Failure(describe({ ...a.said, reason }, a.redact), 429);
      }
      await sleep(wait, signal);
      backoff = Math.min(backoff * 2, MAX_TIMER_MS);
    }
  }

  /** One attempt: a 200 answer, a failed one, or a Failure thrown (or the signal's reason). */
  async #once(
    method: string,
    path: string,
    body: string | undefined,
    limit: number,
    signal: AbortSignal,
    extraHeaders: Record<string, string>,
    seen: Seen,
  ): Promise<Answer> {
    seen.answered = false;
    seen.requestId = "";
    const op = `${method} ${path}`;
    const headers: Record<string, string> = { accept: "application/json, application/problem+json", ...extraHeaders };
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
        throw new Failure(describe({ op, reason: `ID token: ${errorText(err)}` }));
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
      throw new Failure(describe({ op, reason: errorText(err) }, redact));
    }

    let status: number;
    try {
      status = res.status;
      const id = res.headers.get("x-request-id");
      seen.requestId = id !== null && REQUEST_ID.test(id) ? id : (extraHeaders["x-request-id"] ?? "");
    } catch (err) {
      throw new Failure(describe({ op, reason: `unreadable response: ${errorText(err)}` }, redact));
    }
    seen.answered = true;
    if (status !== 200) {
      const said: Said = { op, status };
      if (res.type === "opaqueredirect" || (status >= 300 && status < 400)) {
        said.reason = "redirects are not followed";
        discard(res.body);
      } else {
        const p = await this.#problem(res, signal, redact);
        if (p) said.problem = p;
      }
      const answer: Answer = { ok: false, said, redact };
      if (status === 429) {
        const ra = retryAfter(res.headers.get("retry-after"));
        if (ra !== undefined) answer.retryAfterMs = ra;
      }
      return answer;
    }

    const declared = res.headers.get("content-length");
    if (declared !== null && /^[0-9]+$/.test(declared.trim()) && Number(declared) > limit) {
      discard(res.body);
      throw new Failure(
        describe({ op, status, reason: `response body of ${declared.trim()} bytes exceeds the client's limit of ${limit} bytes` }, redact),
        status,
      );
    }
    let bytes: Uint8Array | "over";
    try {
      bytes = await readCapped(res.body, limit, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      throw new Failure(describe({ op, status, reason: `reading the response: ${errorText(err)}` }, redact), status);
    }
    if (bytes === "over") {
      throw new Failure(describe({ op, status, reason: `response body exceeds the client's limit of ${limit} bytes` }, redact), status);
    }
    return { ok: true, contentType: res.headers.get("content-type"), bytes };
  }

  /** The problem document (RFC 9457) of a non-200 answer, or undefined when the body is not one. */
  async #problem(res: FetchLikeResponse, signal: AbortSignal, redact: (s: string) => string): Promise<Problem | undefined> {
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
    let doc: unknown;
    try {
      doc = parseJson(bytes);
    } catch {
      return undefined;
    }
    if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return undefined;
    // The members api/testdata/problem defines, each of its type, as the Go
    // client reads them; others are allowed (a proxy may add some).
    const r = doc as Record<string, unknown>;
    for (const k of ["type", "title", "detail", "limit", "field"]) if (r[k] !== undefined && typeof r[k] !== "string") return undefined;
    for (const k of ["status", "limitValue", "offset", "line", "column"]) if (r[k] !== undefined && !(Number.isSafeInteger(r[k]) && (r[k] as number) >= 0)) return undefined;
    if (r.retryable !== undefined && typeof r.retryable !== "boolean") return undefined;
    const p: Problem = {};
    for (const k of ["title", "detail"] as const) {
      const v = (doc as Record<string, unknown>)[k];
      if (v === undefined || v === null) continue;
      if (typeof v !== "string") return undefined;
      p[k] = boundText(redact(v), MAX_MESSAGE_UNITS);
    }
    return p;
  }
}