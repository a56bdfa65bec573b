package quickjs

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// ErrClosed is returned by an Engine after Close.
var ErrClosed = errors.New("quickjs: engine closed")

// Engine runs scripts, each run from a memory image that no run writes: the
// set-up's, in a wasm instance reset to it after every run (image.go), with
// the script's own compiled image written over it when an earlier run kept
// one (scripts.go). It is safe for concurrent use. It implements
// spi.Backend, spi.Warmer and spi.Closer.
type Engine struct {
	cfg config
	rt  wazero.Runtime

	compileOnce  sync.Once
	compiledDone chan struct{} // closed once compiled, image and compileErr are set
	compiled     wazero.CompiledModule
	image        *memImage // linear memory after the set-up (captureImage)
	compileErr   error

	pool     chan *instance
	stop     chan struct{}
	stopOnce sync.Once
	filling  sync.WaitGroup
	closed   atomic.Bool

	stuck atomic.Int64 // runs abandoned by the watchdog and still running

	mem *memoryPool // the guests' linear memories, recycled

	// scripts keeps what each script's compile left (scripts.go); nil
	// when the engine keeps none
	scripts *scriptCache

	// runs counts guest calls in progress; Close waits for them, because
	// closing the runtime frees the memory a running guest is using.
	runsMu sync.Mutex
	runs   int
	idle   chan struct{} // closed when runs drops to zero after Close
	// runEnded has a token when a run ended: fill waits for it, while the
	// pool still has an instance, rather than build beside a run.
	runEnded chan struct{}
	// used holds instances whose run ended, for fill to reset; nil
	// without a pool.
	used chan *instance
	// recycled counts the instances reset for another run.
	recycled atomic.Int64
}

// running is the number of runs in progress.
func (e *Engine) running() int {
	e.runsMu.Lock()
	defer e.runsMu.Unlock()
	return e.runs
}

// begin registers a run; false once the engine is closed.
func (e *Engine) begin() bool {
	e.runsMu.Lock()
	defer e.runsMu.Unlock()
	if e.closed.Load() {
		return false
	}
	e.runs++
	return true
}

func (e *Engine) end() {
	e.runsMu.Lock()
	defer e.runsMu.Unlock()
	e.runs--
	select {
	case e.runEnded <- struct{}{}:
	default:
	}
	if e.runs == 0 && e.idle != nil {
		close(e.idle)
		e.idle = nil
	}
}

var (
	_ spi.Backend = (*Engine)(nil)
	_ spi.Warmer  = (*Engine)(nil)
	_ spi.Closer  = (*Engine)(nil)
)

// New creates an engine. Compilation of the embedded module happens on Warm or
// on the first evaluation, whichever comes first.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if got, want := WasmSHA256(), recordedSHA256(); got != want {
		return nil, fmt.Errorf("quickjs: embedded sandbox.wasm has sha256 %s, sandbox.wasm.sha256 records %s", got, want)
	}
	rt, err := newRuntime(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	if cfg.onStuck == nil {
		log := cfg.logger
		cfg.onStuck = func(s StuckRun) {
			log.Error("quickjs: run did not stop; abandoned by the watchdog",
				"overrun", s.Overrun.String(), "cancelled", s.Cancelled)
		}
	}
	e := &Engine{
		cfg:      cfg,
		rt:       rt,
		pool:     make(chan *instance, cfg.poolSize),
		mem:      newMemoryPool(memoryKeep),
		stop:     make(chan struct{}),
		runEnded: make(chan struct{}, 1),
	}
	if cfg.poolSize > 0 {
		e.used = make(chan *instance, cfg.poolSize+1)
	}
	if cfg.compiledBytes > 0 {
		e.scripts = newScriptCache(cfg.compiledBytes)
	}
	return e, nil
}

// newRuntime builds the wazero runtime with the guest's memory cap and our
// host functions; withCache selects the compilation cache when configured.
func newRuntime(ctx context.Context, cfg config, withCache bool) (wazero.Runtime, error) {
	pages := uint32(LinearMemoryBytes(cfg.maxMemory) / wasmPage)
	rc := wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(pages).
		WithCloseOnContextDone(cfg.hardKill == HardKillForTests)
	if withCache && cfg.cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("quickjs: compilation cache %s: %w", cfg.cacheDir, err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	instantiate := instantiateHost
	if cfg.trapForTests != nil {
		instantiate = instantiateTrappingHost
	}
	if err := instantiate(ctx, rt, poll); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("quickjs: host functions: %w", err)
	}
	return rt, nil
}

// Capabilities declares what the engine enforces (docs/spi.md,
// "Capabilities"). The wall clock is hard when a run that never reaches the
// interrupt handler is still stopped: by wazero's context-done termination,
// or by the process-kill backstop. With the Go watchdog alone it is soft.
func (e *Engine) Capabilities() spi.Capabilities {
	return DeclaredCapabilities(e.cfg.cpuBudget, e.cfg.hardKill == HardKillForTests || e.cfg.procKill)
}

