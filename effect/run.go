package effect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// label names the script of ev in log lines.
func label(ev spi.Evaluation) string {
	if ev.ScriptRef.IsZero() {
		return "inline"
	}
	return ev.ScriptRef.String()
}

// problems names every field of ev that no run can have.
func problems(ev spi.Evaluation) []string {
	var problems []string
	if ev.Limits.WallClock <= 0 {
		problems = append(problems, fmt.Sprintf("limits.wallClock must be > 0, got %v", ev.Limits.WallClock))
	}
	if ev.Limits.MemoryBytes <= 0 {
		problems = append(problems, fmt.Sprintf("limits.memoryBytes must be > 0, got %d", ev.Limits.MemoryBytes))
	}
	if ev.Replay != nil {
		if err := ev.Replay.Check(); err != nil {
			problems = append(problems, "determinism: "+err.Error())
		}
	}
	if h := ev.ExpectedOutputShapeHash; h != "" {
		if err := spi.CheckShapeHash(h); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// Result is what Run found: the answer, the console output, and when each
// step ran. Run returns it with its error too, with what the evaluation
// reached.
type Result struct {
	// Value is the value's canonical JSON text (spi.AnswerChannel, no error).
	Value json.RawMessage
	// Outcome is the backend's outcome, validated, once the backend
	// answered (spi.AnswerOutcome's answer).
	Outcome spi.Outcome
	// Logs is the run's console output when the evaluation asked for it;
	// empty when the script never ran.
	Logs string
	// Fetch, Verify and Call are when the script was read from the store,
	// when its bytes were checked against its reference, and when the
	// backend was called, for the caller's logs and traces.
	Fetch, Verify, Call Interval
	// Usage is what the run used: the backend's report, with the effect's
	// own steps (Fetch, Verify). It says what was reached when Run fails.
	Usage spi.Usage
	// EngineFault is the backend's report that its infrastructure outcome
	// is an engine fault (spi.Report.EngineFault), the trap's text bounded
	// as a message is: an operator's alarm, whatever the answer says.
	EngineFault string
	// ScriptBytes is the length of the script that was fetched.
	ScriptBytes int
}

// Interval is when a step of a run began and ended: zero for a step the run
// did not reach, and an End of zero for one still going when Run returned
// (a backend call that outlived Run's wait).
type Interval struct {
	Start, End time.Time
}

// Duration is how long the step took, or has taken by now when it has not
// ended.
func (i Interval) Duration() time.Duration {
	switch {
	case i.Start.IsZero():
		return 0
	case i.End.IsZero():
		return time.Since(i.Start)
	}
	return i.End.Sub(i.Start)
}

// Run is one evaluation, whole, for both of the service's routes: the input
// bounded, the script (sent by value, or fetched by its reference under a
// deadline of its own, ctx's deadline less the run's, and verified and
// bounded), the backend called under the caller's race against the run's
// caller deadline (spi.Timing), its outcome validated, the console output captured when
// asked, and the answer ev asks for (see Answer). Run returns only once the
// backend's call has returned, or StopGrace after Run gave up on it.
//
// Its errors: a typed *spi.Failure (spi.AnswerChannel); a *NotRunError for each way
// the script never ran; a cancellation matching ctx.Err() once ctx is done,
// whatever else happened; and the untyped failures of Retryable.
func (e *Effect) Run(ctx context.Context, ev spi.Evaluation) (Result, error) {
	return e.runWith(ctx, ev, func(r *running) (Result, error) { return e.evaluate(ctx, ev, r) })
}

// runWith is Run with evaluate, the steps of the evaluation, given.
func (e *Effect) runWith(ctx context.Context, ev spi.Evaluation, evaluate func(*running) (Result, error)) (Result, error) {
	stopped := make(chan struct{})
	r := newRunning(func() { close(stopped) })
	res, err := e.run(ctx, ev, r, evaluate)
	e.awaitStop(ctx, stopped, label(ev))
	res.Call = r.callInterval()
	return res, err
}

// awaitStop waits, at most StopGrace, for stopped: everything an evaluation
// started has returned.
func (e *Effect) awaitStop(ctx context.Context, stopped <-chan struct{}, label string) {
	select {
	case <-stopped:
		return
	default:
	}
	t := time.NewTimer(e.stopGrace)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		e.log.WarnContext(ctx, "sandbox backend had not returned a grace after the effect gave up on it; answering anyway",
			"scriptRef", label, "grace", e.stopGrace.String())
	}
}

// run is Run's evaluation, without the wait for the backend to stop.
func (e *Effect) run(ctx context.Context, ev spi.Evaluation, r *running, evaluate func(*running) (Result, error)) (res Result, err error) {
	defer r.done()
	if ctx.Err() != nil {
		return res, notRun(Stopped, ev.ScriptRef, cancelled(ctx, true))
	}
	start := time.Now()
	res, err = evaluate(r)
	if ctx.Err() != nil {
		if !r.callInterval().Start.IsZero() {
			return res, cancelled(ctx, false)
		}
		return res, notRun(Stopped, ev.ScriptRef, cancelled(ctx, true))
	}
	if e.log.Enabled(ctx, slog.LevelDebug) {
		e.log.DebugContext(ctx, "sandbox evaluation", "scriptRef", label(ev),
			"result", resultLabel(err), "duration", time.Since(start))
	}
	return res, err
}

func resultLabel(err error) string {
	var f *spi.Failure
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &f):
		return string(f.Channel)
	default:
		return "untyped"
	}
}

