package quickjs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

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
	// lastKey is the last script's key (keyOf)
	lastKey atomic.Pointer[lastKey]

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
