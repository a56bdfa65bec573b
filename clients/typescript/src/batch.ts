// One stored script over many inputs (POST /v1/evaluations:batch,
// docs/batch.md in the service's repository), as the Go client's Batch
// (client/batch.go) reads it: the lines as they arrive, one per input in
// the inputs' order and then the summary, each checked; an answer cut
// before its summary a retryable error, one out of order or malformed a
// protocol error; and an iteration stopped early closes the connection,
// which stops the batch's runs on the service.

import { decodeBatchLine, type BatchLine } from "./decode.js";
import type { ServiceLimits } from "./capabilities.js";
import { DecodeError, duplicateKey, parseJson } from "./json.js";
import type { Determinism } from "./determinism.js";
import { CloudRunSandboxError, type CloudRunSandboxErrorCode } from "./error.js";
import { CLIENT, describe, errorText, Failure, REQUEST_ID, type Call, type Opened, type Transport } from "./transport.js";
import { bodyReader, discard, isAbortSignal, mediaType, type BodyReader } from "./fetch.js";
import { isWellFormed, quote } from "./text.js";

const BATCH_PATH = "/v1/evaluations:batch";
const BATCH_CONTENT_TYPE = "application/x-ndjson";
/** The service's default request timeout (REQUEST_TIMEOUT), for a service that does not publish its requestTimeoutMs. */
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/** One script over many inputs: CloudRunSandboxBackend.batch's request. */
export interface BatchRequest {
  /** The script's content reference in the service's store, `sha256:<64 hex digits>`: fetched and verified once for the batch. */
  scriptRef: string;
  /**
   * The inputs, each its JSON text (as SandboxRequest's inputJson), each run
   * in a fresh run of its own; at most the service's limits.maxBatchItems
   * (more are refused, 413 too-many-inputs).
   */
  inputsJson: readonly string[];
  /**
   * Each input's run's limits; one left out is the service's default. Each
   * given must be positive (memoryBytes an integer); a fractional wall clock
   * is rounded up.
   */
  limits?: { wallClockMs?: number; memoryBytes?: number };
  /** The shape every value must have (sha256:…): a value of another is that input's shapeMismatch. */
  expectedOutputShapeHash?: string;
  /** Return each run's console output in its answer's logs. Default false. */
  captureLogs?: boolean;
  /** Your id for the batch, sent as X-Request-Id (1 to 128 of A-Z a-z 0-9 - . _ ~; any other is not sent). */
  requestId?: string;
  /** Cancels the batch: the iteration throws the signal's reason, and the service stops the runs. */
  signal?: AbortSignal;
}

/** A batch refused here, never sent. */
function invalid(what: string): CloudRunSandboxError {
  return new CloudRunSandboxError(`${CLIENT}: invalid batch: ${what}`, "invalid-request");
}

/**
 * Writes JSON text without its insignificant white space, as the Go client
 * sends an input (api.AppendBatchRequest).
 */
function compact(text: string): string {
  if (!/[ \t\n\r]/.test(text)) return text;
  let out = "";
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: skip to its closing quote
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
      out += text.slice(from, i);
      from = i + 1;
    }
  }
  return out + text.slice(from);
}

