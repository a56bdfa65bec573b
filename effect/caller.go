package effect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// caller is how the effect calls its backend, and the only way: the
// declaration read once and vetted (docs/spi.md, "Capabilities"), the call
// raced against the caller and a deadline of wall clock + grace, a panic or
// an error turned into an untyped failure, and the outcome validated against
// the closed vocabulary of docs/spi.md, "Outcomes".
type caller struct {
	backend spi.Backend
	caps    spi.Capabilities
	// grace is the caller grace of Options.BackendGrace; zero leaves the
	// timeline to a backend that is spi.Timed.
	grace time.Duration
	log   *slog.Logger
}

// newCaller builds the caller of backend with opts' BackendGrace,
// AllowNetwork, AllowReusedEnvironment and Logger. It reads the backend's
// capabilities exactly once, validates them and refuses the ones the
// options do not accept, joining every problem.
func newCaller(backend spi.Backend, opts Options) (*caller, error) {
	var problems []error
	c := &caller{backend: backend, grace: opts.BackendGrace, log: opts.Logger}
	if backend == nil {
		problems = append(problems, fmt.Errorf("%w: nil Backend", ErrInvalidOptions))
	}
	_, timed := backend.(spi.Timed)
	switch {
	case c.grace == 0 && !timed:
		c.grace = DefaultBackendGrace
	case c.grace < 0:
		problems = append(problems, fmt.Errorf("%w: BackendGrace must be >= 0, got %v", ErrInvalidOptions, c.grace))
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if backend != nil {
		caps, err := readCapabilities(backend)
		if err != nil {
			problems = append(problems, err)
		} else {
			problems = append(problems, validateCapabilities(caps)...)
			if caps.Network != spi.NetworkNone && !opts.AllowNetwork {
				problems = append(problems, fmt.Errorf("%w (network: %q)", ErrNetworkRefused, caps.Network))
			}
			if !caps.FreshPerRun && !opts.AllowReusedEnvironment {
				problems = append(problems, ErrReusedEnvironmentRefused)
			}
			c.caps = caps
		}
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	return c, nil
}

// timing is the Timing of a run with this wall clock: the backend's own
// when it is spi.Timed and BackendGrace is zero, else a caller grace of
// BackendGrace.
func (c *caller) timing(wallClock time.Duration) spi.Timing {
	if c.grace == 0 {
		return c.backend.(spi.Timed).Timing(wallClock)
	}
	return spi.Timing{WallClock: wallClock, CallerGrace: c.grace}
}

// callContext is the context of a backend call, which ends at whichever comes
// first (docs/spi.md, "Outcomes"): ctx, or the caller's deadline for a run of
// this wall clock (budget from now), with errDeadline as its cause.
func (c *caller) callContext(ctx context.Context, t spi.Timing) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, t.CallerDeadline(), errDeadline)
}

// running counts what an evaluation has still running (itself, and a
// backend call it may have stopped waiting for), calls finished when the
// count reaches zero, and keeps when the backend call ran.
type running struct {
	n        atomic.Int32
	finished func()

	mu   sync.Mutex
	call Interval
}

func newRunning(finished func()) *running {
	r := &running{finished: finished}
	r.n.Store(1)
	return r
}

// start notes a backend call; its goroutine calls returned, then done,
// when it returns.
func (r *running) start() {
	r.mu.Lock()
	r.call.Start = time.Now()
	r.mu.Unlock()
	r.n.Add(1)
}

func (r *running) returned() {
	r.mu.Lock()
	r.call.End = time.Now()
	r.mu.Unlock()
}

// callInterval is when the backend was called, and returned if it has.
func (r *running) callInterval() Interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.call
}

func (r *running) done() {
	if r.n.Add(-1) == 0 && r.finished != nil {
		r.finished()
	}
}

// callResult is what the backend goroutine hands back.
type callResult struct {
	report   spi.Report
	err      error
	panicked bool
	panicVal any
	stack    []byte
}

// abandonment is when and why the effect stopped waiting for a backend's
// call.
type abandonment struct {
	at        time.Time
	cancelled bool // the caller left; else the deadline passed
}

// report logs the return of a call the effect had stopped waiting for, and
// how long after: a warning when the deadline had passed (the backend did
// not stop when its context said so), a debug line when the caller had
// left, which is ordinary (a backend stops at its next poll).
func (a *abandonment) report(log *slog.Logger, label string) {
	after := time.Since(a.at).String()
	if a.cancelled {
		log.Debug("sandbox backend returned after the caller left", "scriptRef", label, "after", after)
		return
	}
	log.Warn("sandbox backend returned after the effect stopped waiting", "scriptRef", label, "after", after)
}

