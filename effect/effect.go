// Package effect owns every guarantee around a sandbox backend.
//
// Effect.Run is one evaluation, whole, for both of the service's routes and
// the eval verb: it answers what no retry can change (spi.Bounds: a script,
// a memory limit or an input outside the bounds) and runs limits above the
// maxima at them, fetches the script by reference under
// a deadline of its own and verifies and bounds it, calls the backend raced
// against the caller and the run's deadline (spi.Timing), waits for the
// engine to stop, validates the outcome, captures the console, and answers
// with the backend's outcome or with the effect's decision: the typed
// channel (spi.Failure), the bounded output, the shape check. Each way a script
// never ran is a NotRunError; every other failure is untyped, with bounded
// text, and Retryable says whether running it again can help. The rules are
// those of docs/spi.md; the vocabulary the backend speaks is package spi.
package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// ScriptReader returns a script's bytes by content reference (the content
// store). It reports its failures with contentref's errors: ErrNotFound when
// there is no such script, and ErrUnavailable, ErrTooLarge, ErrPermission,
// ErrIntegrity or ErrPanicked for the others, so that the effect can tell
// them apart without knowing the store. The effect verifies the bytes against
// the reference itself and does not trust the reader to have done so.
type ScriptReader interface {
	Get(ctx context.Context, ref contentref.Ref) ([]byte, error)
}

// NoStore is the ScriptReader of an effect without a store (the service's
// credential-free mode): it runs scripts sent by value, and one asked for by
// reference is a NotRunError of reason NoScriptStore.
var NoStore ScriptReader = noStore{}

type noStore struct{}

