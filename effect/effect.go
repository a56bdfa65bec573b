package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
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
	backend   Backend
	caps      Capabilities
	maxInput  int
	maxOutput int
	grace     time.Duration
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
	if backend == nil {
		problems = append(problems, fmt.Errorf("%w: nil Backend", ErrInvalidOptions))
	}
	e := &Effect{
		scripts:   scripts,
		backend:   backend,
		maxInput:  opts.MaxInputBytes,
		maxOutput: opts.MaxOutputBytes,
		grace:     opts.BackendGrace,
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
	switch {
	case e.grace == 0:
		e.grace = DefaultBackendGrace
	case e.grace < 0:
		problems = append(problems, fmt.Errorf("%w: BackendGrace must be >= 0, got %v", ErrInvalidOptions, e.grace))
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if backend != nil {
		caps, err := readCapabilities(backend)
		if err != nil {
			problems = append(problems, err)
		} else {
			problems = append(problems, validateCapabilities(caps)...)
			if caps.Network != NetworkNone && !opts.AllowNetwork {
				problems = append(problems, fmt.Errorf("%w (network: %q)", ErrNetworkRefused, caps.Network))
			}
			if !caps.FreshPerRun && !opts.AllowReusedEnvironment {
				problems = append(problems, ErrReusedEnvironmentRefused)
			}
			e.caps = caps
		}
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	return e, nil
}

// readCapabilities calls backend.Capabilities once, turning a panic into an
// error: a third-party backend must not take the service down at start-up.
func readCapabilities(backend Backend) (caps Capabilities, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: Capabilities panicked: %s", ErrInvalidCapabilities, BoundText(fmt.Sprint(p), MaxMessageUnits))
		}
	}()
	return backend.Capabilities(), nil
}

func validateCapabilities(c Capabilities) []error {
	var problems []error
	if !validLanguage(c.Language) {
		problems = append(problems, fmt.Errorf("%w: language must be 1 to 64 ASCII letters, digits or ._+-, got %s",
			ErrInvalidCapabilities, quoteBounded(c.Language)))
	}
	switch c.Network {
	case NetworkNone, NetworkAllowlist, NetworkOpen:
	default:
		problems = append(problems, fmt.Errorf("%w: network must be none, allowlist or open, got %s",
			ErrInvalidCapabilities, quoteBounded(string(c.Network))))
	}
	switch c.WallClock {
	case WallClockHard, WallClockSoft:
	default:
		problems = append(problems, fmt.Errorf("%w: wallClock must be hard or soft, got %s",
			ErrInvalidCapabilities, quoteBounded(string(c.WallClock))))
	}
	return problems
}

func validLanguage(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._+-", c) >= 0) {
			return false
		}
	}
	return true
}

// Capabilities returns the vetted copy of the backend's declaration taken at
// construction.
func (e *Effect) Capabilities() Capabilities { return e.caps }

// Idempotent reports whether an evaluation is a pure function of (script,
// input), so that an at-least-once re-run is safe by construction: only when
// the backend has no network and a fresh environment per run (ADR 0144 D4).
func (e *Effect) Idempotent() bool {
	return e.caps.Network == NetworkNone && e.caps.FreshPerRun
}

// Warm asks the backend to do its cold-start work ahead of traffic, when it
// can (ADR 0064 D1). It is advisory: a backend without Warm returns nil.
func (e *Effect) Warm(ctx context.Context) error {
	if w, ok := e.backend.(Warmer); ok {
		return w.Warm(ctx)
	}
	return nil
}

