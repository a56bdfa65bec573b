package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// ScriptReader returns a script's bytes by content reference (the content
// store). It returns an error matching contentref.ErrNotFound when
// there is no such script. The effect verifies the bytes against the
// reference itself and does not trust the reader to have done so.
type ScriptReader interface {
	Get(ctx context.Context, ref contentref.Ref) ([]byte, error)
}

// Defaults for Options.
const (
	DefaultMaxInputBytes  = 1 << 20
	DefaultMaxOutputBytes = 1 << 20
	DefaultBackendGrace   = 60 * time.Second
)

// Options configure an Effect. The zero value is the safe default: 1 MiB
// input and output, a 60 s backend grace, and no network or reused
// environment accepted.
type Options struct {
	// MaxInputBytes bounds the input's JSON text (inputTooLarge). Zero selects
	// DefaultMaxInputBytes; negative is refused.
	MaxInputBytes int
	// MaxOutputBytes bounds the output's canonical JSON text
	// (limitExceeded{output}). Zero selects DefaultMaxOutputBytes; negative is
	// refused.
	MaxOutputBytes int
	// BackendGrace is added to each run's wall clock to give the deadline after
	// which a backend that has not returned loses (ADR 0144 D2). It must
	// cover what the backend does outside the script's clock: cold start,
	// queueing, a hard-kill grace. Zero selects DefaultBackendGrace (a zero
	// grace would fail every backend that has any start-up cost, so it is not
	// offered); negative is refused.
	BackendGrace time.Duration
	// AllowNetwork accepts a backend whose network is not "none".
	AllowNetwork bool
	// AllowReusedEnvironment accepts a backend whose freshPerRun is false: one
	// script may then leave state for the next run, maybe another tenant's.
	AllowReusedEnvironment bool
	// Logger receives warnings about misbehaving backends and a debug line per
	// evaluation. Nil discards.
	Logger *slog.Logger
}

// Errors from New, tested with errors.Is. New joins every problem it finds.
var (
	ErrInvalidOptions           = errors.New("sandbox: invalid effect options")
	ErrInvalidCapabilities      = errors.New("sandbox: backend declared invalid capabilities")
	ErrNetworkRefused           = errors.New("sandbox: backend has network access and AllowNetwork is not set")
	ErrReusedEnvironmentRefused = errors.New("sandbox: backend reuses environments between runs and AllowReusedEnvironment is not set")
)

// Effect owns every guarantee around a backend (ADR 0144 D3). It is the only
// way the service uses a backend. An Effect is safe for concurrent use.
type Effect struct {
	scripts   ScriptReader
	caller    *Caller
	maxInput  int
	maxOutput int
	log       *slog.Logger
}

