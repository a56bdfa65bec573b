package service

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// Config is the service's whole configuration. Each field is one
// environment variable's value, bound to it in settings, the table that
// LoadConfig reads and Defaults fills.
type Config struct {
	Port string

	// StoreURL: gs://bucket/prefix, file:///path, a plain path, mem:, or none.
	StoreURL           string
	MaxScriptBytes     int64
	ScriptCacheBytes   int64
	ScriptConfirmAfter time.Duration

	DefaultWallClock   time.Duration
	MaxWallClock       time.Duration
	DefaultMemoryBytes int64
	MaxMemoryBytes     int64
	MaxInputBytes      int64
	MaxOutputBytes     int64
	MaxRequestBytes    int64

	MaxConcurrentEvaluations int
	RequestTimeout           time.Duration
	HardKillGrace            time.Duration
	ProcessKill              bool
	CPUBudget                uint64
	PoolSize                 int
	CompilationCacheDir      string
	WorkerSpares             int
	WorkerLockdown           string
	MaxHeaderBytes           int

	AuthAudience       string
	AuthAllowedCallers []string

	OTelExporter    string
	LogLevel        string
	ShutdownTimeout time.Duration
	GoogleProject   string
}

// settings is the table of the environment variables the service reads,
// one row each: the variable, the field of c it sets, its default and the
// parser of its value. The defaults are written here and nowhere else;
// README.md's configuration table restates them, and a test holds the two
// together. Where a package's own default is the same setting (the
// engine's memory maximum, CPU budget, pool size and hard-kill grace, the
// effect's byte bounds, the store's script size, the cache's size and its
// bound on running a script without the store's confirmation), it is taken
// as it is, so that the two cannot disagree.
func settings(c *Config) []setting {
	return []setting{
		bind("PORT", &c.Port, "8080", anyText),
		bind("STORE_URL", &c.StoreURL, "examples/store", anyText),
		bind("MAX_SCRIPT_BYTES", &c.MaxScriptBytes, contentstore.DefaultMaxScriptBytes, byteCount),
		bind("SCRIPT_CACHE_BYTES", &c.ScriptCacheBytes, contentstore.DefaultCacheBytes, byteCount),
		bind("SCRIPT_CONFIRM_AFTER", &c.ScriptConfirmAfter, contentstore.DefaultConfirmAfter, duration),
		bind("DEFAULT_WALL_CLOCK", &c.DefaultWallClock, 5*time.Second, duration),
		bind("MAX_WALL_CLOCK", &c.MaxWallClock, 30*time.Second, duration),
		bind("DEFAULT_MEMORY_BYTES", &c.DefaultMemoryBytes, 64<<20, byteCount),
		bind("MAX_MEMORY_BYTES", &c.MaxMemoryBytes, quickjs.DefaultMaxMemoryBytes, byteCount),
		bind("MAX_INPUT_BYTES", &c.MaxInputBytes, effect.DefaultMaxInputBytes, byteCount),
		bind("MAX_OUTPUT_BYTES", &c.MaxOutputBytes, effect.DefaultMaxOutputBytes, byteCount),
		bind("MAX_REQUEST_BYTES", &c.MaxRequestBytes, 16<<20, byteCount),
		bind("MAX_CONCURRENT_EVALUATIONS", &c.MaxConcurrentEvaluations, 1, wholeNumber),
		bind("REQUEST_TIMEOUT", &c.RequestTimeout, 60*time.Second, duration),
		bind("HARD_KILL_GRACE", &c.HardKillGrace, quickjs.DefaultHardKillGrace, duration),
		bind("PROCESS_KILL", &c.ProcessKill, true, boolean),
		bind("CPU_BUDGET", &c.CPUBudget, quickjs.DefaultCPUBudget, naturalNumber),
		bind("POOL_SIZE", &c.PoolSize, quickjs.DefaultPoolSize, wholeNumber),
		bind("COMPILATION_CACHE_DIR", &c.CompilationCacheDir, "", anyText),
		bind("WORKER_SPARES", &c.WorkerSpares, 1, wholeNumber),
		bind("WORKER_LOCKDOWN", &c.WorkerLockdown, string(worker.LockdownRequired), anyText),
		bind("MAX_HEADER_BYTES", &c.MaxHeaderBytes, 32<<10, byteCount),
		bind("AUTH_AUDIENCE", &c.AuthAudience, "", anyText),
		bind("AUTH_ALLOWED_CALLERS", &c.AuthAllowedCallers, nil, commaList),
		bind("OTEL_EXPORTER", &c.OTelExporter, "none", anyText),
		bind("LOG_LEVEL", &c.LogLevel, "info", anyText),
		bind("SHUTDOWN_TIMEOUT", &c.ShutdownTimeout, 10*time.Second, duration),
		bind("GOOGLE_CLOUD_PROJECT", &c.GoogleProject, "", anyText),
	}
}

