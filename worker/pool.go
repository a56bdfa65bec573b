package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// ErrClosed is returned by a Pool after Close.
var ErrClosed = errors.New("worker: pool closed")

// Options configure a Pool.
type Options struct {
	// Engine configures the engine inside every worker.
	Engine EngineOptions
	// Concurrent is how many runs may be in progress at once (each holds a
	// worker); Spares is how many more workers are kept ready, so that a
	// killed worker's successor is already warm.
	Concurrent, Spares int
	// Lockdown is what a worker does about its lock-down.
	Lockdown Lockdown
	// Executable and Args start a worker: by default this process's own
	// executable with Verb.
	Executable string
	Args       []string
	// Logger receives the pool's lines and the workers' relayed lines.
	Logger *slog.Logger
	// LogLevel is the workers' log level (debug, info, warn, error).
	LogLevel string
}

// Pool runs evaluations in worker processes, one run per worker at a time.
// It implements spi.Backend, spi.Warmer and spi.Closer.
//
// The hard kill is the pool's: a run that has not answered one grace after
// its deadline gets the wall-clock limit, and its worker is killed with
// SIGKILL. A spare, started ahead, takes the next run; a successor starts in
// the background. The server's own runtime never runs guest code.
type Pool struct {
	opts  Options
	log   *slog.Logger
	want  int
	hello hello
	// ownCache is a compilation cache the pool made for its workers when
	// none was configured (the first worker fills it, the others read it);
	// removed by Close.
	ownCache string

	idle *idleWorkers

	mu       sync.Mutex
	cond     *sync.Cond // signalled when live drops or the pool closes
	live     int        // workers started or starting, not yet exited
	all      map[*proc]struct{}
	closed   bool
	startErr error         // the last start's failure, nil after a success
	failed   chan struct{} // closed when startErr is set
	warm     chan struct{} // closed when the first worker is ready
	warmOnce sync.Once

	prot  atomic.Pointer[Protections]
	kills atomic.Int64
	// compiled sums what the workers' kept compiled scripts did
	compiledMu sync.Mutex
	compiled   quickjs.CompiledScriptStats
	stop       chan struct{}
	stopOnce   sync.Once
	done       sync.WaitGroup

	dispatched func(*proc) // tests: called once a run is sent to w
}

var (
	_ spi.Backend = (*Pool)(nil)
	_ spi.Warmer  = (*Pool)(nil)
	_ spi.Closer  = (*Pool)(nil)
)

// New validates opts and starts the pool's workers in the background; Warm
// waits for the first.
func New(opts Options) (*Pool, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Lockdown == "" {
		opts.Lockdown = LockdownRequired
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	var problems []error
	for _, c := range []struct {
		name string
		err  error
	}{
		{"Concurrent", CheckConcurrent(opts.Concurrent)},
		{"Spares", CheckSpares(opts.Spares)},
		{"Lockdown", opts.Lockdown.Check()},
		{"Engine.MaxMemoryBytes", quickjs.CheckMaxMemoryBytes(opts.Engine.MaxMemoryBytes)},
		{"Engine.PoolSize", quickjs.CheckPoolSize(opts.Engine.PoolSize)},
		{"Engine.HardKillGrace", quickjs.CheckHardKillGrace(opts.Engine.HardKillGrace)},
		{"Engine.CompiledScriptBytes", quickjs.CheckCompiledScriptBytes(opts.Engine.CompiledScriptBytes)},
	} {
		if c.err != nil {
			problems = append(problems, fmt.Errorf("%s %w", c.name, c.err))
		}
	}
	if err := errors.Join(problems...); err != nil {
		return nil, fmt.Errorf("worker: invalid options: %w", err)
	}
	if opts.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("worker: the service's own executable: %w", err)
		}
		opts.Executable = exe
	}
	if opts.Args == nil {
		opts.Args = []string{Verb}
	}
	p := &Pool{
		opts:   opts,
		log:    opts.Logger,
		want:   opts.Concurrent + opts.Spares,
		idle:   newIdleWorkers(opts.Concurrent + opts.Spares),
		all:    map[*proc]struct{}{},
		failed: make(chan struct{}),
		warm:   make(chan struct{}),
		stop:   make(chan struct{}),
	}
	p.cond = sync.NewCond(&p.mu)
	closeInheritedOnExec()
	if opts.Engine.CompilationCacheDir == "" {
		dir, err := os.MkdirTemp("", "sandbox-worker-cache-")
		if err != nil {
			return nil, fmt.Errorf("worker: a compilation cache for the workers: %w", err)
		}
		p.ownCache = dir
		opts.Engine.CompilationCacheDir = dir
	}
	p.hello = hello{Engine: opts.Engine, Lockdown: opts.Lockdown, LogLevel: opts.LogLevel}
	p.done.Add(1)
	go p.supervise()
	return p, nil
}

