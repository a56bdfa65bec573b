// The strict reading every decoder of the service's answers shares, as the
// Go decoders' (internal/jsontext): a body parsed as UTF-8 JSON with no key
// twice, and a JSON object read member by member, each taken once with the
// kind it must have, every problem named by its path.

import { boundText, quote } from "./text.js";

/** A body that does not decode; its message says what is wrong, never the body. */
export class DecodeError extends Error {
  override name = "DecodeError";
}

export type JsonObject = Record<string, unknown>;

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

export function kindOf(v: unknown): string {
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

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * One JSON object read strictly: each member is taken at most once with the
 * kind it must have, and done() reports the first problem, including a member
 * nobody took.
 */
export class Reader {
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

export function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as JsonObject)[k]);
  }
  return v;
}
