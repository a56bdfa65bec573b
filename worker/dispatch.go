package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/internal/logline"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// The run path: a run sent to a worker, or taken over when it was sent
// ahead; its result, the hard kill, a cancellation or the worker's death.

// Evaluate runs one script. It implements spi.Backend.
func (p *Pool) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	r, err := p.Run(ctx, spi.RunRequest{Request: req})
	return r.Outcome, err
}

// Run evaluates req in a worker and reports it whole (spi.Reporter): the
// console output when req asks for it, and what the run used, its set-up
// including the hand-off to the worker and back.
func (p *Pool) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	if err := ctx.Err(); err != nil {
		return spi.Report{}, err
	}
	start := time.Now()
	if req.Limits.WallClock <= 0 {
		return spi.Report{Outcome: spi.Infrastructure(fmt.Sprintf("invalid limits: wall clock %v must be positive", req.Limits.WallClock))}, nil
	}
	w, err := p.acquire(ctx)
	// a worker that holds a run sent ahead which is not req's stops it
	// first; one where it does not stop is killed, and another taken
	for err == nil && w.staged != nil && !w.staged.is(req) && !p.unstage(ctx, w) {
		w, err = p.acquire(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return spi.Report{}, ctx.Err()
		}
		return spi.Report{Outcome: spi.Infrastructure(err.Error())}, nil
	}
	rep, err := p.runOn(ctx, w, req)
	// what the worker did not measure (waiting for it, the frames both
	// ways) is the run's set-up
	u := &rep.Usage
	u.Setup += max(time.Since(start)-(u.Setup+u.Compile+u.Run+u.Serialise), 0)
	if u.MemoryLimitBytes == 0 {
		u.MemoryLimitBytes, u.CPUBudget = req.Limits.MemoryBytes, p.opts.Engine.CPUBudget
	}
	return rep, err
}

