package service

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// Validate reports every problem with the configuration. A setting that a
// package of the service takes is checked by that package's own check, so
// that each range is written once, where it is enforced.
func (c Config) Validate() []error { return c.validate(nil) }

func (c Config) validate(unparsed map[string]error) []error {
	p := problems{unparsed: unparsed}
	c.serverProblems(&p)
	c.limitProblems(&p)
	c.engineProblems(&p)
	c.authProblems(&p)
	c.taskProblems(&p)
	return p.errs
}

// problems collects errors for Validate; named prefixes a package's check
// with the variable it checks. unparsed are the variables whose values did
// not parse, each holding its default instead: a check of one alone passes
// (the defaults validate), but a check of it with another would judge the
// default against the other's value, so such a check asks parsed first.
type problems struct {
	errs     []error
	unparsed map[string]error
}

func (p *problems) bad(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

func (p *problems) named(name string, err error) {
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s %w", name, err))
	}
}

// parsed reports whether every one of the variables names holds its own
// value.
func (p *problems) parsed(names ...string) bool {
	for _, name := range names {
		if p.unparsed[name] != nil {
			return false
		}
	}
	return true
}

// serverProblems: the HTTP server, telemetry and the process's life.
func (c Config) serverProblems(p *problems) {
	if port, err := strconv.Atoi(c.Port); err != nil || port < 1 || port > 65535 {
		p.bad("PORT must be a port number in [1, 65535], got %q", c.Port)
	}
	if c.MaxHeaderBytes < 4096 || c.MaxHeaderBytes > 1<<20 {
		p.bad("MAX_HEADER_BYTES must be in [4096, 1048576], got %d", c.MaxHeaderBytes)
	}
	if c.ShutdownTimeout <= 0 {
		p.bad("SHUTDOWN_TIMEOUT must be positive, got %v", c.ShutdownTimeout)
	}
	switch c.OTelExporter {
	case "none", "stdout", "otlp":
	default:
		p.bad("OTEL_EXPORTER must be none, stdout or otlp, got %q", c.OTelExporter)
	}
	if _, err := c.Level(); err != nil {
		p.errs = append(p.errs, err)
	}
	if c.StoreURL != "none" {
		if err := contentstore.CheckURL(c.StoreURL); err != nil {
			// the forms are the hint only where the URL is of none of
			// them; a mistake inside one (a bucket's name) is its own
			var ue *contentstore.URLError
			switch {
			case !errors.As(err, &ue):
				p.bad("STORE_URL %s: %v", quoteValue(c.StoreURL), err)
			case ue.Want != "":
				p.bad("STORE_URL %s: %s (want %s)", quoteValue(c.StoreURL), ue.Reason, storeForms)
			default:
				p.bad("STORE_URL %s: %s", quoteValue(c.StoreURL), ue.Reason)
			}
		}
	}
}

// storeForms are the values STORE_URL takes.
const storeForms = "gs://bucket/prefix, file:///path, a directory path, mem:, or none"

// limitProblems: the bounds of an evaluation and of a request.
func (c Config) limitProblems(p *problems) {
	positive := func(name string, v int64) {
		if v <= 0 {
			p.bad("%s must be positive, got %d", name, v)
		}
	}
	positive("MAX_SCRIPT_BYTES", c.MaxScriptBytes)
	positive("DEFAULT_MEMORY_BYTES", c.DefaultMemoryBytes)
	positive("MAX_INPUT_BYTES", c.MaxInputBytes)
	positive("MAX_OUTPUT_BYTES", c.MaxOutputBytes)
	positive("MAX_REQUEST_BYTES", c.MaxRequestBytes)
	positive("MAX_BATCH_ITEMS", int64(c.MaxBatchItems))
	if c.ScriptCacheBytes < 0 {
		p.bad("SCRIPT_CACHE_BYTES must be >= 0 (0 disables the cache), got %d", c.ScriptCacheBytes)
	}
	if c.ScriptConfirmAfter < 0 {
		p.bad("SCRIPT_CONFIRM_AFTER must be >= 0 (0 confirms before every run from the cache), got %v", c.ScriptConfirmAfter)
	}
	positiveDuration := func(name string, v time.Duration) bool {
		if v <= 0 {
			p.bad("%s must be positive, got %v", name, v)
		}
		return v > 0
	}
	// each blamed alone; their order is only worth checking when both hold
	defaultOK := positiveDuration("DEFAULT_WALL_CLOCK", c.DefaultWallClock)
	if positiveDuration("MAX_WALL_CLOCK", c.MaxWallClock) && defaultOK &&
		p.parsed("DEFAULT_WALL_CLOCK", "MAX_WALL_CLOCK") && c.DefaultWallClock > c.MaxWallClock {
		p.bad("DEFAULT_WALL_CLOCK %v exceeds MAX_WALL_CLOCK %v", c.DefaultWallClock, c.MaxWallClock)
	}
	if p.parsed("DEFAULT_MEMORY_BYTES", "MAX_MEMORY_BYTES") && c.DefaultMemoryBytes > c.MaxMemoryBytes {
		p.bad("DEFAULT_MEMORY_BYTES %d exceeds MAX_MEMORY_BYTES %d", c.DefaultMemoryBytes, c.MaxMemoryBytes)
	}
	if least := api.MinRequestBytes(c.MaxScriptBytes, c.MaxInputBytes); p.parsed("MAX_SCRIPT_BYTES", "MAX_INPUT_BYTES", "MAX_REQUEST_BYTES") &&
		c.MaxRequestBytes < least {
		p.bad("MAX_REQUEST_BYTES %d is below %d, what a script of MAX_SCRIPT_BYTES and an input of MAX_INPUT_BYTES take with every byte escaped (6 × (%d + %d) + 64 KiB): such a request would be refused for how it was written",
			c.MaxRequestBytes, least, c.MaxScriptBytes, c.MaxInputBytes)
	}
	if c.RequestTimeout <= 0 {
		p.bad("REQUEST_TIMEOUT must be positive, got %v", c.RequestTimeout)
	} else if longest := c.Timing(c.MaxWallClock); p.parsed("MAX_WALL_CLOCK", "HARD_KILL_GRACE", "REQUEST_TIMEOUT") &&
		longest.CallerDeadline() >= c.RequestTimeout {
		p.bad("MAX_WALL_CLOCK + 2 x HARD_KILL_GRACE + 1s (%v) must be below REQUEST_TIMEOUT (%v), so that the service's hard kill, a worker's own backstop and the wait for its answer end before the platform's timeout",
			longest.CallerDeadline(), c.RequestTimeout)
	}
}