func (noStore) Get(context.Context, contentref.Ref) ([]byte, error) {
	return nil, ErrNoScriptStore
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
	// MaxScriptBytes bounds a script: one sent by value over it is answered
	// as the script's RangeError without running (spi.Bounds), one fetched by
	// reference is a NotRunError of reason ScriptTooLarge; the store may
	// have a maximum of its own. Zero bounds neither; negative is refused.
	MaxScriptBytes int64
	// MinMemoryBytes is the least memory limit anything runs in: a run
	// asked for with less is answered as the memory limit without running
	// (spi.Bounds). Zero runs any; negative is refused.
	MinMemoryBytes int64
	// MaxMemoryBytes is the largest memory limit a run gets: one asked for
	// with more runs at it (docs/spi.md, "Answers no retry can change"). It
	// bounds the value of an outcome Run answers with as it is
	// (MaxValueBytes), and New refuses one above the backend's own maximum
	// (a backend with a MaxMemoryBytes method). Zero leaves both to the
	// backend; negative is refused.
	MaxMemoryBytes int64
	// MaxWallClock is the longest wall clock a run gets: one asked for with
	// more runs at it. Zero leaves it to the backend; negative is refused.
	MaxWallClock time.Duration
	// BackendGrace is added to each run's wall clock to give the deadline
	// after which a backend that has not returned loses (docs/spi.md,
	// "Outcomes"). It must cover what the backend does outside the script's
	// clock: cold start, queueing, a hard-kill grace. Zero takes the
	// backend's own timeline when it is spi.Timed (the quickjs engine and
	// the worker pool: their Timing's CallerGrace), and DefaultBackendGrace
	// for any other (a zero grace would fail every backend that has any
	// start-up cost, so it is not offered); negative is refused.
	BackendGrace time.Duration
	// StopGrace bounds how long Run waits, once it stopped waiting for the
	// backend's answer (the caller left, or the deadline passed), for the
	// backend's call to return: Run returns when nothing of the evaluation
	// runs any more, or when this grace has passed, so that its caller
	// admits the next evaluation to an engine that is free. Zero selects
	// the caller grace BackendGrace resolves to; negative is refused.
	StopGrace time.Duration
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

// Effect owns every guarantee around a backend (docs/spi.md, "The effect"). It
// is the only way the service uses a backend. An Effect is safe for concurrent
// use.
type Effect struct {
	scripts   ScriptReader
	caller    *caller
	maxInput  int
	maxOutput int
	maxScript int64
	minMemory int64
	maxMemory int64
	maxWall   time.Duration
	stopGrace time.Duration
	log       *slog.Logger
}

// New builds an Effect over backend. It reads the backend's capabilities
// exactly once, validates them, refuses the ones the options do not accept,
// and keeps a copy: a backend whose declaration changes later changes
// nothing (docs/spi.md, "Capabilities"). scripts is the store, or NoStore.
func New(scripts ScriptReader, backend spi.Backend, opts Options) (*Effect, error) {
	var problems []error
	invalid := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if scripts == nil {
		invalid("nil ScriptReader (NoStore is the reader of an effect without a store)")
	}
	e := &Effect{
		scripts:   scripts,
		maxInput:  opts.MaxInputBytes,
		maxOutput: opts.MaxOutputBytes,
		maxScript: opts.MaxScriptBytes,
		minMemory: opts.MinMemoryBytes,
		maxMemory: opts.MaxMemoryBytes,
		maxWall:   opts.MaxWallClock,
		stopGrace: opts.StopGrace,
		log:       opts.Logger,
	}
	switch {
	case e.maxInput == 0:
		e.maxInput = DefaultMaxInputBytes
	case e.maxInput < 0:
		invalid("MaxInputBytes must be >= 0, got %d", e.maxInput)
	}
	switch {
	case e.maxOutput == 0:
		e.maxOutput = DefaultMaxOutputBytes
	case e.maxOutput < 0:
		invalid("MaxOutputBytes must be >= 0, got %d", e.maxOutput)
	}
	if e.maxScript < 0 {
		invalid("MaxScriptBytes must be >= 0, got %d", e.maxScript)
	}
	if e.maxMemory < 0 {
		invalid("MaxMemoryBytes must be >= 0, got %d", e.maxMemory)
	}
	if e.minMemory < 0 {
		invalid("MinMemoryBytes must be >= 0, got %d", e.minMemory)
	}
	if e.maxMemory > 0 && e.minMemory > e.maxMemory {
		invalid("MinMemoryBytes %d exceeds MaxMemoryBytes %d", e.minMemory, e.maxMemory)
	}
	if e.maxWall < 0 {
		invalid("MaxWallClock must be >= 0, got %v", e.maxWall)
	}
	if m, ok := backend.(interface{ MaxMemoryBytes() int64 }); ok && e.maxMemory > m.MaxMemoryBytes() {
		invalid("MaxMemoryBytes %d exceeds the engine's maximum of %d", e.maxMemory, m.MaxMemoryBytes())
	}
	if e.stopGrace < 0 {
		invalid("StopGrace must be >= 0, got %v", e.stopGrace)
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	c, err := newCaller(backend, opts)
	if err != nil {
		problems = append(problems, err)
	}
	e.caller = c
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	if e.stopGrace == 0 {
		e.stopGrace = c.timing(0).CallerGrace
	}
	return e, nil
}

// Capabilities returns the vetted copy of the backend's declaration taken at
// construction.
func (e *Effect) Capabilities() spi.Capabilities { return e.caller.caps }

// Idempotent reports whether an evaluation is a pure function of (script,
// input), so that an at-least-once re-run is safe by construction: only when
// the backend has no network and a fresh environment per run (docs/spi.md,
// "Channels").
func (e *Effect) Idempotent() bool {
	return e.caller.caps.Network == spi.NetworkNone && e.caller.caps.FreshPerRun
}

// ScriptStore reports whether the effect reads scripts by reference: false
// for NoStore.
func (e *Effect) ScriptStore() bool { return e.scripts != NoStore }

// Replayable reports whether the effect can make a run replayable
// (spi.Evaluation.Replay): whether its backend reports its runs whole.
func (e *Effect) Replayable() bool {
	_, ok := e.caller.backend.(spi.Reporter)
	return ok
}

// Warm asks the backend to do its cold-start work ahead of traffic, when it
// can. It is advisory: a backend without Warm returns nil.
func (e *Effect) Warm(ctx context.Context) error {
	if w, ok := e.caller.backend.(spi.Warmer); ok {
		return w.Warm(ctx)
	}
	return nil
}

// Close releases the backend's pools, connections or instances, when it has
// any.
func (e *Effect) Close(ctx context.Context) error {
	if cl, ok := e.caller.backend.(spi.Closer); ok {
		return cl.Close(ctx)
	}
	return nil
}

// InputText is the adapter for a caller that holds the input as a Go value
// (loom's SandboxEvalInput) rather than as JSON text: it returns the
// spi.Evaluation's Input, or the typed inputNotSerializable for what JSON cannot
// carry. A json.RawMessage is taken as JSON text and validated; a
// jsontext.Text is JSON text already validated; any other value is
// marshalled with encoding/json, and nil is JSON null.
func InputText(v any) (jsontext.Text, error) {
	checked, _ := v.(jsontext.Text)
	raw, _ := v.(json.RawMessage)
	switch {
	case checked != nil:
		return checked, nil // accepted by this module's JSON reader already
	case raw != nil:
		if err := jsontext.Validate(raw); err != nil {
			return nil, &spi.Failure{Channel: spi.ChannelInputNotSerializable,
				Message: spi.BoundText("input is not valid JSON text: "+err.Error(), spi.MaxMessageUnits)}
		}
		return jsontext.Text(raw), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, &spi.Failure{Channel: spi.ChannelInputNotSerializable, Message: spi.BoundText(err.Error(), spi.MaxMessageUnits)}
	}
	text := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	// encoding/json passes nested RawMessage through without checking
	// UTF-8 or duplicate keys; the backend gets only strict JSON.
	if err := jsontext.Validate(text); err != nil {
		return nil, &spi.Failure{Channel: spi.ChannelInputNotSerializable,
			Message: spi.BoundText("input marshals to invalid JSON text: "+err.Error(), spi.MaxMessageUnits)}
	}
	return jsontext.Text(text), nil
}
