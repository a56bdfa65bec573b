// GET /v1/capabilities, as the Go decoder (api/capabilities.go) reads it:
// strictly where a capability is declared, and with the members of a later
// version kept where they cannot weaken the declaration.

import type { SandboxBackendCapabilities } from "./spi.js";
import { quote } from "./text.js";
import { DecodeError, deepFreeze, Reader, type JsonObject } from "./json.js";

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