/** The body of a batch, its members in the order the Go client writes them; throws the reason a request is refused here. */
function batchBody(req: BatchRequest, determinism: Determinism | undefined): string {
  if (typeof req !== "object" || req === null) throw invalid("the request must be an object");
  const { scriptRef, inputsJson, limits, expectedOutputShapeHash, captureLogs } = req;
  if (typeof scriptRef !== "string" || scriptRef === "") throw invalid("scriptRef must be a non-empty string, the script's content reference (sha256:…)");
  if (!Array.isArray(inputsJson)) throw invalid("inputsJson must be an array of the inputs' JSON texts");
  const inputs: string[] = [];
  for (let i = 0; i < inputsJson.length; i++) {
    const text: unknown = inputsJson[i];
    if (typeof text !== "string") throw invalid(`inputsJson[${i}] must be a string, the input's JSON text`);
    // A lone surrogate is a character of JSON text that UTF-8 cannot carry.
    if (!isWellFormed(text)) throw invalid(`inputsJson[${i}] has a lone surrogate, which a JSON request cannot carry as UTF-8`);
    try {
      JSON.parse(text);
    } catch (err) {
      throw invalid(`inputsJson[${i}] is not JSON text: ${err instanceof Error ? err.message : String(err)}`);
    }
    const dup = duplicateKey(text);
    if (dup !== undefined) throw invalid(`inputsJson[${i}] is not JSON text: it has the key ${quote(dup)} twice in one object`);
    inputs.push(compact(text));
  }
  let body = `{"scriptRef":${JSON.stringify(scriptRef)},"inputs":[${inputs.join(",")}]`;
  if (limits !== undefined) {
    if (typeof limits !== "object" || limits === null) throw invalid("limits must be an object");
    const { wallClockMs, memoryBytes } = limits;
    const l: { wallClockMs?: number; memoryBytes?: number } = {};
    if (wallClockMs !== undefined) {
      // never ask for less time than the caller gave
      const wall = typeof wallClockMs === "number" ? Math.ceil(wallClockMs) : NaN;
      if (!(wallClockMs > 0) || !Number.isSafeInteger(wall)) throw invalid(`limits.wallClockMs must be a positive number, got ${String(wallClockMs)}`);
      l.wallClockMs = wall;
    }
    if (memoryBytes !== undefined) {
      if (!(memoryBytes > 0) || !Number.isSafeInteger(memoryBytes)) throw invalid(`limits.memoryBytes must be a positive integer, got ${String(memoryBytes)}`);
      l.memoryBytes = memoryBytes;
    }
    if (l.wallClockMs !== undefined || l.memoryBytes !== undefined) body += `,"limits":${JSON.stringify(l)}`;
  }
  if (expectedOutputShapeHash !== undefined) {
    if (typeof expectedOutputShapeHash !== "string") throw invalid("expectedOutputShapeHash must be a string");
    if (expectedOutputShapeHash !== "") body += `,"expectedOutputShapeHash":${JSON.stringify(expectedOutputShapeHash)}`;
  }
  if (captureLogs !== undefined && typeof captureLogs !== "boolean") throw invalid("captureLogs must be a boolean");
  if (captureLogs) body += `,"captureLogs":true`;
  if (determinism !== undefined) body += `,"determinism":${JSON.stringify(determinism)}`;
  return body + "}";
}

/** A line the client will not read: over its limit, or the answer ended inside it. */
class LineError extends Error {}

/** The lines of an NDJSON body, each without its newline, at most limit bytes. */
class LineReader {
  #parts: Uint8Array[] = [];
  #held = 0;
  #cur: Uint8Array = new Uint8Array(0);

  constructor(
    private readonly body: BodyReader,
    private readonly limit: number,
    private readonly signal: AbortSignal,
  ) {}