// errDeadline is the cause of the combined context when the deadline passes.
var errDeadline = errors.New("sandbox: backend deadline (wall clock + grace) passed")

// call runs the backend in its own goroutine with a context that ends on the
// caller's cancellation or at the caller's deadline, and waits for whichever
// comes first, then validates the outcome. A Reporter also reports the
// run's console output (when req asks for it) and usage; from any other
// backend the usage is the call's wall time, as Run. The outcome is the
// backend's own (its text is not bounded here, nor is an ok value checked
// to be JSON text).
// The goroutine always finishes once the backend honours its context: the
// result channel is buffered, so nothing waits for a reader.
func (c *caller) call(ctx context.Context, req spi.RunRequest, t spi.Timing, label string, running *running) (spi.Report, error) {
	callCtx, cancel := c.callContext(ctx, t)
	defer cancel() // releases the timer and tells the backend to stop, on every path

	results := make(chan callResult, 1)
	// abandoned is when and why the effect stopped waiting, for the
	// backend's goroutine to say how late it returned
	var abandoned atomic.Pointer[abandonment]
	running.start()
	go func() {
		var r callResult
		defer func() {
			if p := recover(); p != nil {
				r = callResult{panicked: true, panicVal: p, stack: debug.Stack()}
			}
			running.returned()
			// done before the result is handed over: a call that settled
			// leaves the last count to the evaluation, which then calls
			// finished before it returns
			running.done()
			results <- r
			if a := abandoned.Load(); a != nil {
				a.report(c.log, label)
			}
		}()
		r.report, r.err = c.evaluate(callCtx, req)
	}()

	var r callResult
	select {
	case r = <-results:
	case <-callCtx.Done():
		select {
		case r = <-results: // settled in the same instant: use it
		default:
			abandoned.Store(&abandonment{at: time.Now(), cancelled: ctx.Err() != nil})
			if ctx.Err() != nil {
				return spi.Report{}, cancelled(ctx, false)
			}
			c.log.WarnContext(ctx, "sandbox backend did not settle", "scriptRef", label,
				"wallClock", t.WallClock.String(), "grace", t.CallerGrace.String())
			return spi.Report{}, didNotSettle(t, nil)
		}
	}
	switch {
	case ctx.Err() != nil:
		return spi.Report{}, cancelled(ctx, false)
	case r.panicked:
		c.log.ErrorContext(ctx, "sandbox backend panicked", "scriptRef", label,
			"panic", spi.BoundText(fmt.Sprint(r.panicVal), spi.MaxMessageUnits), "stack", string(r.stack))
		return spi.Report{}, newUntyped(ErrBackendPanicked, spi.BoundText(fmt.Sprint(r.panicVal), spi.MaxMessageUnits), nil, false)
	case r.err != nil && callCtx.Err() != nil:
		// The backend stopped because the deadline told it to.
		return spi.Report{}, didNotSettle(t, r.err)
	case r.err != nil:
		var f *spi.Failure
		if errors.As(r.err, &f) {
			c.log.WarnContext(ctx, "sandbox backend returned a typed failure as an error", "scriptRef", label)
			return spi.Report{}, newUntyped(ErrBackendFailed, "returned a typed failure as an error (only the effect maps outcomes to channels)", r.err, false)
		}
		return spi.Report{}, newUntyped(ErrBackendFailed, "", r.err, true)
	}
	o, err := ValidateOutcome(r.report.Outcome)
	if err == nil && r.report.EngineFault != "" && o.Kind != spi.KindInfrastructure {
		// An engine fault is never the script's outcome, and no outcome of
		// the script is a fault: a report that says both says nothing.
		err = newUntyped(ErrMalformedOutcome, "an engine fault comes with an infrastructure outcome only, not with "+outcomeName(o), nil, false)
	}
	if err != nil {
		c.log.WarnContext(ctx, "sandbox backend returned a malformed outcome", "scriptRef", label, "problems", err.Error())
		return spi.Report{Logs: r.report.Logs, Usage: r.report.Usage}, err
	}
	r.report.Outcome = o
	r.report.EngineFault = spi.BoundText(r.report.EngineFault, spi.MaxMessageUnits)
	return r.report, nil
}

// outcomeName names a valid outcome's variant: ok, or its kind.
func outcomeName(o spi.Outcome) string {
	if o.OK {
		return "ok"
	}
	return string(o.Kind)
}

