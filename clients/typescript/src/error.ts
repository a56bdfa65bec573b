// The error this package throws: from create() and warm(), and from a batch
// that does not end in its summary.

import { boundText, MAX_MESSAGE_UNITS } from "./text.js";

/** Why create() or warm() failed. */
export type CloudRunSandboxErrorCode =
  /** The options are not valid. */
  | "invalid-options"
  /** The service did not answer usably (network error, non-200, timeout). */
  | "unavailable"
  /** GET /v1/capabilities did not return a valid document. */
  | "invalid-capabilities"
  /** The service implements a backend SPI of another major version. */
  | "incompatible-spi"
  /** The options ask for replayable runs (determinism) and the service's capabilities do not offer them. */
  | "not-replayable"
  /** close() was called. */
  | "closed";

/** An error from create() or warm(). Its message is bounded and never holds the ID token. */
export class CloudRunSandboxError extends Error {
  override readonly name = "CloudRunSandboxError";
  readonly code: CloudRunSandboxErrorCode;
  /** The HTTP status, when a response arrived. */
  readonly status: number | undefined;

  constructor(message: string, code: CloudRunSandboxErrorCode, status?: number) {
    super(boundText(message, MAX_MESSAGE_UNITS));
    this.code = code;
    this.status = status;
  }
}