func (e *Effect) evaluate(ctx context.Context, ev spi.Evaluation, r *running) (Result, error) {
	var res Result
	// 1. Refuse what no run can have.
	if err := e.admit(ev); err != nil {
		return res, err
	}
	// 2. Answer what no retry can change before anything is fetched, and
	// run a limit above its maximum at the maximum.
	ev.Limits = e.clamp(ev.Limits)
	res.Usage.MemoryLimitBytes = ev.Limits.MemoryBytes
	if settled, err := e.settle(ev, &res); settled {
		return res, err
	}
	// 3. The script: sent by value, or fetched, verified and bounded.
	timing := e.caller.timing(ev.Limits.WallClock)
	script := ev.Script
	if !ev.ScriptRef.IsZero() {
		b, err := e.fetch(ctx, ev.ScriptRef, timing, &res)
		res.Usage.Fetch, res.Usage.Verify = res.Fetch.Duration(), res.Verify.Duration()
		if err != nil {
			return res, err
		}
		script, res.ScriptBytes = string(b), len(b)
	}
	return e.callAndDecide(ctx, ev, script, timing, r, res, nil)
}

// admit refuses what no run of ev can have: step 1.
func (e *Effect) admit(ev spi.Evaluation) error {
	if problems := problems(ev); len(problems) > 0 {
		return newUntyped(ErrInvalidInput, strings.Join(problems, "; "), nil, false)
	}
	if ev.Replay != nil && !e.Replayable() {
		// the SPI's request has no seed and no clock to pass on
		return newUntyped(ErrInvalidInput, "a replayable run needs a backend that reports its runs whole (spi.Reporter); this one takes the SPI's request alone", nil, false)
	}
	if !ev.ScriptRef.IsZero() && !e.ScriptStore() {
		return notRun(NoScriptStore, ev.ScriptRef, newUntyped(ErrNoScriptStore, ev.ScriptRef.String(), nil, false))
	}
	return nil
}

// input is ev's input text, null when it has none.
func input(ev spi.Evaluation) jsontext.Text {
	if len(ev.Input) == 0 {
		return jsontext.Text("null")
	}
	return ev.Input
}

// settle answers, in res, what no retry can change for ev (whose limits are
// clamped), when the backend's vocabulary has the answer without a run:
// step 2. A script sent by value is bounded here; one by reference, by its
// fetch.
func (e *Effect) settle(ev spi.Evaluation, res *Result) (bool, error) {
	scriptBytes := int64(-1) // by reference: the fetch bounds it
	if ev.ScriptRef.IsZero() {
		scriptBytes = int64(len(ev.Script))
	}
	o, settled := e.bounds().Settled(scriptBytes, ev.Limits.MemoryBytes, int64(len(input(ev))))
	if !settled {
		return false, nil
	}
	// the caller, not a retry, is what can change it
	res.Outcome = o
	if ev.Answer == spi.AnswerOutcome {
		return true, nil
	}
	_, err := e.interpret(o)
	return true, err
}

// runRequest is the backend's request for a run of script on ev's input.
func runRequest(ev spi.Evaluation, script string) spi.RunRequest {
	return spi.RunRequest{Request: spi.Request{Script: script, InputJSON: string(input(ev)), Limits: ev.Limits}, CaptureLogs: ev.CaptureLogs, Replay: ev.Replay}
}

// callAndDecide calls the backend with script and ev's input, racing the
// caller and the deadline, validates its outcome (steps 4, 5) and answers
// as ev asks (6 to 9), adding to res, which holds what the evaluation
// reached before. next, when not nil, is the run the caller asks for after
// this one (spi.RunRequest.Next).
func (e *Effect) callAndDecide(ctx context.Context, ev spi.Evaluation, script string, timing spi.Timing, r *running, res Result, next *spi.RunRequest) (Result, error) {
	req := runRequest(ev, script)
	req.Next = next
	rep, err := e.caller.call(ctx, req, timing, label(ev), r)
	res.Logs = rep.Logs
	res.Usage = withEffectSteps(rep.Usage, res.Usage)
	if err != nil {
		return res, err
	}
	out := rep.Outcome
	res.Outcome, res.EngineFault = out, rep.EngineFault
	if ev.Answer == spi.AnswerOutcome {
		return res, e.boundValue(ctx, ev, out)
	}
	// 6 to 9: the effect's decision.
	res.Value, err = e.decide(ctx, ev, out)
	return res, err
}