// evaluate calls the backend: Run for a Reporter, else Evaluate, timed.
func (c *caller) evaluate(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	if r, ok := c.backend.(spi.Reporter); ok {
		rep, err := r.Run(ctx, req)
		if !req.CaptureLogs {
			rep.Logs = "" // a backend that keeps it anyway does not pass it on
		}
		return rep, err
	}
	start := time.Now()
	o, err := c.backend.Evaluate(ctx, req.Request)
	return spi.Report{Outcome: o, Usage: spi.Usage{Run: time.Since(start), MemoryLimitBytes: req.Limits.MemoryBytes}}, err
}

// didNotSettle is the untyped, retryable failure of a backend that was still
// running at the deadline (docs/spi.md, "Outcomes": "sandbox backend did not
// settle within …").
func didNotSettle(t spi.Timing, cause error) error {
	return newUntypedText(ErrBackendDidNotSettle,
		fmt.Sprintf("%v within %v (wall clock %v + grace %v)", ErrBackendDidNotSettle, t.CallerDeadline(), t.WallClock, t.CallerGrace), cause, true)
}

// ValidateOutcome checks an outcome against the closed vocabulary of
// docs/spi.md, "Outcomes", and returns a copy of it holding only its kind's
// fields, or an untyped ErrMalformedOutcome that names every problem. Each
// field is read once into a local, and only the locals are checked and
// returned. An empty threw message is not malformed (`throw ""` is the
// script's own outcome); an ok value is checked to be present, not to be JSON
// text.
func ValidateOutcome(o spi.Outcome) (spi.Outcome, error) {
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
	var valid spi.Outcome
	switch {
	case ok:
		unexpected("kind", kind != "")
		unexpected("limit", limit != "")
		unexpected("name", hasName)
		unexpected("message", message != "")
		if len(value) == 0 {
			problems = append(problems, "an ok outcome needs a value")
		}
		valid = spi.OK(value)
	case kind == spi.KindLimit:
		unexpected("value", value != nil)
		unexpected("name", hasName)
		unexpected("message", message != "")
		switch limit {
		case spi.LimitCPU, spi.LimitMemory, spi.LimitWallClock:
			valid = spi.LimitHit(limit)
		default:
			problems = append(problems, "limit must be cpu, memory or wallClock, got "+jsontext.QuoteShort(string(limit)))
		}
	case kind == spi.KindThrew:
		unexpected("value", value != nil)
		unexpected("limit", limit != "")
		if hasName {
			valid = spi.Threw(&name, message)
		} else {
			valid = spi.Threw(nil, message)
		}
	case kind == spi.KindInputTooLarge:
		unexpected("value", value != nil)
		unexpected("limit", limit != "")
		unexpected("name", hasName)
		unexpected("message", message != "")
		valid = spi.InputTooLarge()
	case kind == spi.KindInfrastructure:
		unexpected("value", value != nil)
		unexpected("limit", limit != "")
		unexpected("name", hasName)
		if message == "" {
			problems = append(problems, "an infrastructure outcome needs a message")
		}
		valid = spi.Infrastructure(message)
	case kind == "":
		problems = append(problems, "a failed outcome needs a kind")
	default:
		problems = append(problems, "unknown kind "+jsontext.QuoteShort(string(kind)))
	}
	if len(problems) > 0 {
		return spi.Outcome{}, newUntyped(ErrMalformedOutcome, spi.BoundText(strings.Join(problems, "; "), spi.MaxMessageUnits), nil, false)
	}
	return valid, nil
}

// readCapabilities calls backend.Capabilities once, turning a panic into an
// error: a third-party backend must not take the service down at start-up.
func readCapabilities(backend spi.Backend) (caps spi.Capabilities, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: Capabilities panicked: %s", ErrInvalidCapabilities, spi.BoundText(fmt.Sprint(p), spi.MaxMessageUnits))
		}
	}()
	return backend.Capabilities(), nil
}

func validateCapabilities(c spi.Capabilities) []error {
	var problems []error
	if !validLanguage(c.Language) {
		problems = append(problems, fmt.Errorf("%w: language must be 1 to 64 ASCII letters, digits or ._+-, got %s",
			ErrInvalidCapabilities, jsontext.QuoteShort(c.Language)))
	}
	switch c.Network {
	case spi.NetworkNone, spi.NetworkAllowlist, spi.NetworkOpen:
	default:
		problems = append(problems, fmt.Errorf("%w: network must be none, allowlist or open, got %s",
			ErrInvalidCapabilities, jsontext.QuoteShort(string(c.Network))))
	}
	switch c.WallClock {
	case spi.WallClockHard, spi.WallClockSoft:
	default:
		problems = append(problems, fmt.Errorf("%w: wallClock must be hard or soft, got %s",
			ErrInvalidCapabilities, jsontext.QuoteShort(string(c.WallClock))))
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
