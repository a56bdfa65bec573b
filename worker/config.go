package worker

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
)

// Verb is the hidden subcommand of the service's binary that runs a worker.
// The server starts it; it refuses to run when its channel is not there.
const Verb = "__sandbox-worker"

// channelFD is the worker's end of its channel to the server. Its standard
// error (fd 2) carries its log lines and, if it crashes, the Go runtime's
// report; fds 0 and 1 are /dev/null.
const channelFD = 3

// Lockdown selects what a worker does about its own lock-down.
type Lockdown string

const (
	// LockdownRequired: a worker that cannot lock itself down refuses to
	// start. Where lock-down is not supported (not Linux) it runs without,
	// and says so.
	LockdownRequired Lockdown = "required"
	// LockdownBestEffort: a worker applies what it can and runs anyway.
	LockdownBestEffort Lockdown = "best-effort"
	// LockdownOff: a worker does not lock itself down.
	LockdownOff Lockdown = "off"
)

// Check refuses a mode that is not one of the three. Like the other checks
// of a worker's settings (CheckConcurrent, CheckSpares, and the engine's
// quickjs.Check functions), its error reads as what follows the setting's
// name.
func (l Lockdown) Check() error {
	if l != LockdownRequired && l != LockdownBestEffort && l != LockdownOff {
		return fmt.Errorf("must be %s, %s or %s, got %q", LockdownRequired, LockdownBestEffort, LockdownOff, string(l))
	}
	return nil
}

// CheckConcurrent refuses a number of runs at once below one.
func CheckConcurrent(n int) error {
	if n < 1 {
		return fmt.Errorf("must be >= 1, got %d", n)
	}
	return nil
}

// CheckSpares refuses a number of spare workers outside [0, 8]: each warm
// worker costs its private memory, and more than a few help no one
// (RATIONALE.md, "One spare").
func CheckSpares(n int) error {
	if n < 0 || n > 8 {
		return fmt.Errorf("must be in [0, 8], got %d", n)
	}
	return nil
}

// EngineOptions configure the engine inside every worker.
type EngineOptions struct {
	// MaxMemoryBytes is the largest memory limit a run may ask for.
	MaxMemoryBytes int64
	// CPUBudget is the engine's CPU budget in interrupt polls; 0 disables.
	CPUBudget uint64
	// PoolSize is how many instances a worker keeps ready.
	PoolSize int
	// HardKillGrace is the grace of a run's spi.Timing: the server kills
	// a worker whose run has not stopped at its HardKill, the worker's own
	// kernel timer fires at its Backstop, and a caller of the pool must wait
	// for the answer until its CallerDeadline.
	HardKillGrace time.Duration
	// ProcessKill arms that kernel timer for every run (Linux).
	ProcessKill bool
	// CompilationCacheDir is wazero's compilation cache, read (and filled)
	// before lock-down.
	CompilationCacheDir string
	// CompiledScriptBytes is the budget of each worker's kept compiled
	// scripts (quickjs.WithCompiledScriptBytes); 0 keeps none.
	CompiledScriptBytes int64
}

// QuickJSOptions are the engine's constructor options for e, logging to log:
// what a worker builds its engine with.
func (e EngineOptions) QuickJSOptions(log *slog.Logger) []quickjs.Option {
	opts := []quickjs.Option{
		quickjs.WithMaxMemoryBytes(e.MaxMemoryBytes),
		quickjs.WithCPUBudget(e.CPUBudget),
		quickjs.WithPoolSize(e.PoolSize),
		quickjs.WithHardKill(quickjs.HardKillWatchdog, e.HardKillGrace),
		quickjs.WithProcessKill(e.ProcessKill),
		quickjs.WithLogger(log),
		quickjs.WithCompiledScriptBytes(e.CompiledScriptBytes),
	}
	if e.CompilationCacheDir != "" {
		opts = append(opts, quickjs.WithCompilationCache(e.CompilationCacheDir))
	}
	return opts
}

// Protections say which layers stand between a guest and the host beyond
// wasm: the worker process and its lock-down.
type Protections struct {
	// Process: guests run in a worker process, never in the server.
	Process bool `json:"process"`
	// EmptyEnvironment: the worker has no environment variables.
	EmptyEnvironment bool `json:"emptyEnvironment"`
	// NoNewPrivs: no_new_privs is set.
	NoNewPrivs bool `json:"noNewPrivs"`
	// ResourceLimits: address space (but in race-detector builds), open
	// files, core dumps and file sizes are limited, and the process is not
	// dumpable.
	ResourceLimits bool `json:"resourceLimits"`
	// Seccomp: the system-call filter is installed.
	Seccomp bool `json:"seccomp"`
}

func (p Protections) String() string {
	return fmt.Sprintf("process=%v emptyEnvironment=%v noNewPrivs=%v resourceLimits=%v seccomp=%v",
		p.Process, p.EmptyEnvironment, p.NoNewPrivs, p.ResourceLimits, p.Seccomp)
}
