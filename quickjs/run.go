package quickjs

import (
	"context"
	"crypto/sha256"
	"fmt"
	mathrand "math/rand/v2"
	"runtime"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// A run: the request checked, an instance taken, the script run in it
// under the watchdog, and what it used.

// Evaluate runs one script. It implements spi.Backend.
func (e *Engine) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	r, err := e.Run(ctx, spi.RunRequest{Request: req})
	return r.Outcome, err
}

// Run evaluates req like Evaluate and reports it whole (spi.Reporter): the
// console output when req asks for it (at most 64 KiB, truncated with a
// marker), and what the run used.
func (e *Engine) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	if err := ctx.Err(); err != nil {
		return spi.Report{}, err
	}
	start := time.Now()
	rep := func(o spi.Outcome) spi.Report {
		return spi.Report{Outcome: o, Usage: e.usage(req.Limits, start, nil, execResult{end: time.Now()})}
	}
	if msg := e.checkLimits(req.Limits); msg != "" {
		return rep(spi.Infrastructure(msg)), nil
	}
	if int64(len(req.InputJSON)) > req.Limits.MemoryBytes {
		// The parsed input cannot be smaller than a fraction of its text; an
		// input longer than the whole limit cannot fit.
		return rep(spi.InputTooLarge()), nil
	}
	if int64(len(req.Script)) > e.cfg.maxMemory {
		return rep(spi.Infrastructure(fmt.Sprintf(
			"script of %d bytes exceeds the engine's memory maximum of %d bytes", len(req.Script), e.cfg.maxMemory))), nil
	}
	if err := e.compile(ctx); err != nil {
		if ctx.Err() != nil {
			return spi.Report{}, ctx.Err()
		}
		return rep(spi.Infrastructure(err.Error())), nil
	}
	if !e.begin() {
		return rep(spi.Infrastructure(ErrClosed.Error())), nil
	}
	in, err := e.take(ctx)
	if err != nil {
		e.end()
		if ctx.Err() != nil {
			return spi.Report{}, ctx.Err()
		}
		return rep(spi.Infrastructure(err.Error())), nil
	}
	return e.runIn(ctx, in, req, start)
}

// usage is what a run that began at start used: the phases its guest
// marked (none when it never reached the guest, st nil), its CPU time and
// its peak heap.
func (e *Engine) usage(l spi.Limits, start time.Time, st *runState, r execResult) spi.Usage {
	u := spi.Usage{CPU: r.cpu, CPUBudgetUsed: r.raw.polls, CPUBudget: e.cfg.cpuBudget,
		PeakMemoryBytes: int64(r.raw.peak), MemoryLimitBytes: l.MemoryBytes}
	// Each phase ends where the next begins; a phase the guest never
	// reached (an input it could not parse, a throw) takes no time.
	end := r.end
	if st == nil || end.IsZero() {
		u.Setup = max(end.Sub(start), 0)
		return u
	}
	run, serialise := st.marks[markRun], st.marks[markSerialise]
	switch {
	case run.IsZero():
		u.Setup = end.Sub(start)
	case serialise.IsZero():
		u.Setup, u.Run = run.Sub(start), end.Sub(run)
	default:
		u.Setup, u.Run, u.Serialise = run.Sub(start), serialise.Sub(run), end.Sub(serialise)
	}
	// the compile precedes the input's parse: the set-up is the rest
	u.Compile = min(r.compile, u.Setup)
	u.Setup -= u.Compile
	return u
}

func (e *Engine) checkLimits(l spi.Limits) string {
	switch {
	case l.WallClock <= 0:
		return fmt.Sprintf("invalid limits: wall clock %v must be positive", l.WallClock)
	case l.MemoryBytes <= 0:
		return fmt.Sprintf("invalid limits: memoryBytes %d must be positive", l.MemoryBytes)
	case l.MemoryBytes > e.cfg.maxMemory:
		return fmt.Sprintf("invalid limits: memoryBytes %d exceeds the engine maximum of %d", l.MemoryBytes, e.cfg.maxMemory)
	}
	if err := CheckMemoryLimit(l.MemoryBytes); err != nil {
		return "invalid limits: memoryBytes " + err.Error()
	}
	return ""
}

type execResult struct {
	raw rawResult
	err error
	end time.Time     // when the guest had returned and its result was copied out
	cpu time.Duration // the processor time of the guest's call
	// compile is the time the script's compile took
	compile time.Duration
}

// exec runs the request's script on its input in the instance, which holds
// the set-up image: from the script's kept image when the engine has one
// (restored into the instance), else compiled there first, and its image
// kept for the next runs. Either way the run starts from the same bytes.
func (e *Engine) exec(ctx context.Context, in *instance, req spi.RunRequest, seed uint64) execResult {
	var r execResult
	var key scriptKey
	if e.scripts != nil {
		key = e.keyOf(req.Script)
		if img := e.scripts.get(key); img != nil {
			err := img.restore(in)
			e.scripts.release(img)
			if err == nil {
				r.raw, r.err = in.runCompiled(ctx, req.InputJSON, req.Limits.MemoryBytes, e.cfg.cpuBudget, req.CaptureLogs, seed)
				return r
			}
			// restore writes nothing unless the memory could grow to hold
			// the image: the instance still holds the set-up image
			e.cfg.logger.Warn("quickjs: restoring a compiled script failed; compiling it", "err", err)
		}
	}
	start := time.Now()
	status, err := in.compileScript(ctx, req.Script, e.cfg.maxMemory)
	if err != nil {
		r.compile = time.Since(start)
		r.raw, r.err = in.failed(ctx, err)
		return r
	}
	// A compile that ran out of the engine's whole memory is not kept: its
	// image would be as large. The next run compiles again, and fails the
	// same.
	if e.scripts != nil && status != compiledOOM {
		if img, err := e.image.captureScript(in); err != nil {
			e.cfg.logger.Warn("quickjs: keeping a compiled script failed; its next run compiles again", "err", err)
		} else {
			e.scripts.put(key, img)
		}
	}
	// the compile's dead frames: the run starts, as a restored one does,
	// from a stack of zeros
	if mem, ok := in.mem.Read(0, e.image.stack); ok {
		e.image.clearStack(mem)
	}
	r.compile = time.Since(start)
	r.raw, r.err = in.runCompiled(ctx, req.InputJSON, req.Limits.MemoryBytes, e.cfg.cpuBudget, req.CaptureLogs, seed)
	return r
}

