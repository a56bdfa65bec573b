export {
  SANDBOX_BACKEND_SPI_VERSION,
  type SandboxBackend,
  type SandboxBackendCapabilities,
  type SandboxOutcome,
  type SandboxRequest,
} from "./spi.js";
export {
  CloudRunSandboxBackend,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_TIMEOUT_GRACE_MS,
  responseBoundFor,
  type CloudRunSandboxBackendOptions,
  type RequestIdHook,
  type RunHook,
  type RunReport,
} from "./backend.js";
export { CloudRunSandboxError, type CloudRunSandboxErrorCode, type CloudRunSandboxErrorDetails } from "./error.js";
export type { FetchLike, FetchLikeBody, FetchLikeInit, FetchLikeResponse } from "./fetch.js";
export type { IdTokenHook } from "./transport.js";
export type {
  BatchAnswerLine,
  BatchLine,
  BatchNotRunLine,
  BatchProblemLine,
  BatchSummary,
  BatchSummaryLine,
  EvaluationAnswer,
  EvaluationFailure,
  SandboxUsage,
  ServiceProblem,
} from "./decode.js";
export type { ServiceEngine, ServiceLimits } from "./capabilities.js";
export type { BatchRequest } from "./batch.js";
export type { Determinism, DeterminismOptions } from "./determinism.js";
export { boundText, MAX_MESSAGE_UNITS } from "./text.js";