// bounds are the spi.Bounds of Options, which Run applies to every
// evaluation.
func (e *Effect) bounds() spi.Bounds {
	return spi.Bounds{MaxScriptBytes: e.maxScript, MinMemoryBytes: e.minMemory, MaxInputBytes: int64(e.maxInput)}
}

// clamp lowers a limit above its maximum to the maximum (docs/spi.md,
// "Answers no retry can change"): a run that needs more meets the limit,
// as it would in process.
func (e *Effect) clamp(l spi.Limits) spi.Limits {
	if e.maxWall > 0 {
		l.WallClock = min(l.WallClock, e.maxWall)
	}
	if e.maxMemory > 0 {
		l.MemoryBytes = min(l.MemoryBytes, e.maxMemory)
	}
	return l
}

// boundValue refuses an ok value longer than a run within the memory
// maximum can make: the only bound on an outcome answered as it is (the
// caller's effect bounds the output; docs/spi.md, "Bounds"), which an engine
// within its memory cannot reach.
func (e *Effect) boundValue(ctx context.Context, ev spi.Evaluation, o spi.Outcome) error {
	if e.maxMemory == 0 || !o.OK {
		return nil
	}
	if n, max := int64(len(o.Value)), spi.MaxValueBytes(e.maxMemory); n > max {
		e.log.WarnContext(ctx, "sandbox backend returned a value longer than its memory can make", "scriptRef", label(ev), "bytes", n)
		return newUntyped(ErrMalformedOutcome, fmt.Sprintf("the backend returned a value of %d bytes, over the %d bytes a run within the memory maximum of %d bytes can make",
			n, max, e.maxMemory), nil, false)
	}
	return nil
}

// decide maps a validated outcome to the effect's answer: its channel, the
// output bound, the shape check, and the value as its JSON round-trip.
func (e *Effect) decide(ctx context.Context, ev spi.Evaluation, o spi.Outcome) (json.RawMessage, error) {
	// 6. Map the outcome to a channel.
	value, err := e.interpret(o)
	if err != nil {
		return nil, err
	}
	// 7. Bound the output; its canonical text is also the round-trip of 9.
	canonical, over, err := jsontext.Canonical(value, e.maxOutput)
	if err != nil {
		e.log.WarnContext(ctx, "sandbox backend returned a value that is not JSON", "scriptRef", label(ev), "error", err)
		return nil, newUntyped(ErrMalformedOutcome, "ok value is not JSON text", err, false)
	}
	if over {
		return nil, &spi.Failure{Channel: spi.ChannelLimitExceeded, Kind: spi.LimitOutput}
	}
	// 8. Check the shape.
	if ev.ExpectedOutputShapeHash != "" {
		observed, err := spi.ShapeHash(canonical)
		if err != nil {
			// Cannot happen for canonical text; kept so a bug fails loudly.
			return nil, newUntyped(ErrMalformedOutcome, "shape hash of the canonical value", err, false)
		}
		if observed != ev.ExpectedOutputShapeHash {
			return nil, &spi.Failure{Channel: spi.ChannelShapeMismatch, Expected: ev.ExpectedOutputShapeHash, Observed: observed}
		}
	}
	// 9. The value as its JSON round-trip.
	return canonical, nil
}

// interpret maps a validated outcome to a channel: step 6.
func (e *Effect) interpret(o spi.Outcome) ([]byte, error) {
	switch o.Kind {
	case spi.KindLimit:
		return nil, &spi.Failure{Channel: spi.ChannelLimitExceeded, Kind: o.Limit}
	case spi.KindThrew:
		f := &spi.Failure{Channel: spi.ChannelScriptError, Message: spi.BoundText(o.Message, spi.MaxMessageUnits)}
		if o.Name != nil {
			n := spi.BoundText(*o.Name, spi.MaxNameUnits)
			f.Name = &n
		}
		return nil, f
	case spi.KindInputTooLarge:
		return nil, &spi.Failure{Channel: spi.ChannelInputTooLarge, LimitBytes: e.maxInput}
	case spi.KindInfrastructure:
		return nil, newUntyped(ErrBackendFailed, o.Message, nil, true)
	}
	return o.Value, nil // ok
}

// withEffectSteps is the backend's usage with the effect's own steps,
// which no backend measures.
func withEffectSteps(backend, effect spi.Usage) spi.Usage {
	backend.Fetch, backend.Verify = effect.Fetch, effect.Verify
	return backend
}