// runIn runs the request in the instance under the watchdog.
func (e *Engine) runIn(ctx context.Context, in *instance, req spi.RunRequest, start time.Time) (spi.Report, error) {
	st := &runState{deadline: time.Now().Add(req.Limits.WallClock)}
	st.trap = e.cfg.trapForTests != nil && e.cfg.trapForTests(req.Script)
	seed := mathrand.Uint64()
	if r := req.Replay; r != nil {
		d := r.Determinism(req.Script, req.InputJSON)
		seed, st.frozen, st.now = d.Seed, true, d.Now.UnixNano()
	}
	timing := e.Timing(req.Limits.WallClock)
	var kill *killTimer
	if e.cfg.procKill {
		k, err := newKillTimer()
		if err == nil {
			if err = k.arm(timing.Backstop()); err != nil {
				k.release()
			}
		}
		if err != nil {
			in.close()
			e.end()
			return spi.Report{Outcome: spi.Infrastructure(err.Error()), Usage: e.usage(req.Limits, start, nil, execResult{end: time.Now()})}, nil
		}
		kill = k
	}
	callCtx, cancelCall := context.WithCancel(context.WithValue(context.Background(), runStateKey{}, st))
	stopAfter := context.AfterFunc(ctx, func() { st.cancelled.Store(true) })

	done := make(chan execResult, 1)
	go func() {
		cpu := startCPUClock()
		r := e.exec(callCtx, in, req, seed)
		r.end, r.cpu = time.Now(), cpu.elapsed()
		if kill != nil {
			kill.release() // only once the guest has really returned
		}
		done <- r
		// The send readied the caller onto this goroutine's processor:
		// yield, so that it takes the result now, not once another thread
		// wakes to steal it.
		runtime.Gosched()
		e.discard(in, r.err != nil) // off the request path: the result is delivered
		e.end()
	}()

	finish := func(r execResult) (spi.Report, error) {
		stopAfter()
		cancelCall()
		rep, err := e.toResult(ctx, r, st, req.Limits.MemoryBytes)
		rep.Usage = e.usage(req.Limits, start, st, r)
		return rep, err
	}

	hardKill := time.NewTimer(timing.HardKill())
	defer hardKill.Stop()
	var cancelled bool
	select {
	case r := <-done:
		return finish(r)
	case <-ctx.Done():
		cancelled = true
		// the guest notices at its next interrupt poll; give it the grace
		grace := time.NewTimer(e.cfg.grace)
		defer grace.Stop()
		select {
		case <-done:
			stopAfter()
			cancelCall()
			return spi.Report{}, ctx.Err()
		case <-grace.C:
		}
	case <-hardKill.C:
	}

	// The run outlived its deadline (or its cancellation) by the grace: it is
	// stuck where the interrupt handler cannot reach.
	stopAfter()
	cancelCall() // with HardKillForTests this terminates the guest
	overrun := time.Since(st.deadline)
	if cancelled {
		overrun = e.cfg.grace
	}
	if e.cfg.hardKill == HardKillForTests {
		select {
		case <-done:
		case <-time.After(e.cfg.grace):
			e.abandon(done, StuckRun{Overrun: overrun, Cancelled: cancelled})
		}
	} else {
		e.abandon(done, StuckRun{Overrun: overrun, Cancelled: cancelled})
	}
	if cancelled {
		return spi.Report{}, ctx.Err()
	}
	// the guest still runs: what it used so far is not the host's to read
	u := spi.Usage{Run: time.Since(start), CPUBudget: e.cfg.cpuBudget, MemoryLimitBytes: req.Limits.MemoryBytes}
	return spi.Report{Outcome: spi.LimitHit(spi.LimitWallClock), Usage: u}, nil
}

// abandon leaves a stuck run to finish on its own and reports it.
func (e *Engine) abandon(done <-chan execResult, s StuckRun) {
	e.stuck.Add(1)
	go func() {
		<-done
		e.stuck.Add(-1)
	}()
	go e.cfg.onStuck(s)
}

// lastKey is the key of a script: the script's text and its sha256.
type lastKey struct {
	script string
	key    scriptKey
}

// keyOf is script's key, its sha256: the last one computed when script is
// the same text as the last script's, which the inputs of a batch are (and
// for which a worker hands over the very string, compared at once), since
// hashing a 100 KB script costs a run a tenth of a millisecond.
func (e *Engine) keyOf(script string) scriptKey {
	if k := e.lastKey.Load(); k != nil && k.script == script {
		return k.key
	}
	k := &lastKey{script: script, key: sha256.Sum256([]byte(script))}
	e.lastKey.Store(k)
	return k.key
}
