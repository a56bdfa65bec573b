// The error this package throws: from create() and warm(), and from a batch
// that is refused or does not end in its summary.

import type { ServiceProblem } from "./decode.js";
import { boundText, MAX_MESSAGE_UNITS } from "./text.js";

/** Why create(), warm() or a batch failed. */
export type CloudRunSandboxErrorCode =
  /** The options are not valid. */
  | "invalid-options"
  /** The service did not answer usably (network error, non-200, timeout): status, problem and retryable say more. */
  | "unavailable"
  /** GET /v1/capabilities did not return a valid document. */
  | "invalid-capabilities"
  /** The service implements a backend SPI of another major version. */
  | "incompatible-spi"
  /** The options ask for replayable runs (determinism) and the service's capabilities do not offer them. */
  | "not-replayable"
  /** close() was called. */
  | "closed"
  /** A batch no service takes (no script reference, an input that is not JSON text, a limit not positive): it was not sent. */
  | "invalid-request"
  /** A batch's answer broke the protocol (a malformed line, a line out of order, a wrong summary): not retryable. */
  | "invalid-answer"
  /** A batch's answer ended before its summary: the inputs without a line were not answered, and sent again they run as if for the first time. Retryable. */
  | "cut";

/** What a CloudRunSandboxError carries beside its message, code and status. */
export interface CloudRunSandboxErrorDetails {
  retryable?: boolean;
  problem?: ServiceProblem;
  requestId?: string;
}

/** An error from create(), warm() or a batch. Its message is bounded and never holds the ID token. */
export class CloudRunSandboxError extends Error {
  override readonly name = "CloudRunSandboxError";
  readonly code: CloudRunSandboxErrorCode;
  /** The HTTP status, when a response arrived. */
  readonly status: number | undefined;
  /**
   * Whether the same request may succeed later, as the Go client's
   * Error.Retryable decides: the problem document's retryable when it has
   * one; otherwise true for a busy service, a gateway or availability status
   * (502, 503, 504), a request that got no answer (in time) and a batch's
   * answer cut before its summary; false for anything else.
   */
  readonly retryable: boolean;
  /** The service's problem document (RFC 9457), when it answered with one; its text bounded, the ID token blanked. */
  readonly problem: ServiceProblem | undefined;
  /** The service's id for the request (its X-Request-Id), to quote when reporting the failure; undefined when no answer named one. */
  readonly requestId: string | undefined;

  constructor(message: string, code: CloudRunSandboxErrorCode, status?: number, details: CloudRunSandboxErrorDetails = {}) {
    super(boundText(message, MAX_MESSAGE_UNITS));
    this.code = code;
    this.status = status;
    this.retryable = details.retryable ?? false;
    this.problem = details.problem;
    this.requestId = details.requestId || undefined;
  }
}
