package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// ExitRetired is a worker's exit code after its engine abandoned a run that
// was still inside the guest (the server normally kills it first).
const ExitRetired = 70

// Main is the worker verb: it serves runs on fd 3 until the server closes
// the channel, and returns the process's exit code. Its log lines go to
// standard error, which the server reads. extra options apply to its
// engine after those the server's hello gives: the service's binary passes
// none; a test binary that is its own worker may break its engine
// (quickjs.WithTrapForTests).
func Main(extra ...quickjs.Option) int { return mainWith(nil, extra...) }

// mainWith is Main; tests pass afterLockdown to probe the locked-down
// worker from inside.
func mainWith(afterLockdown func(*slog.Logger), extra ...quickjs.Option) int {
	log := jsonLogger(os.Stderr, slog.LevelInfo)
	// Non-blocking before os.NewFile, so that reads wait in Go's network
	// poller rather than in a thread blocked in read, whose return needs a
	// hand-off to a processor (RATIONALE.md, "A worker's run path").
	// An error here means fd 3 is not there; Stat below says so.
	_ = syscall.SetNonblock(channelFD, true)
	ch := os.NewFile(channelFD, "channel")
	if ch == nil {
		log.Error("the worker verb is started by the server, with its channel on fd 3")
		return 2
	}
	if _, err := ch.Stat(); err != nil {
		log.Error("the worker verb is started by the server, with its channel on fd 3", "err", err)
		return 2
	}
	// The server owns the worker's life: it ends it by closing the channel
	// or by SIGKILL. A terminal's interrupt is for the server.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	err := serve(context.Background(), ch, ch, os.Stderr, afterLockdown, extra...)
	var ex exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ex):
		log.Error(err.Error())
		return int(ex)
	default:
		log.Error("worker failed", "err", err)
		return 1
	}
}

// jsonLogger is a worker's logger: JSON lines, which the server relays
// through its own logger, with each duration as its string ("1.5s"), as the
// server writes them: slog's JSON writes nanoseconds without a unit.
func jsonLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		},
	}))
}

type exitCode int

func (e exitCode) Error() string {
	return "a run did not stop at its deadline and was abandoned inside the guest; the worker retires"
}

// serve runs the worker's protocol: hello, then start-up and lock-down,
// ready, then one run at a time until the channel closes.
func serve(ctx context.Context, r io.Reader, w io.Writer, logOut io.Writer, afterLockdown func(*slog.Logger), extra ...quickjs.Option) error {
	var h hello
	if err := receiveControl(r, frameHello, &h); err != nil {
		return fmt.Errorf("worker: reading hello: %w", err)
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(h.LogLevel)))
	log := jsonLogger(logOut, level)

	engine, prot, startErr := start(ctx, h, log, extra)
	rd := ready{Pid: os.Getpid(), Protections: prot}
	if startErr != nil {
		rd.Error = startErr.Error()
	}
	if err := sendControl(w, frameReady, rd); err != nil {
		return fmt.Errorf("worker: writing ready: %w", err)
	}
	if startErr != nil {
		return startErr
	}
	defer engine.Close(ctx)
	if afterLockdown != nil {
		afterLockdown(log)
	}

	return (&runner{engine: engine, r: r, w: w, max: maxDataFrame(h.Engine.MaxMemoryBytes), log: log}).loop(ctx)
}

// start builds and warms the engine (compilation reads the cache), with
// extra options after the hello's, then locks the process down: nothing
// after this opens a file.
func start(ctx context.Context, h hello, log *slog.Logger, extra []quickjs.Option) (*quickjs.Engine, Protections, error) {
	prot := Protections{Process: true, EmptyEnvironment: len(os.Environ()) == 0}
	// One processor for Go code, from before the engine starts (its pool
	// keeps no thread of its own on one processor): a worker runs one
	// guest at a time, and with one processor each hand-off on a run's
	// path (the channel's reader to the run loop, the run loop to the
	// guest's goroutine and back) stays on one thread, where with more
	// every hand-off wakes a second thread that may steal the goroutine
	// onto a cold core. A run's answer costs less, paced and back to back
	// (RATIONALE.md). A guest that polls yields the processor at its next
	// poll once it has held it for the scheduler's time slice, so a cancel
	// frame is read within milliseconds; one stuck in native code is the
	// server's to kill, as with any number of processors.
	runtime.GOMAXPROCS(1)
	e := h.Engine
	opts := append(e.QuickJSOptions(log),
		quickjs.WithOnStuck(func(s quickjs.StuckRun) {
			log.Error("a run did not stop one grace after its deadline; abandoned inside the guest",
				"overrun", s.Overrun.String(), "cancelled", s.Cancelled)
		}),
	)
	opts = append(opts, extra...)
	engine, err := quickjs.New(ctx, opts...)
	if err != nil {
		return nil, prot, err
	}
	if err := engine.Warm(ctx); err != nil {
		_ = engine.Close(ctx)
		return nil, prot, err
	}
	// Compilation's garbage is most of a new worker's heap: return it to
	// the system before serving (a worker's resident set is per process).
	debug.FreeOSMemory()
	if n, err := releaseExecutablePages(); err != nil {
		log.Warn("releasing the executable's start-up pages", "err", err)
	} else {
		log.Debug("released the executable's start-up pages", "bytes", n)
	}
	// The worker's live heap is a few MB and each run allocates copies of
	// its script, input and result; a target of 200 halves the collections
	// on the run path (the worker's environment is empty, so GOGC cannot
	// come from there).
	debug.SetGCPercent(200)
	locked, err := lockDown(h, log)
	prot.NoNewPrivs, prot.ResourceLimits, prot.Seccomp = locked.NoNewPrivs, locked.ResourceLimits, locked.Seccomp
	if err != nil {
		_ = engine.Close(ctx)
		return nil, prot, err
	}
	return engine, prot, nil
}