// fetch reads the script and checks that its bytes hash to ref and are
// within MaxScriptBytes: step 3, noting in res when each part ran. The read
// ends by the run's Timing.FetchDeadline: a store that stalls ends the
// fetch rather than the request, and the answer blames the store rather
// than the wall clock. Every failure is a *NotRunError.
func (e *Effect) fetch(ctx context.Context, ref contentref.Ref, t spi.Timing, res *Result) ([]byte, error) {
	fctx := ctx
	if d, ok := ctx.Deadline(); ok {
		if by := t.FetchDeadline(d); !by.IsZero() {
			var cancel context.CancelFunc
			fctx, cancel = context.WithDeadline(ctx, by)
			defer cancel()
		}
	}
	res.Fetch.Start = time.Now()
	script, err := e.scripts.Get(fctx, ref)
	res.Fetch.End = time.Now()
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, notRun(Stopped, ref, cancelled(ctx, true))
	case fctx.Err() != nil:
		return nil, notRun(StoreUnavailable, ref, newUntyped(ErrScriptFetch,
			ref.String()+": the store did not deliver by the fetch deadline", context.Cause(fctx), true))
	default:
		return nil, e.storeFailure(ctx, ref, err)
	}
	res.Verify.Start = res.Fetch.End
	defer func() { res.Verify.End = time.Now() }()
	if !ref.Matches(script) {
		e.log.ErrorContext(ctx, "sandbox script bytes do not hash to their reference", "scriptRef", ref.String(), "bytes", len(script))
		return nil, notRun(ScriptIntegrity, ref, newUntyped(ErrScriptFetch, ref.String(),
			fmt.Errorf("%w: got %s", contentref.ErrIntegrity, contentref.RefOf(script)), false))
	}
	if n := int64(len(script)); e.maxScript > 0 && n > e.maxScript {
		nr := notRun(ScriptTooLarge, ref, newUntyped(ErrScriptFetch,
			fmt.Sprintf("%s is %d bytes, over the maximum of %d", ref, n, e.maxScript), nil, false))
		nr.Size, nr.Limit = n, e.maxScript
		return nil, nr
	}
	return script, nil
}

// StoreReason classifies an error of a script store, of a Get or of its
// own check: the one place that reads a store's errors (the contentref
// sentinels). An error that matches none is StoreFailed.
func StoreReason(err error) NotRunReason {
	switch {
	case errors.Is(err, contentref.ErrPanicked):
		return StorePanicked
	case errors.Is(err, contentref.ErrNotFound):
		return ScriptNotFound
	case errors.Is(err, contentref.ErrIntegrity):
		return ScriptIntegrity
	case errors.Is(err, contentref.ErrTooLarge):
		return ScriptTooLarge
	case errors.Is(err, contentref.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return StoreUnavailable
	case errors.Is(err, contentref.ErrPermission):
		return StoreRefused
	}
	return StoreFailed
}

// storeFailure tells why the store did not deliver a script, by its
// StoreReason.
func (e *Effect) storeFailure(ctx context.Context, ref contentref.Ref, err error) *NotRunError {
	untyped := func(retryable bool) error { return newUntyped(ErrScriptFetch, ref.String(), err, retryable) }
	switch reason := StoreReason(err); reason {
	case ScriptNotFound:
		// the typed failure, and the reader's error that says why (for a
		// log line)
		return notRun(ScriptNotFound, ref, &missingError{&spi.Failure{Channel: spi.ChannelScriptMissing, ScriptRef: ref.String()}, err})
	case ScriptIntegrity:
		e.log.ErrorContext(ctx, "sandbox script store reported an integrity mismatch", "scriptRef", ref.String(), "error", err)
		return notRun(ScriptIntegrity, ref, untyped(false))
	case ScriptTooLarge:
		nr := notRun(ScriptTooLarge, ref, untyped(false))
		nr.Size, nr.Limit = -1, e.maxScript
		var tl *contentref.TooLargeError
		if errors.As(err, &tl) {
			nr.Size = tl.Size
			if e.maxScript == 0 || tl.Limit < e.maxScript {
				nr.Limit, nr.StoreLimit = tl.Limit, true
			}
		}
		return nr
	case StoreUnavailable:
		return notRun(StoreUnavailable, ref, untyped(true))
	default: // StorePanicked, StoreRefused, StoreFailed
		return notRun(reason, ref, untyped(false))
	}
}

// missingError is the error of a script the store does not have: the typed
// scriptMissing, and the reader's error that says why (for a log line).
type missingError struct {
	failure *spi.Failure
	cause   error
}

func (e *missingError) Error() string   { return e.failure.Error() + ": " + e.cause.Error() }
func (e *missingError) Unwrap() []error { return []error{e.failure, e.cause} }
