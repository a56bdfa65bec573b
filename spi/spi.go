package spi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// SPIVersion is the version of the backend SPI this package implements
// (loom's SANDBOX_BACKEND_SPI_VERSION; docs/spi.md).
const SPIVersion = "1.0.0"

// Backend is the engine, and only the engine (docs/spi.md, "The backend").
//
// Evaluate runs one script on one input under the given limits. It returns an
// Outcome for everything the script did, and an error only when it could not
// produce an outcome (for example the context was cancelled). A backend may
// also implement Warmer and Closer.
type Backend interface {
	Capabilities() Capabilities
	Evaluate(ctx context.Context, req Request) (Outcome, error)
}

// Warmer is implemented by backends that can do their cold-start work ahead of
// the first request, such as compiling the engine (docs/spi.md, "The
// backend").
type Warmer interface {
	Warm(ctx context.Context) error
}

// Closer is implemented by backends that hold pools, connections or instances.
type Closer interface {
	Close(ctx context.Context) error
}

// Reporter is a backend that reports a run whole (the quickjs engine, the
// worker pool, the Go client): besides the outcome, the console output when
// the run asks for it, and what the run used. Its caller asks it with Run
// rather than Evaluate; from any other backend the console is empty and the
// usage is what the caller measured itself.
type Reporter interface {
	Backend
	Run(ctx context.Context, req RunRequest) (Report, error)
}

// RunRequest is a run as a Reporter is asked for it: the SPI's request and
// what the caller wants beyond the outcome.
type RunRequest struct {
	Request
	// CaptureLogs asks for the run's console output (Report.Logs).
	CaptureLogs bool
	// Replay, when set, makes the run replayable: Math.random draws from
	// its seed, and every clock reads its instant (docs/spi.md,
	// "Replayable runs"). The engine resolves it for the script and the
	// input (Replay.Determinism), so that every backend resolves it alike.
	Replay *Replay
	// Next, when set, is the run the caller will ask for right after this
	// one, unless it stops first (docs/spi.md, "A run named ahead"). A
	// backend may ignore it, or start that run the moment this one ends,
	// its wall clock counted from then, and answer the caller's next call
	// from it when that call asks for the same run; a run the caller does
	// not ask for is the backend's to stop, and its answer nobody's.
	Next *RunRequest
}

// Report is a run as a Reporter answers it.
type Report struct {
	Outcome Outcome
	// Logs is the run's console output, when the request asked for it.
	Logs string
	// Usage is what the run used, as far as the backend measured it.
	Usage Usage
	// RequestID is the backend's own id for the run, to quote when
	// reporting it: a remote service's request id; empty in process.
	RequestID string
	// EngineFault, when not empty, says that the run's infrastructure
	// outcome is an engine fault, and is the trap's text ("wasm error:
	// unreachable"): the guest trapped during the run (or answered with a
	// buffer outside its own memory), so the engine was broken from inside
	// by the script it ran. It is an operator's alarm, never the script's
	// outcome, and it comes with no other outcome than infrastructure. It
	// is not set for what is no fault of the engine: a backend process that
	// died, a store that failed, a run stopped at its wall clock or killed
	// past it, or a trap after a refused allocation, which is the memory
	// limit (docs/security.md, "Engine faults").
	EngineFault string
}

// Request is one evaluation as the backend sees it: verified source text and
// input already serialised to bounded JSON text (docs/spi.md, "The backend").
type Request struct {
	Script    string
	InputJSON string
	Limits    Limits
}

// Limits are the per-request resource limits.
type Limits struct {
	WallClock   time.Duration
	MemoryBytes int64
}

// OutcomeKind is the discriminant of a failed Outcome (docs/spi.md,
// "Outcomes").
type OutcomeKind string

// The closed vocabulary of failed outcomes.
const (
	KindLimit          OutcomeKind = "limit"
	KindThrew          OutcomeKind = "threw"
	KindInputTooLarge  OutcomeKind = "inputTooLarge"
	KindInfrastructure OutcomeKind = "infrastructure"
)

// LimitKind names the limit a run hit.
type LimitKind string