// New builds an Effect over backend. It reads the backend's capabilities
// exactly once, validates them, refuses the ones the options do not accept,
// and keeps a copy: a backend whose declaration changes later changes
// nothing (ADR 0144 D4).
func New(scripts ScriptReader, backend Backend, opts Options) (*Effect, error) {
	var problems []error
	if scripts == nil {
		problems = append(problems, fmt.Errorf("%w: nil ScriptReader", ErrInvalidOptions))
	}
	e := &Effect{
		scripts:   scripts,
		maxInput:  opts.MaxInputBytes,
		maxOutput: opts.MaxOutputBytes,
		log:       opts.Logger,
	}
	switch {
	case e.maxInput == 0:
		e.maxInput = DefaultMaxInputBytes
	case e.maxInput < 0:
		problems = append(problems, fmt.Errorf("%w: MaxInputBytes must be >= 0, got %d", ErrInvalidOptions, e.maxInput))
	}
	switch {
	case e.maxOutput == 0:
		e.maxOutput = DefaultMaxOutputBytes
	case e.maxOutput < 0:
		problems = append(problems, fmt.Errorf("%w: MaxOutputBytes must be >= 0, got %d", ErrInvalidOptions, e.maxOutput))
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	c, err := NewCaller(backend, opts)
	if err != nil {
		problems = append(problems, err)
	}
	e.caller = c
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	return e, nil
}

// Capabilities returns the vetted copy of the backend's declaration taken at
// construction.
func (e *Effect) Capabilities() Capabilities { return e.caller.Capabilities() }

// Idempotent reports whether an evaluation is a pure function of (script,
// input), so that an at-least-once re-run is safe by construction: only when
// the backend has no network and a fresh environment per run (ADR 0144 D4).
func (e *Effect) Idempotent() bool { return e.caller.Idempotent() }

// Caller is the effect's own call of its backend (the race, the deadline,
// the outcome's validation), for a route that returns the backend's outcome
// rather than a channel.
func (e *Effect) Caller() *Caller { return e.caller }

// Warm asks the backend to do its cold-start work ahead of traffic, when it
// can (ADR 0064 D1). It is advisory: a backend without Warm returns nil.
func (e *Effect) Warm(ctx context.Context) error { return e.caller.Warm(ctx) }

// Close releases the backend's pools, connections or instances, when it has
// any.
func (e *Effect) Close(ctx context.Context) error { return e.caller.Close(ctx) }

// Input is one evaluation as a caller asks for it (SandboxEvalInput).
type Input struct {
	// ScriptRef is the script's content reference, sha256:<64 hex>.
	ScriptRef string
	// Input is the value the script receives. A json.RawMessage is taken as
	// JSON text and validated; a jsontext.Text (this module's handler reads
	// request bodies into them) is JSON text already validated; any other
	// value is marshalled with encoding/json. Nil is JSON null.
	Input any
	// Limits for the run; both must be positive.
	Limits Limits
	// ExpectedOutputShapeHash, when set, is the ShapeHash the output must
	// have.
	ExpectedOutputShapeHash string
	// FetchDeadline, when set, is when fetching the script must end (before
	// ctx's deadline, so that the run still fits): a store that has not
	// delivered by then is a retryable untyped ErrScriptFetch, not the
	// caller's deadline.
	FetchDeadline time.Time
	// Finished, when set, is called once, when nothing this evaluation
	// started is still running: as Evaluate returns, or later, when the
	// backend call that Evaluate stopped waiting for (cancellation, the
	// deadline) returns.
	Finished func()
}

// Evaluate runs one script on one input and returns the script's result as
// canonical JSON text: the value's JSON round-trip (ADR 0144 D3), so that the
// first run and a replay from a durable store see the same value.
//
// It does, in this order: parse the input; serialise and bound it; fetch and
// verify the script; call the backend racing the caller and a deadline;
// validate the outcome; map it to a channel; bound the output; check its
// shape. A typed failure is a *Failure; anything else is an untyped error
// with bounded text (see Retryable). Cancellation of ctx wins over every
// outcome: once ctx is done, Evaluate returns an error matching ctx.Err().
func (e *Effect) Evaluate(ctx context.Context, in Input) (json.RawMessage, error) {
	running := newRunning(in.Finished)
	defer running.done()
	if ctx.Err() != nil {
		return nil, cancelled(ctx, true)
	}
	start := time.Now()
	out, err := e.evaluate(ctx, in, running)
	if ctx.Err() != nil {
		return nil, cancelled(ctx, !running.called())
	}
	if e.log.Enabled(ctx, slog.LevelDebug) {
		e.log.DebugContext(ctx, "sandbox evaluation", "scriptRef", quoteBounded(in.ScriptRef),
			"result", resultLabel(err), "duration", time.Since(start))
	}
	return out, err
}

func resultLabel(err error) string {
	var f *Failure
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &f):
		return string(f.Channel)
	default:
		return "untyped"
	}
}

