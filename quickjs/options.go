package quickjs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tetratelabs/wazero"
)

// MinMemoryBytes is the least memory limit a run may ask for. The limit
// counts everything QuickJS allocates, and the runtime, the context and the
// console that every run starts with take about 150 KiB of it before the
// script or its input get a byte: below that nothing runs at all, and the
// run would end as a memory limit, or as inputTooLarge for an input of a few
// bytes, which says nothing true about the input. At this floor a small
// script runs on a small input (TestMinMemoryRunsASmallScript).
const MinMemoryBytes = 256 << 10

// Defaults for the engine's constructor options.
const (
	DefaultMaxMemoryBytes = 256 << 20
	DefaultCPUBudget      = 1_000_000
	DefaultPoolSize       = 2
	DefaultHardKillGrace  = 500 * time.Millisecond
	// DefaultCompiledScriptBytes is the budget of an engine's kept compiled
	// scripts (WithCompiledScriptBytes).
	DefaultCompiledScriptBytes = 64 << 20
	// wasmHeadroom is linear memory beyond the QuickJS limit: the 1 MiB shadow
	// stack, static data, the console buffer and the host's copies of the
	// script, the input and the result, which QuickJS's allocator does not
	// count.
	wasmHeadroom = 64 << 20
	// memoryKeep is how many closed instances' linear memories are kept,
	// zeroed, for the next instances (memoryPool): at one run at a time
	// with the pool refilled after each run, one or two are enough.
	memoryKeep = 2
)

// LinearMemoriesAtMost is how many guest linear memories an engine with the
// given pool size holds at once, at most: one per pooled instance, the
// running one, one being built and the kept ones waiting for reuse. Each
// reserves LinearMemoryBytes of address space; a process's address-space
// limit must cover them all.
func LinearMemoriesAtMost(poolSize int) int { return poolSize + 2 + memoryKeep }

// wasmPage is the size of a WebAssembly memory page.
const wasmPage = 64 << 10

// LinearMemoryBytes is the address space one guest's linear memory reserves
// in an engine whose maximum memory limit is maxMemoryBytes: the engine caps
// each memory at that limit plus wasmHeadroom, rounded up to whole wasm
// pages, and maps it at its cap (memory_linux.go) whatever the guest uses of
// it. At the service's default maximum of 256 MiB it is 320 MiB.
func LinearMemoryBytes(maxMemoryBytes int64) uint64 {
	return (uint64(maxMemoryBytes) + wasmHeadroom + wasmPage - 1) / wasmPage * wasmPage
}

// HardKill selects how a run that does not stop at its deadline is stopped.
type HardKill int

const (
	// HardKillWatchdog (the default) relies on QuickJS's interrupt handler to
	// stop a run at its deadline, at no cost to the guest's speed. A run still
	// going at deadline + grace (stuck inside one long native builtin, which
	// never reaches the handler) is abandoned: Evaluate reports the wall-clock
	// limit, and the engine calls the OnStuck hook; in the service's worker
	// process that retires the worker, which the server normally kills
	// first. The Go watchdog is best effort (a stuck guest cannot be
	// preempted, and a garbage collection can stall other goroutines until it
	// returns), so the wall clock is hard only where something outside the
	// guest's runtime ends it: the server's kill of the worker, or
	// WithProcessKill, whose kernel timer kills the process at deadline + 2
	// x grace. See docs/hard-kill.md for the figures behind the choice.
	HardKillWatchdog HardKill = iota
	// HardKillForTests compiles the guest with wazero's
	// WithCloseOnContextDone, so that the guest is terminated in-process at
	// deadline + grace whatever it is doing, at a 3.7-7.8x cost on guest work
	// (docs/hard-kill.md: fib(25) 7.8x, a 256 KiB reshape 3.7x). The service
	// never pays that: its hard kill ends the worker process. It is for
	// tests that need an engine in their own process whose wall clock is
	// hard (the conformance kit's cases that a soft wall clock skips), and
	// for the benchmarks that measure its cost.
	HardKillForTests
)