// DeclaredCapabilities is what QuickJS runs with the given CPU budget
// enforce; hardWallClock says whether a run stuck where the interrupt
// handler cannot reach is still stopped at its deadline (by whatever holds
// the engine: context-done termination, or the end of the process).
func DeclaredCapabilities(cpuBudget uint64, hardWallClock bool) spi.Capabilities {
	wall := spi.WallClockSoft
	if hardWallClock {
		wall = spi.WallClockHard
	}
	return spi.Capabilities{
		Language:    "javascript",
		Network:     spi.NetworkNone,
		WallClock:   wall,
		Memory:      true,
		CPU:         cpuBudget > 0,
		FreshPerRun: true,
	}
}

// MaxMemoryBytes is the largest memory limit a request may ask for.
func (e *Engine) MaxMemoryBytes() int64 { return e.cfg.maxMemory }

// Timing is the clock of a run with this wall clock: a run that does not
// stop is abandoned (watchdog) or terminated (context done) one grace after
// its deadline (spi.Timed).
func (e *Engine) Timing(wallClock time.Duration) spi.Timing {
	return spi.EngineTiming(wallClock, e.cfg.grace)
}

// Ready is the number of instances waiting in the pool.
func (e *Engine) Ready() int { return len(e.pool) }

// PoolSize is the number of instances the engine keeps ready.
func (e *Engine) PoolSize() int { return e.cfg.poolSize }

// CompiledScripts is what the engine's kept compiled scripts did so far;
// all zero for an engine that keeps none.
func (e *Engine) CompiledScripts() CompiledScriptStats {
	if e.scripts == nil {
		return CompiledScriptStats{}
	}
	return e.scripts.counts()
}

// StuckRuns is the number of abandoned runs still running.
func (e *Engine) StuckRuns() int64 { return e.stuck.Load() }

// Warm compiles the engine (once) and starts filling the pool of fresh
// instances.
func (e *Engine) Warm(ctx context.Context) error {
	if e.closed.Load() {
		return ErrClosed
	}
	return e.compile(ctx)
}

