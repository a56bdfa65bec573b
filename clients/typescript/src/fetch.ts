// What this package needs of `fetch`, and the reading of an answer's body:
// the shapes of fetch's arguments and response, a promise raced against the
// caller's abort, and a body read a chunk at a time, or whole up to a cap, or
// released unread.

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

export function isAbortSignal(v: unknown): v is AbortSignal {
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as AbortSignal).aborted === "boolean" &&
    typeof (v as AbortSignal).addEventListener === "function"
  );
}

/** Settles as p does, or rejects with the signal's reason when it aborts first. */
export function race<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
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

/** A response body's chunks, one at a time; cancel() releases the rest. */
export interface BodyReader {
  /** The next chunk, or undefined at the end; rejects with the signal's reason when it aborts first. */
  read(signal: AbortSignal): Promise<Uint8Array | undefined>;
  cancel(): void;
}

/** Reads a WHATWG ReadableStream (global fetch) or an async iterable of bytes. */
export function bodyReader(body: FetchLikeBody | null): BodyReader {
  if (body === null || body === undefined) return { read: async () => undefined, cancel: () => {} };
  if ("getReader" in body && typeof body.getReader === "function") {
    const reader = body.getReader();
    return {
      async read(signal) {
        for (;;) {
          const { done, value } = await race(reader.read(), signal);
          if (done) return undefined;
          if (value !== undefined) return value;
        }
      },
      cancel() {
        try {
          reader.cancel().catch(() => {});
        } catch {
          // already released
        }
      },
    };
  }
  const it = (body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  return {
    async read(signal) {
      const { done, value } = await race(it.next(), signal);
      return done ? undefined : value;
    },
    cancel() {
      try {
        it.return?.()?.catch(() => {});
      } catch {
        // already released
      }
    },
  };
}

/** Reads at most limit bytes of body; "over" when it has more (the rest is cancelled). */
export async function readCapped(body: FetchLikeBody | null, limit: number, signal: AbortSignal): Promise<Uint8Array | "over"> {
  const r = bodyReader(body);
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const value = await r.read(signal);
      if (value === undefined) break;
      total += value.byteLength;
      if (total > limit) {
        r.cancel();
        return "over";
      }
      chunks.push(value);
    }
  } catch (err) {
    r.cancel();
    throw err;
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
export function discard(body: FetchLikeBody | null): void {
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