// A setting is a row of the table, its field already chosen: reset puts
// the default there, parse a value read from the environment.
type setting struct {
	name  string
	reset func()
	parse func(value string) error
}

// bind makes the row of the variable name. parse reads a value as a T or
// says what the value must be, with def as the example; a value that does
// not parse is reported with the variable's name and leaves the field as
// it was.
func bind[T any](name string, field *T, def T, parse func(value string, def T) (T, error)) setting {
	return setting{
		name:  name,
		reset: func() { *field = def },
		parse: func(value string) error {
			v, err := parse(value, def)
			if err != nil {
				return fmt.Errorf("%s must be %w, got %s", name, err, quoteValue(value))
			}
			*field = v
			return nil
		},
	}
}

// Defaults is the configuration of an empty environment.
func Defaults() Config {
	var c Config
	for _, s := range settings(&c) {
		s.reset()
	}
	return c
}

// LoadConfig reads the variables lookup has (os.LookupEnv; a map in a test)
// over Defaults and validates the result, reporting every problem at once:
// each value that does not parse, and what Validate finds.
func LoadConfig(lookup func(name string) (value string, ok bool)) (Config, error) {
	c, errs := load(lookup)
	return c, configurationError(errs)
}

// LoadServeConfig is LoadConfig for the serve verb: HostProblems are
// reported with Validate's, so that a server that cannot serve what it is
// configured to serve says so, with every other problem, before it starts.
func LoadServeConfig(lookup func(name string) (value string, ok bool)) (Config, error) {
	c, errs := load(lookup)
	return c, configurationError(append(errs, c.HostProblems()...))
}

// load keeps a variable's default when its value does not parse, and names
// it to validate as unparsed: a check that read the default in its place
// would report a problem the variable does not have.
func load(lookup func(string) (string, bool)) (Config, []error) {
	c := Defaults()
	var errs []error
	unparsed := map[string]bool{}
	for _, s := range settings(&c) {
		value, ok := lookup(s.name)
		if !ok {
			continue
		}
		if err := s.parse(value); err != nil {
			errs = append(errs, err)
			unparsed[s.name] = true
		}
	}
	return c, append(errs, c.validate(unparsed)...)
}

func configurationError(errs []error) error {
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	return nil
}

// The parsers. Each says, when a value does not parse, what it must be in
// the setting's words: the parser's own (strconv.ParseInt: parsing "abc":
// invalid syntax) name Go functions, not the setting. Numbers are read as
// Go writes them (0x100, 1_000), as the service always has.

// anyText takes a value as it is; what it may be, Validate checks.
func anyText(value, _ string) (string, error) { return value, nil }

// commaList splits a value at its commas, leaving each item's spaces to
// the code that uses it; a blank value is no items.
func commaList(value string, _ []string) ([]string, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	return strings.Split(value, ","), nil
}

func boolean(value string, _ bool) (bool, error) {
	b, err := strconv.ParseBool(value)
	if err != nil {
		return false, errors.New("true or false")
	}
	return b, nil
}