// Close releases the backend's pools, connections or instances, when it has
// any.
func (e *Effect) Close(ctx context.Context) error {
	if c, ok := e.backend.(Closer); ok {
		return c.Close(ctx)
	}
	return nil
}

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
	if ctx.Err() != nil {
		return nil, cancelled(ctx)
	}
	start := time.Now()
	out, err := e.evaluate(ctx, in)
	if ctx.Err() != nil {
		return nil, cancelled(ctx)
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

func (e *Effect) evaluate(ctx context.Context, in Input) (json.RawMessage, error) {
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
	script, err := e.fetch(ctx, ref)
	if err != nil {
		return nil, err
	}
	// 4. Call the backend, racing the caller and the deadline.
	outcome, err := e.call(ctx, Request{Script: string(script), InputJSON: string(inputJSON), Limits: in.Limits}, ref)
	if err != nil {
		return nil, err
	}
	// 5, 6. Validate the outcome and map it to a channel.
	value, err := e.interpret(ctx, outcome, ref)
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
	if h := in.ExpectedOutputShapeHash; h != "" && !validShapeHash(h) {
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

// fetch reads the script and checks that its bytes hash to ref.
func (e *Effect) fetch(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	script, err := e.scripts.Get(ctx, ref)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, cancelled(ctx)
		case errors.Is(err, contentref.ErrNotFound):
			return nil, &Failure{Channel: ChannelScriptMissing, ScriptRef: ref.String()}
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

// callResult is what the backend goroutine hands back.
type callResult struct {
	outcome  Outcome
	err      error
	panicked bool
	panicVal any
	stack    []byte
}

// errDeadline is the cause of the combined context when the deadline passes.
var errDeadline = errors.New("sandbox: backend deadline (wall clock + grace) passed")

// call runs the backend in its own goroutine with a context that ends on the
// caller's cancellation or at wall clock + grace, and waits for whichever
// comes first. The goroutine always finishes once the backend honours its
// context: the result channel is buffered, so nothing waits for a reader.
func (e *Effect) call(ctx context.Context, req Request, ref contentref.Ref) (Outcome, error) {
	budget := req.Limits.WallClock + e.grace
	if budget < req.Limits.WallClock { // overflow
		budget = math.MaxInt64
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, budget, errDeadline)
	defer cancel() // releases the timer and tells the backend to stop, on every path

	results := make(chan callResult, 1)
	var abandoned atomic.Bool
	start := time.Now()
	go func() {
		var r callResult
		defer func() {
			if p := recover(); p != nil {
				r = callResult{panicked: true, panicVal: p, stack: debug.Stack()}
			}
			results <- r
			if abandoned.Load() {
				e.log.Warn("sandbox backend returned after the effect stopped waiting",
					"scriptRef", ref.String(), "after", time.Since(start))
			}
		}()
		r.outcome, r.err = e.backend.Evaluate(callCtx, req)
	}()

	var r callResult
	select {
	case r = <-results:
	case <-callCtx.Done():
		select {
		case r = <-results: // settled in the same instant: use it
		default:
			abandoned.Store(true)
			if ctx.Err() != nil {
				return Outcome{}, cancelled(ctx)
			}
			e.log.WarnContext(ctx, "sandbox backend did not settle", "scriptRef", ref.String(),
				"wallClock", req.Limits.WallClock, "grace", e.grace)
			return Outcome{}, didNotSettle(budget, req.Limits.WallClock, e.grace, nil)
		}
	}
	switch {
	case ctx.Err() != nil:
		return Outcome{}, cancelled(ctx)
	case r.panicked:
		e.log.ErrorContext(ctx, "sandbox backend panicked", "scriptRef", ref.String(),
			"panic", BoundText(fmt.Sprint(r.panicVal), MaxMessageUnits), "stack", string(r.stack))
		return Outcome{}, newUntyped(ErrBackendPanicked, BoundText(fmt.Sprint(r.panicVal), MaxMessageUnits), nil, false)
	case r.err != nil && callCtx.Err() != nil:
		// The backend stopped because the deadline told it to.
		return Outcome{}, didNotSettle(budget, req.Limits.WallClock, e.grace, r.err)
	case r.err != nil:
		var f *Failure
		if errors.As(r.err, &f) {
			e.log.WarnContext(ctx, "sandbox backend returned a typed failure as an error", "scriptRef", ref.String())
			return Outcome{}, newUntyped(ErrBackendFailed, "returned a typed failure as an error (only the effect maps outcomes to channels)", r.err, false)
		}
		return Outcome{}, newUntyped(ErrBackendFailed, "", r.err, true)
	}
	return r.outcome, nil
}

// didNotSettle is the untyped, retryable failure of a backend that was still
// running at the deadline (ADR 0144 D2's "sandbox backend did not settle
// within …").
func didNotSettle(budget, wallClock, grace time.Duration, cause error) error {
	return newUntypedText(ErrBackendDidNotSettle,
		fmt.Sprintf("%v within %v (wall clock %v + grace %v)", ErrBackendDidNotSettle, budget, wallClock, grace), cause, true)
}

// interpret validates an outcome against ADR 0144 D2's closed vocabulary and
// maps it to a channel. Each field is read once into a local, and only the
// locals are checked and used.
func (e *Effect) interpret(ctx context.Context, o Outcome, ref contentref.Ref) ([]byte, error) {
	ok, value, kind, limit, namePtr, message := o.OK, o.Value, o.Kind, o.Limit, o.Name, o.Message
	hasName := namePtr != nil
	var name string
	if hasName {
		name = *namePtr
	}

	var problems []string
	unexpected := func(field string, present bool) {
		if present {
			problems = append(problems, field+" is not allowed here")
		}
	}
	var mapped error
	switch {
	case ok:
		unexpected("kind", kind != "")
		unexpected("limit", limit != "")
		unexpected("name", hasName)
		unexpected("message", message != "")
		if len(value) == 0 {
			problems = append(problems, "an ok outcome needs a value")
		}
	case kind == KindLimit:
		unexpected("value", value != nil)
		unexpected("name", hasName)
		unexpected("message", message != "")
		switch limit {
		case LimitCPU, LimitMemory, LimitWallClock:
			mapped = &Failure{Channel: ChannelLimitExceeded, Kind: limit}
		default:
			problems = append(problems, "limit must be cpu, memory or wallClock, got "+quoteBounded(string(limit)))
		}
	case kind == KindThrew:
		// An empty message is not malformed: Go cannot tell it from a
		// missing one, and `throw ""` is the script's own outcome.
		unexpected("value", value != nil)
		unexpected("limit", limit != "")
		f := &Failure{Channel: ChannelScriptError, Message: BoundText(message, MaxMessageUnits)}
		if hasName {
			n := BoundText(name, MaxNameUnits)
			f.Name = &n
		}
		mapped = f
	case kind == KindInputTooLarge:
		unexpected("value", value != nil)
		unexpected("limit", limit != "")
		unexpected("name", hasName)
		unexpected("message", message != "")
		mapped = &Failure{Channel: ChannelInputTooLarge, LimitBytes: e.maxInput}
	case kind == KindInfrastructure:
		unexpected("value", value != nil)
		unexpected("limit", limit != "")
		unexpected("name", hasName)
		if message == "" {
			problems = append(problems, "an infrastructure outcome needs a message")
		}
		mapped = newUntyped(ErrBackendFailed, message, nil, true)
	case kind == "":
		problems = append(problems, "a failed outcome needs a kind")
	default:
		problems = append(problems, "unknown kind "+quoteBounded(string(kind)))
	}
	if len(problems) > 0 {
		detail := strings.Join(problems, "; ")
		e.log.WarnContext(ctx, "sandbox backend returned a malformed outcome", "scriptRef", ref.String(), "problems", BoundText(detail, MaxMessageUnits))
		return nil, newUntyped(ErrMalformedOutcome, detail, nil, false)
	}
	if mapped != nil {
		return nil, mapped
	}
	return value, nil
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