func (e *Effect) evaluate(ctx context.Context, in Input, running *running) (json.RawMessage, error) {
	// 1. Parse the evaluation input.
	ref, err := e.parseInput(in)
	if err != nil {
		return nil, err
	}
	// 2. Serialise and bound the input before anything is fetched.
	inputJSON, err := e.serialiseInput(in.Input)
	if err != nil {
		return nil, err
	}
	// 3. Fetch the script and verify its bytes against its address.
	fctx := ctx
	if !in.FetchDeadline.IsZero() {
		var cancel context.CancelFunc
		fctx, cancel = context.WithDeadline(ctx, in.FetchDeadline)
		defer cancel()
	}
	script, err := e.Fetch(fctx, ref)
	var missing *missingError
	if errors.As(err, &missing) {
		return nil, missing.failure // the typed failure alone: the caller may store it
	}
	if err != nil && ctx.Err() == nil && fctx.Err() != nil {
		return nil, newUntyped(ErrScriptFetch, ref.String()+": the store did not deliver by the fetch deadline", context.Cause(fctx), true)
	}
	if err != nil {
		return nil, err
	}
	// 4, 5. Call the backend, racing the caller and the deadline, and
	// validate the outcome.
	outcome, err := e.caller.call(ctx, Request{Script: string(script), InputJSON: string(inputJSON), Limits: in.Limits}, ref.String(), running)
	if err != nil {
		return nil, err
	}
	// 6. Map the outcome to a channel.
	value, err := e.interpret(outcome)
	if err != nil {
		return nil, err
	}
	// 7. Bound the output; its canonical text is also the round-trip of 9.
	canonical, over, err := jsontext.Canonical(value, e.maxOutput)
	if err != nil {
		e.log.WarnContext(ctx, "sandbox backend returned a value that is not JSON", "scriptRef", ref.String(), "error", err)
		return nil, newUntyped(ErrMalformedOutcome, "ok value is not JSON text", err, false)
	}
	if over {
		return nil, &Failure{Channel: ChannelLimitExceeded, Kind: LimitOutput}
	}
	// 8. Check the shape.
	if in.ExpectedOutputShapeHash != "" {
		observed, err := ShapeHash(canonical)
		if err != nil {
			// Cannot happen for canonical text; kept so a bug fails loudly.
			return nil, newUntyped(ErrMalformedOutcome, "shape hash of the canonical value", err, false)
		}
		if observed != in.ExpectedOutputShapeHash {
			return nil, &Failure{Channel: ChannelShapeMismatch, Expected: in.ExpectedOutputShapeHash, Observed: observed}
		}
	}
	// 9. The value as its JSON round-trip.
	return canonical, nil
}

// parseInput refuses a malformed evaluation input, reporting every problem.
func (e *Effect) parseInput(in Input) (contentref.Ref, error) {
	var problems []string
	ref, err := contentref.ParseRef(in.ScriptRef)
	if err != nil {
		problems = append(problems, "scriptRef: "+err.Error())
	}
	if in.Limits.WallClock <= 0 {
		problems = append(problems, fmt.Sprintf("limits.wallClock must be > 0, got %v", in.Limits.WallClock))
	}
	if in.Limits.MemoryBytes <= 0 {
		problems = append(problems, fmt.Sprintf("limits.memoryBytes must be > 0, got %d", in.Limits.MemoryBytes))
	}
	if h := in.ExpectedOutputShapeHash; h != "" && !ValidShapeHash(h) {
		problems = append(problems, fmt.Sprintf("expectedOutputShapeHash must be sha256: and 64 lowercase hex digits, got %s", quoteBounded(h)))
	}
	if len(problems) > 0 {
		return contentref.Ref{}, newUntyped(ErrInvalidInput, strings.Join(problems, "; "), nil, false)
	}
	return ref, nil
}