// runner serves runs. A goroutine reads frames, so that a cancel frame
// reaches the run in progress, or a run queued behind it before it begins;
// runs are served one at a time, in the order they came.
type runner struct {
	engine *quickjs.Engine
	r      io.Reader
	w      io.Writer
	max    int
	log    *slog.Logger

	mu      sync.Mutex
	current uint64 // id of the run in progress, 0 if none
	// cancelled is the id of a queued run cancelled before it began
	cancelled uint64
	cancel    context.CancelFunc

	allocs uint64 // heapAllocs after the last run
}

func (rn *runner) limit(t frameType) int {
	if t == frameRun {
		return rn.max
	}
	return maxControlFrame
}

// releaseAfterBytes is how much a run may allocate in the worker's Go heap
// before the worker collects and returns the garbage to the operating
// system right after the run's answer, rather than keeping the pages for
// later allocations.
const releaseAfterBytes = 16 << 20

// heapAllocs is the worker's cumulative Go heap allocation in bytes.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// releaseAfterRun returns a large run's garbage to the operating system. A
// run allocates a few KiB of Go heap, and its input, value and logs; but a
// guest that recurses deeply (a stack overflow, a backtracking regular
// expression) makes wazero grow the guest's native call stack, in Go's heap,
// by tens of MiB per run, and the runtime would keep those pages resident
// for later allocations, in every worker such a run reached. The collection
// and release take milliseconds, after the answer was sent, and only after
// such a run.
func (rn *runner) releaseAfterRun() {
	allocs := heapAllocs()
	if allocs-rn.allocs > releaseAfterBytes {
		debug.FreeOSMemory()
		allocs = heapAllocs()
	}
	rn.allocs = allocs
}

func (rn *runner) loop(ctx context.Context) error {
	// The server sends at most one run ahead of the one in progress (a run
	// its caller named next, spi.RunRequest.Next), and at most one more
	// before the loop took that one: with room for both, the reader never
	// waits for the loop, and reads a cancel frame while a run goes on.
	runs := make(chan runFrame, 2)
	readErr := make(chan error, 1)
	// open ends when the channel fails (the server closed it): nobody
	// reads an answer after that, so the run in progress is stopped (its
	// context is open's) and the runs queued behind it are skipped.
	open, closed := context.WithCancel(ctx)
	defer closed()
	go func() {
		var buf []byte
		var last *string // the last run frame's script
		stop := func(err error) {
			closed()
			readErr <- err
			close(runs)
		}
		for {
			t, payload, err := readFrame(rn.r, buf, rn.limit)
			if err != nil {
				stop(err)
				return
			}
			switch t {
			case frameRun:
				var f runFrame
				if err := f.parse(payload, last); err != nil {
					stop(err)
					return
				}
				last = &f.script
				runs <- f
			case frameCancel:
				id, err := parseCancel(payload)
				if err != nil {
					stop(err)
					return
				}
				rn.mu.Lock()
				if rn.current == id && rn.cancel != nil {
					rn.cancel()
				} else if id > rn.current {
					rn.cancelled = id // a run queued behind the current one
				}
				rn.mu.Unlock()
			default:
				stop(fmt.Errorf("worker: unexpected %v frame", t))
				return
			}
			buf = payload
		}
	}()

	var out []byte
	rn.allocs = heapAllocs()
	for f := range runs {
		if open.Err() != nil {
			continue
		}
		runCtx, cancel := context.WithCancel(open)
		rn.mu.Lock()
		rn.current, rn.cancel = f.id, cancel
		if rn.cancelled == f.id {
			cancel()
		}
		rn.mu.Unlock()

		r, err := rn.engine.Run(runCtx, spi.RunRequest{Request: spi.Request{Script: f.script, InputJSON: f.input, Limits: f.limits}, CaptureLogs: f.logs, Replay: f.replay})

		rn.mu.Lock()
		rn.current, rn.cancel = 0, nil
		rn.mu.Unlock()
		cancel()

		res := resultFrame{id: f.id}
		if err != nil {
			res.status = resultCancelled
		} else {
			res.outcome, res.logs, res.usage, res.fault = r.Outcome, r.Logs, r.Usage, r.EngineFault
		}
		res.retire = rn.engine.StuckRuns() > 0
		res.compiled = rn.engine.CompiledScripts()
		out = res.append(startFrame(out, frameResult))
		if err := sendFrame(rn.w, out); err != nil {
			if open.Err() != nil {
				continue // the channel closed under the run: its answer is nobody's
			}
			return fmt.Errorf("worker: writing a result: %w", err)
		}
		rn.releaseAfterRun()
		if res.retire {
			return exitCode(ExitRetired)
		}
	}
	err := <-readErr
	if errors.Is(err, io.EOF) {
		return nil // the server closed the channel
	}
	return err
}
