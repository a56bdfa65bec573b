package handler

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
)

// NewEffect builds the effect Config.Effect expects: over ObserveScripts(scripts)
// and CaptureLogs(backend), with opts.MaxInputBytes and opts.MaxOutputBytes
// taken from l when they are zero, so that /v1/evaluations applies the bounds
// GET /v1/capabilities advertises. Set opts.BackendGrace to cover the engine's
// hard-kill grace (for example Config.HardKillGrace).
func NewEffect(scripts effect.ScriptReader, backend LogBackend, l Limits, opts effect.Options) (*effect.Effect, error) {
	if opts.MaxInputBytes == 0 {
		opts.MaxInputBytes = int(l.MaxInputBytes)
	}
	if opts.MaxOutputBytes == 0 {
		opts.MaxOutputBytes = int(l.MaxOutputBytes)
	}
	var r effect.ScriptReader
	if scripts != nil {
		r = ObserveScripts(scripts)
	}
	var b effect.Backend
	if backend != nil {
		b = CaptureLogs(backend)
	}
	return effect.New(r, b, opts)
}

// CaptureLogs wraps the engine for the effect. When the request's context
// carries a log sink (the /v1/evaluations handler puts one there when the
// request sets captureLogs) it calls EvaluateWithLogs and keeps the logs in
// the sink; else Evaluate. It also times the run and traces it (an
// "evaluate" span) for the request's log line. Capabilities, Warm and Close
// pass through.
func CaptureLogs(b LogBackend) effect.Backend { return &logCapture{b: b} }

type logCapture struct{ b LogBackend }

var (
	_ effect.Warmer = (*logCapture)(nil)
	_ effect.Closer = (*logCapture)(nil)
)

func (c *logCapture) Capabilities() effect.Capabilities { return c.b.Capabilities() }

func (c *logCapture) Warm(ctx context.Context) error {
	if w, ok := c.b.(effect.Warmer); ok {
		return w.Warm(ctx)
	}
	return nil
}

func (c *logCapture) Close(ctx context.Context) error {
	if cl, ok := c.b.(effect.Closer); ok {
		return cl.Close(ctx)
	}
	return nil
}

func (c *logCapture) Evaluate(ctx context.Context, req effect.Request) (out effect.Outcome, err error) {
	ev := evalFrom(ctx)
	if ev == nil {
		return c.b.Evaluate(ctx, req)
	}
	ctx, span := ev.backendStarted(ctx)
	defer func() { ev.backendFinished(span, out, err) }()
	if ev.wantLogs {
		out, logs, err := c.b.EvaluateWithLogs(ctx, req)
		ev.setLogs(logs)
		return out, err
	}
	return c.b.Evaluate(ctx, req)
}

// ObserveScripts wraps a script reader so that each fetch made for a request
// is timed and traced (a "fetch" span). It only records: the fetch's
// deadline is the effect's (effect.Input.FetchDeadline), and the effect
// verifies the bytes itself.
func ObserveScripts(r effect.ScriptReader) effect.ScriptReader { return &scriptObserver{r: r} }

type scriptObserver struct{ r effect.ScriptReader }

func (o *scriptObserver) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	ev := evalFrom(ctx)
	if ev == nil {
		return o.r.Get(ctx, ref)
	}
	ctx, span := ev.tracer.Start(ctx, "fetch", trace.WithAttributes(attribute.String("sandbox.script_ref", ref.String())))
	start := time.Now()
	b, err := o.r.Get(ctx, ref)
	end := time.Now()
	ev.mu.Lock()
	ev.fetchStart, ev.fetchEnd, ev.fetched = start, end, true
	ev.mu.Unlock()
	if err != nil {
		span.SetStatus(codes.Error, "fetch failed")
	} else {
		span.SetAttributes(attribute.Int("sandbox.script_bytes", len(b)))
	}
	span.End(trace.WithTimestamp(end))
	return b, err
}

type evalKey struct{}