// acquire takes a ready worker, waiting for one while workers are starting.
func (p *Pool) acquire(ctx context.Context) (*proc, error) {
	for {
		if w := p.idle.take(); w != nil {
			if w.alive() {
				return w, nil
			}
			continue // died while idle; its successor is on its way
		}
		p.mu.Lock()
		closed, failed, startErr := p.closed, p.failed, p.startErr
		p.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		if startErr != nil {
			return nil, fmt.Errorf("no sandbox worker is ready: %w", startErr)
		}
		select {
		case <-p.idle.ready:
		case <-failed:
		case <-p.stop:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// runOn sends req to w and waits for its result, the hard kill, the
// caller's cancellation or the worker's death, whichever comes first. When
// w holds req already (w.staged.is(req); w holds no other run sent ahead),
// it waits for that run, its hard kill timed from its start. req.Next,
// when set, is sent ahead (stagedRun).
func (p *Pool) runOn(ctx context.Context, w *proc, req spi.RunRequest) (spi.Report, error) {
	timing := p.Timing(req.Limits.WallClock)
	var id uint64
	var killAt time.Time
	if st := w.staged; st != nil {
		id, killAt = st.id, st.start.Add(timing.HardKill())
		w.staged = nil
	} else {
		var tooLarge *spi.Report
		var err error
		if id, tooLarge, err = p.send(w, req); err != nil {
			return p.died(w, err)
		}
		if tooLarge != nil {
			p.idle.put(w)
			return *tooLarge, nil
		}
		killAt = time.Now().Add(timing.HardKill())
		if p.dispatched != nil {
			p.dispatched(w)
		}
	}
	if next := req.Next; next != nil {
		nid, tooLarge, err := p.send(w, *next)
		switch {
		case err != nil:
			return p.died(w, err)
		case tooLarge == nil:
			w.staged = &stagedRun{id: nid, req: *next}
		}
	}
	result := func(r resultFrame) (spi.Report, error) {
		if w.staged != nil {
			w.staged.start = time.Now()
		}
		return p.finish(ctx, w, id, r)
	}
	// an adopted run may have ended already, and its hard kill passed
	// while nobody waited: its result comes first
	select {
	case r := <-w.results:
		return result(r)
	default:
	}
	hardKill := time.NewTimer(time.Until(killAt))
	defer hardKill.Stop()
	select {
	case r := <-w.results:
		return result(r)
	case <-w.readDone:
		return p.died(w, w.readErr)
	case <-hardKill.C:
		p.killStuck(ctx, w, req.Request, false)
		// the guest ran until it was killed; what it used besides died
		// with its worker
		return spi.Report{Outcome: spi.LimitHit(spi.LimitWallClock), Usage: spi.Usage{Run: timing.HardKill() - time.Until(killAt)}}, nil
	case <-ctx.Done():
	}
	// Cancelled: the guest stops at its next interrupt poll, or its worker
	// is killed a grace later. That happens off the caller's path: the
	// worker is no longer idle, so the next run goes to a spare at once
	// rather than waiting for this one to stop.
	err := w.sendCancel(id)
	if st := w.staged; err == nil && st != nil {
		err = w.sendCancel(st.id) // its caller is gone too: the worker skips it
	}
	if err != nil {
		w.kill()
		return spi.Report{}, ctx.Err()
	}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		p.stopCancelled(ctx, w, id, timing.Grace, req.Request)
	}()
	return spi.Report{}, ctx.Err()
}

// stagedRun is a run sent to a worker ahead of its caller's call (its
// previous run's spi.RunRequest.Next), which the worker begins the moment
// the run before it ends: start is when that run's result came, zero until
// then. The caller's next call takes it over when it asks for the same run
// (runOn); any other use of the worker stops it first (unstage).
type stagedRun struct {
	id    uint64
	req   spi.RunRequest
	start time.Time // when the run before it ended, zero until then
}

// is reports whether the staged run is req, begun: sent ahead as req's
// run, and the run before it ended (a run whose predecessor was cancelled
// is nobody's).
func (st *stagedRun) is(req spi.RunRequest) bool {
	a := st.req
	if st.start.IsZero() || a.Script != req.Script || a.InputJSON != req.InputJSON || a.Limits != req.Limits || a.CaptureLogs != req.CaptureLogs {
		return false
	}
	if (a.Replay == nil) != (req.Replay == nil) {
		return false
	}
	return a.Replay == nil || *a.Replay == *req.Replay
}

// send writes req's run frame to w and returns its id; or, sending
// nothing, the answer for a run too large for a worker.
func (p *Pool) send(w *proc, req spi.RunRequest) (id uint64, tooLarge *spi.Report, err error) {
	same := w.sent && w.sentScript == req.Script
	w.wbuf = appendRun(startFrame(w.wbuf, frameRun), w.nextID+1, req, same)
	size := len(w.wbuf) - frameHeader
	if same {
		size += len(req.Script) // what the frame would carry without the worker's copy
	}
	if size > w.maxFrame {
		return 0, &spi.Report{Outcome: spi.Infrastructure(fmt.Sprintf(
			"the script and input (%d bytes) exceed what a worker accepts for a memory maximum of %d bytes",
			size, p.opts.Engine.MaxMemoryBytes))}, nil
	}
	if err := sendFrame(w.conn, w.wbuf); err != nil {
		return 0, nil, fmt.Errorf("sending the run: %w", err)
	}
	w.nextID++
	w.sentScript, w.sent = req.Script, true
	if cap(w.wbuf) > 1<<20 {
		w.wbuf = nil // do not keep a large script's buffer for the worker's life
	}
	return w.nextID, nil, nil
}

// unstage stops w's staged run, which nobody asked for, and waits for its
// answer, at most a grace, which it drops; false when it did not come or
// said the worker retires (w is killed, and the caller takes another).
func (p *Pool) unstage(ctx context.Context, w *proc) bool {
	st := w.staged
	w.staged = nil
	if err := w.sendCancel(st.id); err != nil {
		w.kill()
		return false
	}
	t := time.NewTimer(p.opts.Engine.HardKillGrace)
	defer t.Stop()
	select {
	case r := <-w.results:
		if r.id != st.id {
			break
		}
		p.countCompiled(w, r.compiled)
		if !r.retire {
			return true
		}
		p.log.LogAttrs(ctx, hardKillLevel, retiredMessage,
			logline.Attrs(hardKillLine{Event: HardKillEvent, PID: w.pid})...)
		p.kills.Add(1)
	case <-w.readDone:
	case <-t.C:
		p.killStuck(ctx, w, st.req.Request, true)
	}
	w.kill()
	return false
}

// stopCancelled waits, at most grace, for the cancelled run id of w to
// stop, and returns w to the idle workers when it did; else it kills w.
func (p *Pool) stopCancelled(ctx context.Context, w *proc, id uint64, grace time.Duration, req spi.Request) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case r := <-w.results:
		if _, err := p.finish(ctx, w, id, r); err != nil && !errors.Is(err, ctx.Err()) {
			p.log.Warn("a cancelled run's result", "err", err)
		}
	case <-w.readDone:
		w.kill()
	case <-t.C:
		p.killStuck(ctx, w, req, true)
	}
}