func (h HardKill) String() string {
	switch h {
	case HardKillWatchdog:
		return "watchdog"
	case HardKillForTests:
		return "contextDone"
	}
	return fmt.Sprintf("HardKill(%d)", int(h))
}

// StuckRun describes a run abandoned by the watchdog.
type StuckRun struct {
	// Overrun is how long after its deadline (or cancellation) the run was
	// abandoned.
	Overrun time.Duration
	// Cancelled is true when the caller cancelled and the run did not stop.
	Cancelled bool
}

// Option configures an Engine.
type Option func(*config)

type config struct {
	maxMemory int64
	cpuBudget uint64
	poolSize  int
	hardKill  HardKill
	grace     time.Duration
	onStuck   func(StuckRun)
	procKill  bool
	cacheDir  string
	// compiledBytes is the budget of kept compiled scripts
	compiledBytes int64
	logger        *slog.Logger
	// trapForTests chooses the runs that trap (WithTrapForTests)
	trapForTests func(script string) bool
}

func defaultConfig() config {
	return config{
		maxMemory: DefaultMaxMemoryBytes,
		cpuBudget: DefaultCPUBudget,
		poolSize:  DefaultPoolSize,
		hardKill:  HardKillWatchdog,
		grace:     DefaultHardKillGrace,
		logger:    slog.Default(),

		compiledBytes: DefaultCompiledScriptBytes,
	}
}

// WithMaxMemoryBytes sets the largest memory limit a request may ask for.
// Linear memory is capped at this plus a fixed headroom, so the host's memory
// is bounded whatever the guest does.
func WithMaxMemoryBytes(n int64) Option { return func(c *config) { c.maxMemory = n } }

// WithCPUBudget sets the CPU budget, counted in calls of QuickJS's interrupt
// handler (one every 1,000 function calls or backward jumps, as
// patches/0001-interrupt-every-1000-ticks.patch sets it); 0 disables it.
// Being counted in operations, a CPU kill is a pure function of script and
// input.
func WithCPUBudget(polls uint64) Option { return func(c *config) { c.cpuBudget = polls } }

// WithPoolSize sets how many instances are kept ready ahead of requests, each
// reset to the set-up image after every run (0: every run instantiates an
// instance on the request path, and closes it after).
func WithPoolSize(n int) Option { return func(c *config) { c.poolSize = n } }

// WithHardKill selects the hard-kill mechanism and its grace after the
// deadline.
func WithHardKill(h HardKill, grace time.Duration) Option {
	return func(c *config) { c.hardKill, c.grace = h, grace }
}

// WithProcessKill arms, for every run, a kernel timer that kills the whole
// process with SIGKILL at deadline + 2 x grace if the run has not returned by
// then. It is the backstop of HardKillWatchdog: a guest stuck in a native
// builtin never yields to Go, and a garbage collection that starts meanwhile
// can stall every goroutine, the Go watchdog included, until the guest
// returns. Sound only where a process serves one request at a time and is
// restarted by its platform (Cloud Run); Linux only.
func WithProcessKill(enabled bool) Option { return func(c *config) { c.procKill = enabled } }

// WithOnStuck sets the hook called (on its own goroutine) when the watchdog
// abandons a run. The default logs at error level.
func WithOnStuck(f func(StuckRun)) Option { return func(c *config) { c.onStuck = f } }

// WithCompiledScriptBytes sets the budget of the engine's kept compiled
// scripts: the first run of a script compiles it and keeps the memory the
// compile leaves, and later runs of the script start from that instead of
// compiling again (scripts.go); the least recently used leave first when a
// new one would not fit. The bytes are mapped outside the Go heap. 0 keeps
// none: every run compiles.
func WithCompiledScriptBytes(n int64) Option { return func(c *config) { c.compiledBytes = n } }

// WithCompilationCache keeps wazero's compiled code in dir, so a new process
// skips compilation (see the `compile-cache` subcommand).
func WithCompilationCache(dir string) Option { return func(c *config) { c.cacheDir = dir } }