// Limits a backend can report. LimitOutput is never reported by a backend:
// only the effect applies the output bound.
const (
	LimitCPU       LimitKind = "cpu"
	LimitMemory    LimitKind = "memory"
	LimitWallClock LimitKind = "wallClock"
	LimitOutput    LimitKind = "output"
)

// Outcome is what happened, in the closed vocabulary of docs/spi.md, "Outcomes":
//
//	{OK: true, Value}                        the script's result as JSON text
//	{Kind: "limit", Limit: cpu|memory|wallClock}
//	{Kind: "threw", Name (optional), Message}
//	{Kind: "inputTooLarge"}
//	{Kind: "infrastructure", Message}
//
// The struct can carry combinations the vocabulary does not allow; the effect
// validates every outcome and fails untyped on a malformed one. In particular:
// a field that is not part of the variant must be zero; an ok Value must be
// JSON text (valid UTF-8, no duplicate keys); and the Message of
// infrastructure must not be empty. A threw Message may be empty: Go cannot
// tell an empty message from a missing one, and `throw ""` or
// `throw new Error("")` is the script's own outcome, a scriptError.
type Outcome struct {
	OK      bool
	Value   json.RawMessage
	Kind    OutcomeKind
	Limit   LimitKind
	Name    *string
	Message string
}

// OK returns a successful outcome carrying value (JSON text).
func OK(value []byte) Outcome { return Outcome{OK: true, Value: value} }

// LimitHit returns a limit outcome.
func LimitHit(l LimitKind) Outcome { return Outcome{Kind: KindLimit, Limit: l} }

// Threw returns a threw outcome; name is nil when the thrown value had no
// string name. message may be empty (see Outcome).
func Threw(name *string, message string) Outcome {
	return Outcome{Kind: KindThrew, Name: name, Message: message}
}

// InputTooLarge returns the outcome for an input that overflowed memory while
// it was parsed, before the script ran.
func InputTooLarge() Outcome { return Outcome{Kind: KindInputTooLarge} }

// Infrastructure returns the outcome for anything the backend could not do;
// message must not be empty.
func Infrastructure(message string) Outcome {
	return Outcome{Kind: KindInfrastructure, Message: message}
}

// MaxValueBytes is the longest ok value (its JSON text) the service's SPI
// route returns for an engine whose memory maximum is maxMemoryBytes: twice
// the memory (a string the guest holds in n bytes is at most 2n bytes of
// UTF-8) and a MiB. The route has no output bound of its own: the caller's
// effect bounds the output (limitExceeded{output}; docs/spi.md, "Bounds"),
// so a caller reads any value up to this length and lets its effect judge
// it. The service's maxOutputBytes bounds /v1/evaluations only.
func MaxValueBytes(maxMemoryBytes int64) int64 { return 2*maxMemoryBytes + 1<<20 }

// MaxValueDepth is the deepest an ok value (its JSON text) may nest: the
// answer that carries it, on either route, adds one level, and every JSON
// reader downstream (this module's, encoding/json, the clients') stops at
// jsontext.MaxDepth. A request's input obeys the same rule inside its body.
const MaxValueDepth = jsontext.MaxDepth - 1

// Network is what a backend lets a script reach.
type Network string

// Network declarations.
const (
	NetworkNone      Network = "none"
	NetworkAllowlist Network = "allowlist"
	NetworkOpen      Network = "open"
)

// WallClock says whether a backend kills a run at its deadline.
type WallClock string

// Wall-clock declarations.
const (
	WallClockHard WallClock = "hard"
	WallClockSoft WallClock = "soft"
)

// Capabilities is what a backend declares it enforces (docs/spi.md,
// "Capabilities").
type Capabilities struct {
	Language    string    `json:"language"`
	Network     Network   `json:"network"`
	WallClock   WallClock `json:"wallClock"`
	Memory      bool      `json:"memory"`
	CPU         bool      `json:"cpu"`
	FreshPerRun bool      `json:"freshPerRun"`
}

// Timed is implemented by a backend that enforces the wall clock itself and
// knows when each party gives up on a run (the quickjs engine, the worker
// pool): its caller waits for it until the run's Timing.CallerDeadline.
type Timed interface {
	Timing(wallClock time.Duration) Timing
}