// serialiseInput turns the caller's value into the JSON text the backend
// receives, refusing what JSON cannot carry and what is over the bound.
func (e *Effect) serialiseInput(v any) ([]byte, error) {
	var text []byte
	checked, _ := v.(jsontext.Text)
	raw, _ := v.(json.RawMessage)
	switch {
	case checked != nil:
		text = checked // accepted by this module's JSON reader already
	case raw != nil:
		if err := jsontext.Validate(raw); err != nil {
			return nil, &Failure{Channel: ChannelInputNotSerializable,
				Message: BoundText("input is not valid JSON text: "+err.Error(), MaxMessageUnits)}
		}
		text = raw
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, &Failure{Channel: ChannelInputNotSerializable, Message: BoundText(err.Error(), MaxMessageUnits)}
		}
		text = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		// encoding/json passes nested RawMessage through without checking
		// UTF-8 or duplicate keys; the backend gets only strict JSON.
		if err := jsontext.Validate(text); err != nil {
			return nil, &Failure{Channel: ChannelInputNotSerializable,
				Message: BoundText("input marshals to invalid JSON text: "+err.Error(), MaxMessageUnits)}
		}
	}
	if len(text) > e.maxInput {
		return nil, &Failure{Channel: ChannelInputTooLarge, LimitBytes: e.maxInput}
	}
	return text, nil
}

// Fetch reads the script and checks that its bytes hash to ref: step 3 of
// Evaluate. A script the reader does not have is an error that is the typed
// scriptMissing (errors.As) and wraps the reader's own; any other failure is an untyped ErrScriptFetch (retryable when the store
// was unavailable or slow); once ctx is done, a cancellation.
func (e *Effect) Fetch(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	script, err := e.scripts.Get(ctx, ref)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, cancelled(ctx, true)
		case errors.Is(err, contentref.ErrNotFound):
			return nil, &missingError{&Failure{Channel: ChannelScriptMissing, ScriptRef: ref.String()}, err}
		case errors.Is(err, contentref.ErrIntegrity):
			e.log.ErrorContext(ctx, "sandbox script store reported an integrity mismatch", "scriptRef", ref.String(), "error", err)
			return nil, newUntyped(ErrScriptFetch, ref.String(), err, false)
		default:
			retryable := errors.Is(err, contentref.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
			return nil, newUntyped(ErrScriptFetch, ref.String(), err, retryable)
		}
	}
	if !ref.Matches(script) {
		e.log.ErrorContext(ctx, "sandbox script bytes do not hash to their reference", "scriptRef", ref.String(), "bytes", len(script))
		return nil, newUntyped(ErrScriptFetch, ref.String(),
			fmt.Errorf("%w: got %s", contentref.ErrIntegrity, contentref.RefOf(script)), false)
	}
	return script, nil
}

// missingError is Fetch's scriptMissing: the typed failure, and the
// reader's error that says why (for a log line).
type missingError struct {
	failure *Failure
	cause   error
}

func (e *missingError) Error() string   { return e.failure.Error() + ": " + e.cause.Error() }
func (e *missingError) Unwrap() []error { return []error{e.failure, e.cause} }

// interpret maps a validated outcome (Caller.call) to a channel: step 6.
func (e *Effect) interpret(o Outcome) ([]byte, error) {
	switch o.Kind {
	case KindLimit:
		return nil, &Failure{Channel: ChannelLimitExceeded, Kind: o.Limit}
	case KindThrew:
		f := &Failure{Channel: ChannelScriptError, Message: BoundText(o.Message, MaxMessageUnits)}
		if o.Name != nil {
			n := BoundText(*o.Name, MaxNameUnits)
			f.Name = &n
		}
		return nil, f
	case KindInputTooLarge:
		return nil, &Failure{Channel: ChannelInputTooLarge, LimitBytes: e.maxInput}
	case KindInfrastructure:
		return nil, newUntyped(ErrBackendFailed, o.Message, nil, true)
	}
	return o.Value, nil // ok
}

// quoteBounded quotes backend- or caller-controlled text for an error
// message, cut so that it cannot dominate the message.
func quoteBounded(s string) string {
	const max = 64
	if unitsOver(s, max) {
		return strconv.Quote(BoundText(s, max)) + "…"
	}
	return strconv.Quote(s)
}