// engineProblems: the engine and the worker processes, by their own checks.
func (c Config) engineProblems(p *problems) {
	p.named("MAX_MEMORY_BYTES", quickjs.CheckMaxMemoryBytes(c.MaxMemoryBytes))
	if c.DefaultMemoryBytes > 0 { // else limitProblems says it must be positive
		p.named("DEFAULT_MEMORY_BYTES", quickjs.CheckMemoryLimit(c.DefaultMemoryBytes))
	}
	p.named("POOL_SIZE", quickjs.CheckPoolSize(c.PoolSize))
	p.named("COMPILED_SCRIPT_BYTES", quickjs.CheckCompiledScriptBytes(c.CompiledScriptBytes))
	p.named("HARD_KILL_GRACE", quickjs.CheckHardKillGrace(c.HardKillGrace))
	p.named("MAX_CONCURRENT_EVALUATIONS", worker.CheckConcurrent(c.MaxConcurrentEvaluations))
	p.named("WORKER_SPARES", worker.CheckSpares(c.WorkerSpares))
	p.named("WORKER_LOCKDOWN", worker.Lockdown(c.WorkerLockdown).Check())
}

// authProblems: the ID-token check, on only with both variables.
func (c Config) authProblems(p *problems) {
	if !p.parsed("AUTH_AUDIENCE", "AUTH_ALLOWED_CALLERS") {
		return
	}
	if c.AuthAudience != "" && len(c.AuthAllowedCallers) == 0 {
		p.bad("AUTH_AUDIENCE is set but AUTH_ALLOWED_CALLERS is empty: name the identities allowed to call")
	}
	if c.AuthAudience == "" && len(c.AuthAllowedCallers) > 0 {
		p.bad("AUTH_ALLOWED_CALLERS is set but AUTH_AUDIENCE is empty: set the audience to turn authentication on")
	}
}

// taskProblems: a Cloud Run job task's place in its execution, which the
// platform sets; a value it never sets is a mistake in a local run's.
func (c Config) taskProblems(p *problems) {
	if c.TaskCount < 1 {
		p.bad("CLOUD_RUN_TASK_COUNT must be at least 1, got %d", c.TaskCount)
	} else if p.parsed("CLOUD_RUN_TASK_INDEX", "CLOUD_RUN_TASK_COUNT") && (c.TaskIndex < 0 || c.TaskIndex >= c.TaskCount) {
		p.bad("CLOUD_RUN_TASK_INDEX must be in [0, CLOUD_RUN_TASK_COUNT-1] = [0, %d], got %d", c.TaskCount-1, c.TaskIndex)
	}
	if c.TaskAttempt < 0 {
		p.bad("CLOUD_RUN_TASK_ATTEMPT must be 0 or more, got %d", c.TaskAttempt)
	}
}

// HostProblems reports what the configuration names on this host that is
// not there: a local script store directory that does not exist (which
// would answer every reference as missing), and a compilation cache
// directory that cannot be created or used (with which no worker would
// start). A remote store is not checked here: it may be unreachable for a
// moment, and the server serves scripts by value meanwhile (readiness says
// so). The cache directory is created, as the engine would.
func (c Config) HostProblems() []error { return c.hostProblems(true) }

func (c Config) hostProblems(store bool) []error {
	var p problems
	if dir, ok := contentstore.LocalDir(c.StoreURL); ok && store && c.StoreURL != "none" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			p.bad("STORE_URL %s: the store directory %s does not exist (create it, for example with the put verb, or correct the path)", quoteValue(c.StoreURL), dir)
		case err != nil:
			p.bad("STORE_URL %s: the store directory cannot be read: %v", quoteValue(c.StoreURL), err)
		case !fi.IsDir():
			p.bad("STORE_URL %s: %s is not a directory", quoteValue(c.StoreURL), dir)
		}
	}
	if err := quickjs.CheckCompilationCache(c.CompilationCacheDir); err != nil {
		p.bad("COMPILATION_CACHE_DIR %w (name a directory this process can create and write, or leave it unset to compile the engine at start)", err)
	}
	return p.errs
}

// Level is LOG_LEVEL as a slog level.
func (c Config) Level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(c.LogLevel))); err != nil {
		return l, fmt.Errorf("LOG_LEVEL must be debug, info, warn or error, got %s", quoteValue(c.LogLevel))
	}
	return l, nil
}