// WithLogger sets the engine's logger.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithTrapForTests breaks the engine from inside, as a script that found a
// memory-safety bug in it would: a run whose script trap chooses traps
// inside the guest ("wasm error: unreachable") at its first interrupt poll,
// and is reported as an engine fault (spi.Report.EngineFault); the other
// runs are not touched. It is for the tests of what the service does with
// an engine fault: nothing but a test sets it, so no configuration, request
// or script of a service reaches it.
func WithTrapForTests(trap func(script string) bool) Option {
	return func(c *config) { c.trapForTests = trap }
}

// CheckMaxMemoryBytes, CheckPoolSize and CheckHardKillGrace refuse a
// setting outside the range New accepts, so that a service can check its
// configuration against the engine's own ranges and report every problem at
// once. Each error reads as what follows the setting's name ("must be in
// [0, 64], got 70"): New puts the option's name in front of it, a service
// its variable's.
func CheckMaxMemoryBytes(n int64) error {
	if n < 1<<20 || n > 2<<30 {
		return fmt.Errorf("must be in [1 MiB, 2 GiB], got %d", n)
	}
	return nil
}

// CheckCompilationCache refuses a compilation cache directory that New
// cannot use: one that cannot be created (a missing parent on a read-only
// file system, a file in the way, no permission), or in which wazero cannot
// make its directory for this version. It creates them, as New would. A
// cache that exists but cannot serve this host (compiled for other CPU
// features) is no error: New compiles without it. "" is no cache. See
// CheckMaxMemoryBytes for the form of the error.
func CheckCompilationCache(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%q cannot be created: %w", dir, err)
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return fmt.Errorf("%q cannot be used: %w", dir, err)
	}
	return c.Close(context.Background())
}

// CheckMemoryLimit refuses a memory limit, a default one included, below
// MinMemoryBytes; see CheckMaxMemoryBytes.
func CheckMemoryLimit(n int64) error {
	if n < MinMemoryBytes {
		return fmt.Errorf("must be at least %d (the engine's minMemoryBytes: below it nothing runs), got %d", MinMemoryBytes, n)
	}
	return nil
}

// CheckCompiledScriptBytes: see CheckMaxMemoryBytes.
func CheckCompiledScriptBytes(n int64) error {
	if n < 0 || n > 64<<30 {
		return fmt.Errorf("must be in [0, 64 GiB], got %d", n)
	}
	return nil
}

// CheckPoolSize: see CheckMaxMemoryBytes.
func CheckPoolSize(n int) error {
	if n < 0 || n > 64 {
		return fmt.Errorf("must be in [0, 64], got %d", n)
	}
	return nil
}

// CheckHardKillGrace: see CheckMaxMemoryBytes.
func CheckHardKillGrace(d time.Duration) error {
	if d <= 0 || d > time.Minute {
		return fmt.Errorf("must be in (0, 1m], got %v", d)
	}
	return nil
}

// validate reports every problem with the options.
func (c *config) validate() error {
	var problems []error
	check := func(option string, err error) {
		if err != nil {
			problems = append(problems, fmt.Errorf("quickjs: %s %w", option, err))
		}
	}
	check("max memory", CheckMaxMemoryBytes(c.maxMemory))
	check("pool size", CheckPoolSize(c.poolSize))
	check("hard-kill grace", CheckHardKillGrace(c.grace))
	check("compiled script bytes", CheckCompiledScriptBytes(c.compiledBytes))
	if c.hardKill != HardKillWatchdog && c.hardKill != HardKillForTests {
		problems = append(problems, fmt.Errorf("quickjs: unknown hard-kill mode %d", int(c.hardKill)))
	}
	if c.procKill && !processKillSupported {
		problems = append(problems, errors.New("quickjs: the process-kill backstop is not supported on this platform"))
	}
	if c.logger == nil {
		problems = append(problems, errors.New("quickjs: nil logger"))
	}
	return errors.Join(problems...)
}