// supervise keeps want workers alive: it starts one at a time (so that the
// first fills the compilation cache that the others read), and starts a
// successor whenever one exits.
func (p *Pool) supervise() {
	defer p.done.Done()
	backoff := 50 * time.Millisecond
	for {
		p.mu.Lock()
		for p.live >= p.want && !p.closed {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		p.live++
		p.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		go func() {
			select {
			case <-p.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		start := time.Now()
		w, err := spawn(ctx, p.opts.Executable, p.opts.Args, p.hello, p.log)
		cancel()
		p.mu.Lock()
		if err != nil {
			p.live--
			p.startErr = err
			select {
			case <-p.failed:
			default:
				close(p.failed)
			}
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return
			}
			p.log.Error("a sandbox worker failed to start", "err", err, "retryIn", backoff.String())
			select {
			case <-p.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		if p.startErr != nil {
			p.startErr = nil
			p.failed = make(chan struct{})
		}
		if p.closed {
			p.mu.Unlock()
			w.kill()
			<-w.exited
			p.mu.Lock()
			p.live--
			p.mu.Unlock()
			return
		}
		p.all[w] = struct{}{}
		p.mu.Unlock()
		first := p.prot.Swap(&w.prot) == nil
		p.log.Debug("sandbox worker ready", "pid", w.pid, "took", time.Since(start).String())
		if first {
			p.log.Info("sandbox workers: guests run in locked-down worker processes",
				"protections", w.prot.String(), "lockdown", string(p.opts.Lockdown), "workers", p.want)
		}
		p.done.Add(1)
		go p.reap(w)
		p.idle.put(w)
		p.warmOnce.Do(func() { close(p.warm) })
	}
}

// reap waits for a worker's end and makes room for its successor. An end
// the pool asked for is no news: a kill is logged where it was decided, and
// a worker that stopped cleanly when the pool closed is summed up by Close.
// Any other end (a crash while idle, a non-zero exit when asked to stop) is
// a warning, with how it ended.
func (p *Pool) reap(w *proc) {
	defer p.done.Done()
	<-w.exited
	switch {
	case w.killed.Load():
	case w.retiring.Load() && w.waitErr == nil:
		p.log.Debug("a sandbox worker stopped", "pid", w.pid)
	default:
		p.log.Warn("a sandbox worker exited", "pid", w.pid, "err", w.describeExit(errors.New("exited")).Error())
	}
	p.mu.Lock()
	delete(p.all, w)
	p.live--
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Warm waits until the first worker is ready, or its start failed.
func (p *Pool) Warm(ctx context.Context) error {
	for {
		p.mu.Lock()
		failed, closed := p.failed, p.closed
		p.mu.Unlock()
		if closed {
			return ErrClosed
		}
		select {
		case <-p.warm:
			return nil
		case <-failed:
			p.mu.Lock()
			err := p.startErr
			p.mu.Unlock()
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Timing is the clock of a run with this wall clock: the pool kills a
// worker whose run has not stopped one HardKillGrace past it (spi.Timed).
func (p *Pool) Timing(wallClock time.Duration) spi.Timing {
	return spi.EngineTiming(wallClock, p.opts.Engine.HardKillGrace)
}

// Capabilities declares what runs in the pool's workers enforce. The wall
// clock is hard: a run that does not stop ends with its worker.
func (p *Pool) Capabilities() spi.Capabilities {
	return quickjs.DeclaredCapabilities(p.opts.Engine.CPUBudget, true)
}

// MaxMemoryBytes is the largest memory limit a run may ask for.
func (p *Pool) MaxMemoryBytes() int64 { return p.opts.Engine.MaxMemoryBytes }

// Protections are those of the workers started so far (the latest one's);
// before the first has started, only Process is known.
func (p *Pool) Protections() Protections {
	if pr := p.prot.Load(); pr != nil {
		return *pr
	}
	return Protections{Process: true}
}

// Healthy is nil while workers start: the last start succeeded (a run
// that finds no ready worker waits for one). It is the last start's failure
// otherwise.
func (p *Pool) Healthy() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.startErr != nil {
		return fmt.Errorf("sandbox workers fail to start: %w", p.startErr)
	}
	return nil
}

// Kills is how many workers the pool has killed for runs that did not stop.
func (p *Pool) Kills() int64 { return p.kills.Load() }

// Close stops starting workers and ends every worker: idle ones by closing
// their channel, any still running at ctx's end by SIGKILL. Call it once
// no evaluation is in progress (after the HTTP server's drain).
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.cond.Broadcast()
	procs := make([]*proc, 0, len(p.all))
	for w := range p.all {
		procs = append(procs, w)
	}
	p.mu.Unlock()
	p.stopOnce.Do(func() { close(p.stop) })
	start := time.Now()
	var wg sync.WaitGroup
	var killed atomic.Int32
	for _, w := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !w.retire(ctx) {
				killed.Add(1)
			}
		}()
	}
	wg.Wait()
	p.done.Wait()
	// an orderly stop, which every scale-down makes: INFO, once
	if n := killed.Load(); n > 0 {
		p.log.Warn("sandbox workers stopped; some did not stop in time and were killed",
			"workers", len(procs), "killed", n, "took", time.Since(start).String())
	} else {
		p.log.Info("sandbox workers stopped", "workers", len(procs), "took", time.Since(start).String())
	}
	if p.ownCache != "" {
		_ = os.RemoveAll(p.ownCache)
	}
	return nil
}