// ParseDuration reads a duration as the configuration reads one, saying
// what a value must be, with def as the example, when it is not one: the
// eval and conformance verbs read their duration flags the same way.
func ParseDuration(value string, def time.Duration) (time.Duration, error) {
	return duration(value, def)
}

func duration(value string, def time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(value)
	if err != nil {
		want := "a duration with a unit (ms, s, m, h), such as " + shortDuration(def)
		if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
			want += "; a number alone has no unit"
		}
		return 0, errors.New(want)
	}
	return d, nil
}

func wholeNumber[T int | int64](value string, def T) (T, error) {
	return signed(value, def, "a whole number")
}

func byteCount[T int | int64](value string, def T) (T, error) {
	return signed(value, def, "a whole number of bytes")
}

// signed reads a T; an int is 32 bits on some platforms.
func signed[T int | int64](value string, def T, what string) (T, error) {
	bits := 64
	if _, isInt := any(def).(int); isInt {
		bits = strconv.IntSize
	}
	n, err := strconv.ParseInt(value, 0, bits)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%s in [%d, %d]", what, int64(-1)<<(bits-1), uint64(1)<<(bits-1)-1)
	case err != nil:
		return 0, fmt.Errorf("%s, such as %d", what, def)
	}
	return T(n), nil
}

func naturalNumber(value string, def uint64) (uint64, error) {
	n, err := strconv.ParseUint(value, 0, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("a whole number, 0 or more, at most %d", uint64(math.MaxUint64))
	case err != nil:
		return 0, fmt.Errorf("a whole number, 0 or more, such as %d", def)
	}
	return n, nil
}

// quoteValue quotes a variable's value in a problem, cut short when it is
// longer than any setting's (a path, a URL) needs to be.
func quoteValue(v string) string {
	const max = 256
	if len(v) > max {
		return fmt.Sprintf("%q…(%d bytes)", v[:max], len(v))
	}
	return fmt.Sprintf("%q", v)
}

// shortDuration is d as a person writes it: 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2] // 1m0s: 1m; 1h0m0s: 1h0m
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// ForOneRun is c for one evaluation from the command line (the eval verb),
// under limits: one run at a time and no spare worker, maxima raised to
// admit the run's limits, a request timeout that leaves the run its whole
// deadline (the verb has no request to time out), and the process-kill
// backstop only where the engine has it (Linux).
func (c Config) ForOneRun(limits spi.Limits) Config {
	c.MaxConcurrentEvaluations, c.WorkerSpares = 1, 0
	c.MaxWallClock = max(c.MaxWallClock, limits.WallClock)
	c.DefaultWallClock = min(c.DefaultWallClock, c.MaxWallClock)
	c.MaxMemoryBytes = max(c.MaxMemoryBytes, limits.MemoryBytes)
	c.RequestTimeout = max(c.RequestTimeout, c.Timing(c.MaxWallClock).CallerDeadline()+time.Second)
	c.ProcessKill = c.ProcessKill && runtime.GOOS == "linux"
	return c
}

// Validate reports every problem with the configuration. A setting that a
// package of the service takes is checked by that package's own check, so
// that each range is written once, where it is enforced.
func (c Config) Validate() []error { return c.validate(nil) }

func (c Config) validate(unparsed map[string]bool) []error {
	p := problems{unparsed: unparsed}
	c.serverProblems(&p)
	c.limitProblems(&p)
	c.engineProblems(&p)
	c.authProblems(&p)
	return p.errs
}

// problems collects errors for Validate; named prefixes a package's check
// with the variable it checks. unparsed are the variables whose values did
// not parse, each holding its default instead: a check of one alone passes
// (the defaults validate), but a check of it with another would judge the
// default against the other's value, so such a check asks parsed first.
type problems struct {
	errs     []error
	unparsed map[string]bool
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
		if p.unparsed[name] {
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
