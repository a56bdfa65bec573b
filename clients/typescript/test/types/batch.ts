// Type tests of batch() (tsc --noEmit, npm run test:types): what it takes,
// that it is an async iteration of the lines, and that a line narrows by
// its one member to exactly what that kind of line holds, as the Go
// client's BatchLine is read (client/README.md, "One script, many inputs").
import {
  CloudRunSandboxBackend,
  CloudRunSandboxError,
  type BatchLine,
  type BatchRequest,
  type BatchSummary,
  type CloudRunSandboxErrorCode,
  type EvaluationAnswer,
  type EvaluationFailure,
  type SandboxUsage,
  type ServiceProblem,
} from "@loom-plugins/sandbox-cloudrun";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const assertType = <T extends true>(): T => true as T;

declare const backend: CloudRunSandboxBackend;

// The request: a script reference and the inputs' JSON texts; the rest optional.
const minimal: BatchRequest = { scriptRef: "sha256:…", inputsJson: ['{"a":1}', "null"] };
const full: BatchRequest = {
  scriptRef: "sha256:…",
  inputsJson: ["1"],
  limits: { wallClockMs: 500 },
  expectedOutputShapeHash: "sha256:…",
  captureLogs: true,
  requestId: "batch-1",
  signal: AbortSignal.timeout(60_000),
};
// @ts-expect-error the inputs are JSON text, not values
const values: BatchRequest = { scriptRef: "sha256:…", inputsJson: [{ a: 1 }] };
// @ts-expect-error a batch needs its script's reference
const noScript: BatchRequest = { inputsJson: ["1"] };

// An async iteration of the lines, which a caller can leave early.
assertType<Equal<ReturnType<CloudRunSandboxBackend["batch"]>, AsyncGenerator<BatchLine, void, undefined>>>();

// Each kind of line narrows by its member, as Go's switch on Answer,
// Problem, NotRun and Summary.
async function read(req: BatchRequest): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const line of backend.batch(req)) {
      if (line.answer) {
        assertType<Equal<typeof line.index, number>>();
        assertType<Equal<typeof line.answer, EvaluationAnswer>>();
        const a = line.answer;
        if (a.ok) out.push(JSON.stringify(a.value));
        else out.push(channel(a.failure));
        assertType<Equal<typeof a.logs, string | undefined>>();
        assertType<Equal<typeof a.usage, SandboxUsage | undefined>>();
      } else if (line.problem) {
        assertType<Equal<typeof line.problem, ServiceProblem>>();
        out.push(`${line.index}: ${line.problem.retryable ? "send again" : line.problem.detail}`);
      } else if (line.notRun !== undefined) {
        assertType<Equal<typeof line.notRun, string>>();
        out.push(`${line.index}: not run: ${line.notRun}`);
      } else {
        assertType<Equal<typeof line.summary, BatchSummary>>();
        // @ts-expect-error the summary is no input's
        out.push(String(line.index.toFixed()));
        out.push(`${line.summary.items} inputs, ${line.summary.outcomes.ok ?? 0} ok, ${line.summary.usage.cpuMs} ms of CPU`);
        break;
      }
    }
  } catch (err) {
    if (err instanceof CloudRunSandboxError) {
      assertType<Equal<typeof err.retryable, boolean>>();
      assertType<Equal<typeof err.problem, ServiceProblem | undefined>>();
      out.push(`${err.code}: ${err.message}`);
    }
  }
  return out;
}

// A failure narrows by its channel to exactly that channel's members.
function channel(f: EvaluationFailure): string {
  switch (f.channel) {
    case "limitExceeded":
      return f.kind;
    case "scriptError":
      return `${f.name ?? "?"}: ${f.message}`;
    case "shapeMismatch":
      return `${f.expected} != ${f.observed}`;
    case "scriptMissing":
      return f.scriptRef;
    case "inputTooLarge":
      return String(f.limitBytes);
    case "inputNotSerializable":
      return f.message;
  }
}

// The codes a batch adds.
const codes: CloudRunSandboxErrorCode[] = ["invalid-request", "invalid-answer", "cut"];

// A line holds one kind: not an answer and a summary at once.
// @ts-expect-error exactly one of answer, problem, notRun and summary
const both: BatchLine = { index: 0, notRun: "x", summary: {} as BatchSummary };
declare const l: BatchLine;
// @ts-expect-error lines are read-only
l.index = 1;

export { both, codes, full, minimal, noScript, read, values };