  /** The next line, or undefined at the end of the answer; throws a LineError, or what reading threw. */
  async next(): Promise<Uint8Array | undefined> {
    for (;;) {
      const nl = this.#cur.indexOf(0x0a);
      if (nl >= 0) {
        const tail = this.#cur.subarray(0, nl);
        this.#cur = this.#cur.subarray(nl + 1);
        const size = this.#held + tail.byteLength;
        if (size > this.limit) throw this.#over();
        let line: Uint8Array = tail;
        if (this.#parts.length > 0) {
          line = new Uint8Array(size);
          let off = 0;
          for (const p of [...this.#parts, tail]) {
            line.set(p, off);
            off += p.byteLength;
          }
        }
        this.#parts = [];
        this.#held = 0;
        return line;
      }
      if (this.#cur.byteLength > 0) {
        this.#parts.push(this.#cur);
        this.#held += this.#cur.byteLength;
        this.#cur = new Uint8Array(0);
      }
      if (this.#held > this.limit) throw this.#over();
      const chunk = await this.body.read(this.signal);
      if (chunk === undefined) {
        if (this.#held > 0) throw new LineError("the answer ended inside a line");
        return undefined;
      }
      this.#cur = chunk;
    }
  }

  #over(): LineError {
    return new LineError(`a line exceeds the client's limit of ${this.limit} bytes`);
  }
}

/** What the iteration throws for what a call threw: a Failure as its CloudRunSandboxError, anything else (the caller's abort reason) as it is. */
function thrown(err: unknown): unknown {
  return err instanceof Failure ? err.toError() : err;
}

/**
 * Runs the batch on the service and yields the answer's lines as they
 * arrive (CloudRunSandboxBackend.batch). limits are the service's, as
 * create() read them; determinism the backend's option.
 */
export async function* runBatch(
  t: Transport,
  limits: ServiceLimits,
  determinism: Determinism | undefined,
  request: BatchRequest,
): AsyncGenerator<BatchLine, void, undefined> {
  const body = batchBody(request, determinism);
  const n = request.inputsJson.length;
  const signal: unknown = request.signal;
  if (signal !== undefined && !isAbortSignal(signal)) throw invalid("signal must be an AbortSignal");
  const headers: Record<string, string> = {};
  if (typeof request.requestId === "string" && REQUEST_ID.test(request.requestId)) headers["x-request-id"] = request.requestId;

  const op = `POST ${BATCH_PATH}`;
  // The service ends every batch by its request timeout (the inputs whose
  // runs had not ended are notRun lines, then the summary): the client
  // waits that long and timeoutGraceMs more.
  const serviceMs = limits.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const timeoutMs = serviceMs + t.cfg.timeoutGraceMs;
  const why = `the service's requestTimeoutMs ${serviceMs} + timeoutGraceMs ${t.cfg.timeoutGraceMs}`;
  let call: Call;
  try {
    call = t.begin(op, signal, timeoutMs, why);
  } catch (err) {
    throw thrown(err);
  }
  let reader: BodyReader | undefined;
  try {
    let opened: Opened;
    try {
      opened = await t.open("POST", BATCH_PATH, body, call.signal, call.deadline, headers, undefined, `${BATCH_CONTENT_TYPE}, application/problem+json`);
    } catch (err) {
      throw thrown(call.error(err));
    }
    const { res, redact, requestId } = opened;
    const fail = (code: CloudRunSandboxErrorCode, retryable: boolean, reason: string) =>
      new CloudRunSandboxError(describe({ op, status: 200, reason }, redact), code, 200, { retryable, requestId });
    const cut = (answered: number, how = "") =>
      fail("cut", true, `the answer was cut after ${Math.min(answered, n)} of ${n} inputs' lines, before its summary${how}; those without a line were not answered`);

    const ct = res.headers.get("content-type");
    if (mediaType(ct) !== BATCH_CONTENT_TYPE) {
      discard(res.body);
      throw fail("invalid-answer", false, `response Content-Type is ${quote(ct ?? "", 64)}, want ${BATCH_CONTENT_TYPE}`);
    }
    reader = bodyReader(res.body);
    const lines = new LineReader(reader, t.cfg.maxResponseBytes, call.signal);
    for (let i = 0; ; i++) {
      let raw: Uint8Array | undefined;
      try {
        // a line already received is not read once the call has ended
        call.signal.throwIfAborted();
        raw = await lines.next();
      } catch (err) {
        const e = call.error(err);
        if (!(e instanceof Failure)) throw e; // the caller's abort
        if (call.timedOut) throw cut(i, `, at the client's timeout of ${timeoutMs} ms (${why})`);
        if (e.code === "closed") throw e.toError();
        throw fail("cut", true, `reading the answer after ${i} lines: ${err instanceof LineError ? err.message : errorText(err)}`);
      }
      if (raw === undefined) throw cut(i);
      let line: BatchLine;
      try {
        line = decodeBatchLine(parseJson(raw));
      } catch (err) {
        if (!(err instanceof DecodeError)) throw err;
        throw fail("invalid-answer", false, `malformed line ${i + 1}: ${err.message}`);
      }
      if (i < n && (line.summary !== undefined || line.index !== i)) throw fail("invalid-answer", false, `line ${i + 1} is not input ${i}'s`);
      if (i === n && (line.summary === undefined || line.summary.items !== n)) throw fail("invalid-answer", false, `line ${i + 1} is not the summary of ${n} inputs`);
      yield line;
      if (line.summary !== undefined) return;
    }
  } finally {
    // Whole, failed or left early: the rest of the answer is not read, and
    // the request is aborted, which closes its connection; the service takes
    // that as the client gone and stops the batch's runs.
    reader?.cancel();
    call.end(true);
  }
}