// compile compiles the engine once, for every caller. The compilation is
// the engine's, not the first caller's: it runs to its end without the
// caller's cancellation, so that a first request that gives up (a client
// gone, a deadline met on a busy machine) does not leave an engine that
// fails every later evaluation. A caller whose context ends meanwhile waits
// no longer and gets its context's error.
func (e *Engine) compile(ctx context.Context) error {
	e.compileOnce.Do(func() {
		e.compiledDone = make(chan struct{})
		go func() {
			defer close(e.compiledDone)
			e.compileNow(context.WithoutCancel(ctx))
		}()
	})
	select {
	case <-e.compiledDone:
		return e.compileErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// compileNow compiles the module, checks its exports and captures the
// set-up's memory image, then starts filling the pool.
func (e *Engine) compileNow(ctx context.Context) {
	cm, err := e.rt.CompileModule(ctx, sandboxWasm)
	if err != nil && e.cfg.cacheDir != "" {
		// A cache that cannot serve this host (read-only and keyed for
		// other CPU features, say) must not stop the service: compile
		// without it.
		e.cfg.logger.Warn("quickjs: compiling through the cache failed; compiling without it",
			"dir", e.cfg.cacheDir, "err", err)
		var rt wazero.Runtime
		if rt, err = newRuntime(ctx, e.cfg, false); err == nil {
			_ = e.rt.Close(ctx)
			e.rt = rt
			cm, err = e.rt.CompileModule(ctx, sandboxWasm)
		}
	}
	if err == nil {
		err = checkExports(cm)
	}
	var image *memImage
	if err == nil {
		image, err = captureImage(ctx, e.rt, cm, e.mem)
	}
	if err != nil {
		e.compileErr = fmt.Errorf("quickjs: compile engine: %w", err)
		return
	}
	e.compiled, e.image = cm, image
	if e.cfg.poolSize > 0 && !e.closed.Load() {
		e.filling.Add(1)
		go e.fill()
	}
}

// fill keeps the pool full of instances ready for a run, resetting the
// ones whose run ended and building new ones, until the engine closes. It
// keeps an OS thread of its own (the goroutine never unlocks it, so the
// thread ends with it): the thread that delivered a result then has nothing
// left to do, and a caller woken onto the same core runs at once instead of
// behind the reset of a used instance. That holds on one processor too (a
// worker), where the thread's own wake-up is off the answer's path.
func (e *Engine) fill() {
	defer e.filling.Done()
	runtime.LockOSThread()
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-e.stop:
			return
		default:
		}
		e.recycleUsed()
		if len(e.pool) == cap(e.pool) {
			select {
			case in := <-e.used:
				e.recycle(in)
			case <-e.stop:
				return
			}
			continue
		}
		// While the pool still holds an instance, build the next one only
		// when no run is in progress: on two cores a build beside a run
		// slows the run and its response. A used instance is reset at
		// once: that costs a fraction of a build.
		for len(e.pool) > 0 && e.running() > 0 {
			select {
			case in := <-e.used:
				e.recycle(in)
			case <-e.runEnded:
			case <-e.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		if len(e.pool) == cap(e.pool) {
			continue
		}
		in, err := newInstance(context.Background(), e.rt, e.compiled, e.mem, e.image)
		if err != nil {
			e.cfg.logger.Error("quickjs: pre-building an instance failed", "err", err)
			select {
			case <-e.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		e.pooled(in)
	}
}

// pooled puts a ready instance in the pool, or closes it when the pool is
// full (fill is its one producer, so only a closing engine's is).
func (e *Engine) pooled(in *instance) {
	select {
	case e.pool <- in:
	default:
		in.close()
	}
}

// recycle resets an instance whose run ended to the set-up image and pools
// it; one that cannot serve again is closed.
func (e *Engine) recycle(in *instance) {
	if e.closed.Load() || !e.image.reset(in) {
		in.close()
		return
	}
	e.recycled.Add(1)
	e.pooled(in)
}

// discard hands an instance whose run ended to fill, to be reset and
// pooled, or closes it now when there is no pool or fill is behind; an
// instance whose guest's call failed (a trap, a termination) is closed:
// its state is not the shim's to vouch for.
func (e *Engine) discard(in *instance, failed bool) {
	if failed || e.used == nil {
		in.close()
		return
	}
	select {
	case e.used <- in:
	default:
		in.close()
	}
}

// recycleUsed resets the instances handed to fill so far.
func (e *Engine) recycleUsed() {
	for {
		select {
		case in := <-e.used:
			e.recycle(in)
		default:
			return
		}
	}
}

// closeUsed closes the instances handed to fill so far.
func (e *Engine) closeUsed() {
	for {
		select {
		case in := <-e.used:
			in.close()
		default:
			return
		}
	}
}

// take returns an instance that holds the set-up image: a pooled one when
// the pool has one, else one built now.
func (e *Engine) take(ctx context.Context) (*instance, error) {
	select {
	case in := <-e.pool:
		return in, nil
	default:
	}
	return newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
}

// Close stops the pool and releases the runtime. Runs in progress end with an
// infrastructure outcome or their own result.
func (e *Engine) Close(ctx context.Context) error {
	e.runsMu.Lock()
	if !e.closed.CompareAndSwap(false, true) {
		e.runsMu.Unlock()
		return nil
	}
	var idle chan struct{}
	if e.runs > 0 {
		idle = make(chan struct{})
		e.idle = idle
	}
	e.runsMu.Unlock()
	e.stopOnce.Do(func() { close(e.stop) })
	e.filling.Wait()
	for {
		select {
		case in := <-e.pool:
			in.close()
			continue
		default:
		}
		break
	}
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			// A run is still inside the guest (stuck in native code):
			// closing the runtime would free memory it is using. Leave it
			// to the process's end.
			return fmt.Errorf("quickjs: close: %d run(s) still running; the runtime is left open: %w", e.StuckRuns(), ctx.Err())
		}
	}
	e.closeUsed()
	for {
		select {
		case in := <-e.pool:
			in.close()
			continue
		default:
		}
		break
	}
	err := e.rt.Close(ctx)
	e.mem.close()
	if e.scripts != nil {
		e.scripts.close()
	}
	return err
}

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
		key = sha256.Sum256([]byte(req.Script))
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

// returnHint follows the parser's message for a return outside a function.
const returnHint = ": a script is global code, and its result is the value of its last expression: write `input.a`, not `return input.a`"

// toResult maps the shim's status to the SPI's outcome vocabulary, for the
// run st under the memory limit memoryBytes.
func (e *Engine) toResult(ctx context.Context, r execResult, st *runState, memoryBytes int64) (spi.Report, error) {
	if err := ctx.Err(); err != nil {
		return spi.Report{}, err // cancellation wins over whatever the run produced
	}
	if r.err != nil {
		var exit *sys.ExitError
		if errors.As(r.err, &exit) {
			return spi.Report{Outcome: spi.LimitHit(spi.LimitWallClock)}, nil
		}
		if errors.Is(r.err, errGuestMemory) {
			return spi.Report{Outcome: spi.InputTooLarge()}, nil
		}
		// Anything else is the guest's own failure (a trap, or an answer
		// outside its memory): the engine was broken from inside by the
		// script it ran, an engine fault. The first line only: wazero
		// appends the guest's stack trace.
		trap, _, _ := strings.Cut(r.err.Error(), "\n")
		return spi.Report{Outcome: spi.Infrastructure("quickjs: engine failed: " + trap), EngineFault: trap}, nil
	}
	raw := r.raw
	res := spi.Report{Logs: string(raw.logs)}
	if late(raw, st) {
		res.Outcome = spi.LimitHit(spi.LimitWallClock)
		return res, nil
	}
	switch raw.status {
	case statusOK:
		res.Outcome = okValue(raw.result, memoryBytes)
	case statusThrew:
		var name *string
		if raw.hasName {
			n := string(raw.name)
			name = &n
		}
		msg := string(raw.result)
		if raw.compileError && name != nil && *name == "SyntaxError" && msg == "return not in a function" {
			// the commonest mistake a model makes: a script is global code,
			// and its result is the value of its last expression
			msg += returnHint
		}
		res.Outcome = spi.Threw(name, msg)
	case statusLimitCPU:
		res.Outcome = spi.LimitHit(spi.LimitCPU)
	case statusLimitMemory:
		res.Outcome = spi.LimitHit(spi.LimitMemory)
	case statusLimitWallClock:
		res.Outcome = spi.LimitHit(spi.LimitWallClock)
	case statusCancelled:
		// the caller's context was done when the guest polled; ctx.Err() is
		// checked above, so this is a context that ended without an error
		return spi.Report{}, context.Canceled
	case statusInputTooLarge:
		res.Outcome = spi.InputTooLarge()
	case statusInputInvalid:
		res.Outcome = spi.Infrastructure("quickjs: input is not valid JSON: " + string(raw.result))
	default:
		res.Outcome = spi.Infrastructure(fmt.Sprintf("quickjs: the shim failed with status %d", raw.status))
	}
	return res, nil
}

// late reports whether a run that ended with the script's own outcome, its
// value or its exception, ended once its deadline had passed: such a run is
// the wall-clock limit, as it would have been had the interrupt handler
// seen the deadline (docs/spi.md, "Timing"). A run ends so when its last
// stretch was native work that never polled (one long builtin) and that
// ended within the hard kill's grace; without this, whether a caller got a
// value late or the limit would depend on the speed of the machine. The
// time is the guest's own return, taken in the process where the deadline
// was set: nothing the host does around the run (a queue, the frames to a
// worker and back, copying the result out) counts against it. A limit the
// run hit stays that limit, and an input that did not fit stays
// inputTooLarge: the script never ran.
func late(raw rawResult, st *runState) bool {
	if raw.status != statusOK && raw.status != statusThrew || raw.returned.IsZero() {
		return false
	}
	return st.passed(raw.returned)
}

// okValue is the outcome of a run whose result JSON.stringify wrote as text,
// under the memory limit memoryBytes. The value is always the text
// JSON.stringify writes for an ordinary value (docs/spi.md, "Outcomes"), so
// that what a script returns is never text the effect refuses, which would
// pass the script's own value off as a failure of the service, and so that
// both routes answer one value for one script.
func okValue(text []byte, memoryBytes int64) spi.Outcome {
	deeper, canonical := jsontext.Stringified(text, spi.MaxValueDepth)
	if deeper {
		// JSON.stringify has no depth bound short of the stack, so a result
		// whose answer would be deeper than every JSON reader downstream
		// accepts is the script's own doing: a threw RangeError, as a cycle
		// is a TypeError.
		name := "RangeError"
		return spi.Threw(&name, fmt.Sprintf("the result nests deeper than %d levels: the answer around it would be deeper than the %d levels JSON readers accept",
			spi.MaxValueDepth, jsontext.MaxDepth))
	}
	if canonical {
		return spi.OK(text)
	}
	// JSON.stringify copies a JSON.rawJSON text as it is, and that text may
	// hold what no ordinary value gives: a lone surrogate as a character,
	// which is not UTF-8 and so not JSON text, or a number not in the form
	// JSON.stringify writes (1e1000, which JSON.parse reads as Infinity; -0;
	// a million digits), which the effect's round trip would rewrite and the
	// SPI route would pass on. Its value is the ordinary one JSON.parse makes
	// of the text, written as JSON.stringify writes that.
	out, over, err := jsontext.CanonicalWTF8(text, int(max(int64(len(text)), memoryBytes)))
	switch {
	case over:
		// Longer than the engine's own text and than the run's memory:
		// JSON.stringify would have run out of memory writing the ordinary
		// value (1e20 is 21 bytes where the raw text "1e20" is 4). The bound
		// also keeps the value within what a run can make (spi.MaxValueBytes).
		return spi.LimitHit(spi.LimitMemory)
	case err != nil:
		// Not JSON at all: the engine's fault, which the effect refuses as a
		// malformed outcome.
		return spi.OK(text)
	}
	return spi.OK(out)
}