// evalRecord is what one evaluation reports for its log line, its metrics
// and its spans; nothing the handler decides reads it. The effect calls the backend on its own goroutine, so the
// fields the wrappers set are guarded by mu.
type evalRecord struct {
	tracer trace.Tracer

	// Set by the handler before the evaluation, read-only afterwards.
	script     string // the reference, or "inline"
	inlineSHA  string // the inline script's reference
	inputBytes int
	wantLogs   bool

	mu                   sync.Mutex
	outcome, limit       string // outcome kind, channel or problem type; limit kind
	outputBytes          int
	fetchStart, fetchEnd time.Time
	fetched              bool
	evalStart, evalEnd   time.Time
	backendCalled        bool
	logs                 string
	// Durations measured by the handler: the SPI route's fetch and
	// evaluation, or the effect's whole run when its steps are not observed.
	fetchDur, evaluateDur time.Duration
	measured              bool
}

func withEval(ctx context.Context, ev *evalRecord) context.Context {
	return context.WithValue(ctx, evalKey{}, ev)
}

func evalFrom(ctx context.Context) *evalRecord {
	ev, _ := ctx.Value(evalKey{}).(*evalRecord)
	return ev
}

// backendStarted notes the start of the backend call and opens its span;
// the time since the fetch ended is the effect's verification.
func (ev *evalRecord) backendStarted(ctx context.Context) (context.Context, trace.Span) {
	now := time.Now()
	ev.mu.Lock()
	ev.backendCalled = true
	ev.evalStart = now
	fetched, fetchEnd := ev.fetched, ev.fetchEnd
	ev.mu.Unlock()
	if fetched {
		_, v := ev.tracer.Start(ctx, "verify", trace.WithTimestamp(fetchEnd))
		v.End(trace.WithTimestamp(now))
	}
	return ev.tracer.Start(ctx, "evaluate", trace.WithTimestamp(now))
}

func (ev *evalRecord) backendFinished(span trace.Span, out effect.Outcome, err error) {
	now := time.Now()
	ev.mu.Lock()
	ev.evalEnd = now
	ev.mu.Unlock()
	annotateOutcome(span, out, err)
	span.End(trace.WithTimestamp(now))
}

func annotateOutcome(span trace.Span, out effect.Outcome, err error) {
	switch {
	case err != nil:
		span.SetStatus(codes.Error, "backend returned an error")
	case out.OK:
		span.SetAttributes(attribute.String("sandbox.outcome", "ok"))
	default:
		span.SetAttributes(attribute.String("sandbox.outcome", string(out.Kind)))
		if out.Limit != "" {
			span.SetAttributes(attribute.String("sandbox.limit", string(out.Limit)))
		}
	}
}

func (ev *evalRecord) setLogs(logs string) {
	ev.mu.Lock()
	ev.logs = logs
	ev.mu.Unlock()
}

// capturedLogs returns the logs CaptureLogs kept ("" when the run did not
// start).
func (ev *evalRecord) capturedLogs() string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.logs
}

func (ev *evalRecord) setOutcome(outcome, limit string, outputBytes int) {
	ev.mu.Lock()
	ev.outcome, ev.limit, ev.outputBytes = outcome, limit, outputBytes
	ev.mu.Unlock()
}

// stepsObserved reports whether the wrappers NewEffect installs reported a
// fetch or a backend call for this evaluation.
func (ev *evalRecord) stepsObserved() bool {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.fetched || ev.backendCalled
}

// setTimes records fetch and evaluate durations measured by the handler
// itself: the SPI route's, or an unobserved effect's whole run (as the
// evaluation: the effect's steps cannot be told apart).
func (ev *evalRecord) setTimes(fetch, evaluate time.Duration) {
	ev.mu.Lock()
	ev.fetchDur, ev.evaluateDur, ev.measured = fetch, evaluate, true
	ev.mu.Unlock()
}

// durations returns the fetch and evaluate times: measured by the handler,
// or by the wrappers NewEffect puts around the store and the backend (zero
// for a step the evaluation did not reach).
func (ev *evalRecord) durations() (fetch, evaluate time.Duration) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.measured {
		return ev.fetchDur, ev.evaluateDur
	}
	if ev.fetched {
		fetch = ev.fetchEnd.Sub(ev.fetchStart)
	}
	switch {
	case ev.backendCalled && !ev.evalEnd.IsZero():
		evaluate = ev.evalEnd.Sub(ev.evalStart)
	case ev.backendCalled:
		evaluate = time.Since(ev.evalStart) // still running: abandoned
	}
	return fetch, evaluate
}
