// Type tests, compiled with `tsc --noEmit` (npm run test:types): the shapes
// below are ADR 0144 D1, D2 and D4 as loom's @loom/sandbox declares them,
// copied from the ADR's text. A CloudRunSandboxBackend must be assignable to
// loom's SandboxBackend without a cast, and the package's own SPI types must
// be the same shapes.
import {
  CloudRunSandboxBackend,
  type CloudRunSandboxBackendOptions,
  type FetchLike,
  type RunReport,
  type SandboxBackend,
  type SandboxBackendCapabilities,
  type SandboxOutcome,
  type SandboxRequest,
  type SandboxUsage,
} from "@loom-plugins/sandbox-cloudrun";

namespace loom {
  export interface SandboxBackend {
    readonly capabilities: SandboxBackendCapabilities;
    evaluate(request: SandboxRequest): Promise<SandboxOutcome>;
    warm?(): Promise<void>;
    close?(): Promise<void>;
  }
  export interface SandboxRequest {
    script: string;
    inputJson: string;
    limits: { wallClockMs: number; memoryBytes: number };
    signal?: AbortSignal;
  }
  export type SandboxOutcome =
    | { ok: true; value: unknown }
    | { ok: false; kind: "limit"; limit: "cpu" | "memory" | "wallClock" }
    | { ok: false; kind: "threw"; name?: string; message: string }
    | { ok: false; kind: "inputTooLarge" }
    | { ok: false; kind: "infrastructure"; message: string };
  export interface SandboxBackendCapabilities {
    language: string;
    network: "none" | "allowlist" | "open";
    wallClock: "hard" | "soft";
    memory: boolean;
    cpu: boolean;
    freshPerRun: boolean;
  }
}

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const assertType = <T extends true>(): T => true as T;

// The package's SPI types are exactly the ADR's.
assertType<Equal<SandboxOutcome, loom.SandboxOutcome>>();
// evaluate resolves with D2's outcome and nothing more: logs and usage are the RunReport's.
assertType<Equal<Awaited<ReturnType<CloudRunSandboxBackend["evaluate"]>>, loom.SandboxOutcome>>();
assertType<Equal<RunReport["outcome"], loom.SandboxOutcome>>();
assertType<Equal<RunReport["usage"], SandboxUsage | undefined>>();
assertType<Equal<SandboxRequest, loom.SandboxRequest>>();
assertType<Equal<SandboxBackendCapabilities, loom.SandboxBackendCapabilities>>();

declare const backend: CloudRunSandboxBackend;

// The switch (README, "Switching loom's effect to this backend"): loom's
// effect takes this backend as it is.
const forLoom: loom.SandboxBackend = backend;
const forUs: SandboxBackend = backend;
const asOurs: SandboxBackend = forLoom;
const asLoom: loom.SandboxBackend = forUs;

// A factory of the shape loom's registerSandboxEval and the conformance kit take.
const factory: () => Promise<loom.SandboxBackend> = () => CloudRunSandboxBackend.create({ url: "https://sandbox.example" });

// evaluate answers in the closed vocabulary, narrowed by ok and kind.
async function narrow(req: loom.SandboxRequest): Promise<string> {
  const out = await backend.evaluate(req);
  if (out.ok) return JSON.stringify(out.value);
  switch (out.kind) {
    case "limit":
      return out.limit;
    case "threw":
      return `${out.name ?? "?"}: ${out.message}`;
    case "inputTooLarge":
      return "inputTooLarge";
    case "infrastructure":
      return out.message;
  }
}

// The global fetch is a FetchLike; the options need only a URL.
const globalFetch: FetchLike = fetch;
const minimal: CloudRunSandboxBackendOptions = { url: "https://sandbox.example" };
const full: CloudRunSandboxBackendOptions = {
  url: "https://sandbox.example",
  fetch,
  idToken: async (audience: string) => `token-for-${audience}`,
  audience: "https://sandbox.example",
  timeoutGraceMs: 30_000,
  retryBusy: true,
  maxResponseBytes: 1 << 20,
  signal: AbortSignal.timeout(1000),
  onRun: ({ requestId, logs, usage, outcome }: RunReport) => {
    console.log(requestId, logs ?? "", usage?.phasesMs.run, usage?.peakMemoryBytes, outcome.ok);
  },
  captureLogs: true,
  requestId: (request: SandboxRequest) => (request.script.length > 0 ? "loom-run-1" : undefined),
};
// An async hook is a hook: what it returns is not awaited.
const asyncHook: CloudRunSandboxBackendOptions = { url: "https://sandbox.example", onRun: async (_r: RunReport) => {} };

// The capabilities are read-only.
// @ts-expect-error capabilities is a frozen snapshot
backend.capabilities.network = "open";
// @ts-expect-error the constructor is private: create() validates the service first
new CloudRunSandboxBackend();

// A backend that answers outside the vocabulary is not a SandboxBackend.
const wrong = {
  capabilities: backend.capabilities,
  evaluate: async (_r: loom.SandboxRequest) => ({ ok: false as const, kind: "timeout" as const }),
};
// @ts-expect-error "timeout" is not an outcome kind
const notLoom: loom.SandboxBackend = wrong;

// An outcome with an extra member is not assignable from a fresh literal.
// @ts-expect-error no other members
const extra: SandboxOutcome = { ok: false, kind: "inputTooLarge", message: "m" };

// The report is read-only.
declare const report: RunReport;
// @ts-expect-error the report is frozen
report.requestId = "x";

export { asLoom, asOurs, asyncHook, extra, factory, full, globalFetch, minimal, narrow, notLoom };
