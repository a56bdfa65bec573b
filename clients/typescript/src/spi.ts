// The sandbox backend SPI of loom's @loom/sandbox (ADR 0144 D1, D2, D4),
// declared structurally: loom's package is a peer the user already has, and
// TypeScript compares shapes, so a CloudRunSandboxBackend is a SandboxBackend
// wherever loom asks for one. test/types/ checks that against the ADR's text.

/** The SPI version this package implements (ADR 0144: SANDBOX_BACKEND_SPI_VERSION). */
export const SANDBOX_BACKEND_SPI_VERSION = "1.0.0";

/** ADR 0144 D1: what the effect asks a backend to run. */
export interface SandboxRequest {
  /** Verified source text (D3). */
  script: string;
  /** The caller's input, already JSON text, already bounded (D3). */
  inputJson: string;
  limits: { wallClockMs: number; memoryBytes: number };
  signal?: AbortSignal;
}

/** ADR 0144 D2: what happened, in a closed vocabulary; loom decides what it means. */
export type SandboxOutcome =
  | { ok: true; value: unknown }
  | { ok: false; kind: "limit"; limit: "cpu" | "memory" | "wallClock" }
  | { ok: false; kind: "threw"; name?: string; message: string }
  | { ok: false; kind: "inputTooLarge" }
  | { ok: false; kind: "infrastructure"; message: string };

/** ADR 0144 D4: what a backend enforces. */
export interface SandboxBackendCapabilities {
  language: string;
  network: "none" | "allowlist" | "open";
  /** "hard": the run is killed at the deadline (+ grace). */
  wallClock: "hard" | "soft";
  /** memoryBytes is enforced. */
  memory: boolean;
  /** A CPU budget is enforced. */
  cpu: boolean;
  /** No state survives from one run to the next. */
  freshPerRun: boolean;
}

/** ADR 0144 D1: the engine, and only the engine. */
export interface SandboxBackend {
  readonly capabilities: SandboxBackendCapabilities;
  evaluate(request: SandboxRequest): Promise<SandboxOutcome>;
  /** Advisory pre-warm. */
  warm?(): Promise<void>;
  /** Release pools, connections, instances. */
  close?(): Promise<void>;
}