// countCompiled adds to the pool's counts of kept compiled scripts what
// w's have grown by since its last result: w's counts are its engine's
// since it started, so that a result lost with its worker loses nothing
// of the counts before it.
func (p *Pool) countCompiled(w *proc, now quickjs.CompiledScriptStats) {
	grown := func(now, was uint64) uint64 {
		if now < was {
			return 0
		}
		return now - was
	}
	p.compiledMu.Lock()
	p.compiled.Hits += grown(now.Hits, w.compiled.Hits)
	p.compiled.Misses += grown(now.Misses, w.compiled.Misses)
	p.compiled.Evictions += grown(now.Evictions, w.compiled.Evictions)
	w.compiled = now
	p.compiledMu.Unlock()
}

// CompiledScripts is what the workers' kept compiled scripts did so far,
// all the workers' together, those ended included.
func (p *Pool) CompiledScripts() quickjs.CompiledScriptStats {
	p.compiledMu.Lock()
	defer p.compiledMu.Unlock()
	return p.compiled
}

// finish turns a result frame into the run's result and returns w to the
// idle workers unless it retires.
func (p *Pool) finish(ctx context.Context, w *proc, id uint64, r resultFrame) (spi.Report, error) {
	if r.id != id {
		w.kill()
		return spi.Report{Outcome: spi.Infrastructure(fmt.Sprintf("the sandbox worker answered run %d for run %d", r.id, id))}, nil
	}
	p.countCompiled(w, r.compiled)
	if r.retire {
		p.log.LogAttrs(ctx, hardKillLevel, retiredMessage,
			logline.Attrs(hardKillLine{Event: HardKillEvent, PID: w.pid})...)
		p.kills.Add(1)
		w.kill()
	} else {
		p.idle.put(w)
	}
	if r.status == resultCancelled {
		if err := ctx.Err(); err != nil {
			return spi.Report{}, err
		}
		return spi.Report{}, context.Canceled
	}
	if err := ctx.Err(); err != nil {
		return spi.Report{}, err // cancellation wins over whatever the run produced
	}
	return spi.Report{Outcome: r.outcome, Logs: r.logs, Usage: r.usage, EngineFault: r.fault}, nil
}

// killStuck is the hard kill: w's run did not stop one grace after its
// deadline (or its cancellation), so it is inside one long native call that
// never polls. The worker holds nothing but that guest. The line carries
// what ties it to its evaluation: the request's trace and id (from ctx) and
// the script's hash.
func (p *Pool) killStuck(ctx context.Context, w *proc, req spi.Request, cancelled bool) {
	w.kill()
	p.kills.Add(1)
	p.log.LogAttrs(ctx, hardKillLevel, killedMessage, logline.Attrs(hardKillLine{
		Event: HardKillEvent, PID: w.pid,
		OfScript:  logline.OfScript{ScriptSHA256: contentref.RefOf([]byte(req.Script)).String()},
		WallClock: req.Limits.WallClock.String(), Grace: p.opts.Engine.HardKillGrace.String(), Cancelled: &cancelled,
	})...)
}

// died is the answer for a run whose worker died under it: an
// infrastructure outcome (retryable) that says how it ended.
func (p *Pool) died(w *proc, cause error) (spi.Report, error) {
	w.kill()
	<-w.exited
	if cause == nil {
		cause = errors.New("the channel closed")
	}
	err := w.describeExit(fmt.Errorf("the sandbox worker process died during the run: %w", cause))
	p.log.Error("a sandbox worker died during a run", "pid", w.pid, "err", err.Error())
	return spi.Report{Outcome: spi.Infrastructure(err.Error())}, nil
}
