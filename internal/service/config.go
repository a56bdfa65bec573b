package service

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"

	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// Config is the service's whole configuration, read from the environment by
// LoadConfig. Every variable, with its default (Defaults), is listed in
// README.md's configuration table.
type Config struct {
	Port string `envconfig:"PORT"`

	// StoreURL: gs://bucket/prefix, file:///path, a plain path, mem:, or none.
	StoreURL         string `envconfig:"STORE_URL"`
	MaxScriptBytes   int64  `envconfig:"MAX_SCRIPT_BYTES"`
	ScriptCacheBytes int64  `envconfig:"SCRIPT_CACHE_BYTES"`

	DefaultWallClock   time.Duration `envconfig:"DEFAULT_WALL_CLOCK"`
	MaxWallClock       time.Duration `envconfig:"MAX_WALL_CLOCK"`
	DefaultMemoryBytes int64         `envconfig:"DEFAULT_MEMORY_BYTES"`
	MaxMemoryBytes     int64         `envconfig:"MAX_MEMORY_BYTES"`
	MaxInputBytes      int64         `envconfig:"MAX_INPUT_BYTES"`
	MaxOutputBytes     int64         `envconfig:"MAX_OUTPUT_BYTES"`
	MaxRequestBytes    int64         `envconfig:"MAX_REQUEST_BYTES"`

	MaxConcurrentEvaluations int           `envconfig:"MAX_CONCURRENT_EVALUATIONS"`
	RequestTimeout           time.Duration `envconfig:"REQUEST_TIMEOUT"`
	HardKillGrace            time.Duration `envconfig:"HARD_KILL_GRACE"`
	ProcessKill              bool          `envconfig:"PROCESS_KILL"`
	CPUBudget                uint64        `envconfig:"CPU_BUDGET"`
	PoolSize                 int           `envconfig:"POOL_SIZE"`
	CompilationCacheDir      string        `envconfig:"COMPILATION_CACHE_DIR"`
	WorkerSpares             int           `envconfig:"WORKER_SPARES"`
	WorkerLockdown           string        `envconfig:"WORKER_LOCKDOWN"`
	MaxHeaderBytes           int           `envconfig:"MAX_HEADER_BYTES"`

	AuthAudience       string   `envconfig:"AUTH_AUDIENCE"`
	AuthAllowedCallers []string `envconfig:"AUTH_ALLOWED_CALLERS"`

	OTelExporter    string        `envconfig:"OTEL_EXPORTER"`
	LogLevel        string        `envconfig:"LOG_LEVEL"`
	ShutdownTimeout time.Duration `envconfig:"SHUTDOWN_TIMEOUT"`
	GoogleProject   string        `envconfig:"GOOGLE_CLOUD_PROJECT"`
}

// Defaults is the configuration of an empty environment: the one home of
// every default. Where a package's own default is the same setting (the
// engine's memory maximum, CPU budget, pool size and hard-kill grace, the
// effect's byte bounds, the store's script size and cache), it is taken as
// it is, so that the two cannot disagree.
func Defaults() Config {
	return Config{
		Port:                     "8080",
		StoreURL:                 "examples/store",
		MaxScriptBytes:           contentstore.DefaultMaxScriptBytes,
		ScriptCacheBytes:         contentstore.DefaultCacheBytes,
		DefaultWallClock:         5 * time.Second,
		MaxWallClock:             30 * time.Second,
		DefaultMemoryBytes:       64 << 20,
		MaxMemoryBytes:           quickjs.DefaultMaxMemoryBytes,
		MaxInputBytes:            effect.DefaultMaxInputBytes,
		MaxOutputBytes:           effect.DefaultMaxOutputBytes,
		MaxRequestBytes:          4 << 20,
		MaxConcurrentEvaluations: 1,
		RequestTimeout:           60 * time.Second,
		HardKillGrace:            quickjs.DefaultHardKillGrace,
		ProcessKill:              true,
		CPUBudget:                quickjs.DefaultCPUBudget,
		PoolSize:                 quickjs.DefaultPoolSize,
		WorkerSpares:             1,
		WorkerLockdown:           string(worker.LockdownRequired),
		MaxHeaderBytes:           32 << 10,
		OTelExporter:             "none",
		LogLevel:                 "info",
		ShutdownTimeout:          10 * time.Second,
	}
}

// LoadConfig reads the environment over Defaults and validates the result,
// reporting every problem at once. envconfig stops at the first variable it
// cannot parse, so each field is read on its own (a struct of that field
// alone, with its tag, holding its default, which envconfig leaves when the
// variable is unset), and Validate's checks run on the fields that parsed.
func LoadConfig() (Config, error) { return load(Config.Validate) }

// LoadServeConfig is LoadConfig for the serve verb: HostProblems are
// reported with Validate's, so that a server that cannot serve what it is
// configured to serve says so, with every other problem, before it starts.
func LoadServeConfig() (Config, error) {
	return load(func(c Config) []error { return append(c.Validate(), c.HostProblems()...) })
}

func load(check func(Config) []error) (Config, error) {
	c := Defaults()
	var errs []error
	var unparsed []string
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		one := reflect.New(reflect.StructOf([]reflect.StructField{{Name: f.Name, Type: f.Type, Tag: f.Tag}}))
		one.Elem().Field(0).Set(v.Field(i))
		if err := envconfig.Process("", one.Interface()); err != nil {
			var pe *envconfig.ParseError
			if errors.As(err, &pe) {
				err = parseProblem(f.Tag.Get("envconfig"), f.Type, pe.Value, v.Field(i), pe.Err)
			}
			errs = append(errs, err)
			unparsed = append(unparsed, f.Tag.Get("envconfig"))
			continue
		}
		v.Field(i).Set(one.Elem().Field(0))
	}
	// a check that involves a variable that did not parse would only
	// repeat that failure in other words
	for _, err := range check(c) {
		if !slices.ContainsFunc(unparsed, func(name string) bool { return strings.Contains(err.Error(), name) }) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("configuration:\n%w", err)
	}
	return c, nil
}

var durationType = reflect.TypeFor[time.Duration]()

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

// parseProblem says what a variable that does not parse must be, from its
// type, with its default as the example: the parser's own words
// (strconv.ParseInt: parsing "abc": invalid syntax) name Go functions, not
// the setting.
func parseProblem(name string, typ reflect.Type, value string, def reflect.Value, err error) error {
	var want string
	switch {
	case typ == durationType:
		want = "a duration with a unit (ms, s, m, h), such as " + shortDuration(time.Duration(def.Int()))
		if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
			want += "; a number alone has no unit"
		}
	case typ.Kind() == reflect.Bool:
		want = "true or false"
	case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Int64:
		want = "a whole number"
		if strings.HasSuffix(name, "_BYTES") {
			want += " of bytes"
		}
		if errors.Is(err, strconv.ErrRange) {
			want += fmt.Sprintf(" in [%d, %d]", int64(-1)<<(typ.Bits()-1), uint64(1)<<(typ.Bits()-1)-1)
		} else {
			want += fmt.Sprintf(", such as %d", def.Int())
		}
	case typ.Kind() >= reflect.Uint && typ.Kind() <= reflect.Uint64:
		want = "a whole number, 0 or more"
		if errors.Is(err, strconv.ErrRange) {
			want += fmt.Sprintf(", at most %d", ^uint64(0)>>(64-typ.Bits()))
		} else {
			want += fmt.Sprintf(", such as %d", def.Uint())
		}
	default:
		want = "a " + typ.String()
	}
	return fmt.Errorf("%s must be %s, got %s", name, want, quoteValue(value))
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
func (c Config) Validate() []error {
	return slices.Concat(c.serverProblems(), c.limitProblems(), c.engineProblems(), c.authProblems())
}

// problems collects errors for Validate; named prefixes a package's check
// with the variable it checks.
type problems []error

func (p *problems) bad(format string, args ...any) { *p = append(*p, fmt.Errorf(format, args...)) }

func (p *problems) named(name string, err error) {
	if err != nil {
		*p = append(*p, fmt.Errorf("%s %w", name, err))
	}
}

// serverProblems: the HTTP server, telemetry and the process's life.
func (c Config) serverProblems() problems {
	var p problems
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
		p = append(p, err)
	}
	if c.StoreURL != "none" {
		if err := contentstore.CheckURL(c.StoreURL); err != nil {
			why := err.Error()
			var ue *contentstore.URLError
			if errors.As(err, &ue) {
				why = ue.Reason
			}
			p.bad("STORE_URL %s: %s (want %s)", quoteValue(c.StoreURL), why, storeForms)
		}
	}
	return p
}

// storeForms are the values STORE_URL takes.
const storeForms = "gs://bucket/prefix, file:///path, a directory path, mem:, or none"

// limitProblems: the bounds of an evaluation and of a request.
func (c Config) limitProblems() problems {
	var p problems
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
	positiveDuration := func(name string, v time.Duration) bool {
		if v <= 0 {
			p.bad("%s must be positive, got %v", name, v)
		}
		return v > 0
	}
	// each blamed alone; their order is only worth checking when both hold
	defaultOK := positiveDuration("DEFAULT_WALL_CLOCK", c.DefaultWallClock)
	if positiveDuration("MAX_WALL_CLOCK", c.MaxWallClock) && defaultOK && c.DefaultWallClock > c.MaxWallClock {
		p.bad("DEFAULT_WALL_CLOCK %v exceeds MAX_WALL_CLOCK %v", c.DefaultWallClock, c.MaxWallClock)
	}
	if c.DefaultMemoryBytes > c.MaxMemoryBytes {
		p.bad("DEFAULT_MEMORY_BYTES %d exceeds MAX_MEMORY_BYTES %d", c.DefaultMemoryBytes, c.MaxMemoryBytes)
	}
	if c.MaxInputBytes > c.MaxRequestBytes {
		p.bad("MAX_INPUT_BYTES %d exceeds MAX_REQUEST_BYTES %d: an input at the limit could not arrive", c.MaxInputBytes, c.MaxRequestBytes)
	}
	if c.RequestTimeout <= 0 {
		p.bad("REQUEST_TIMEOUT must be positive, got %v", c.RequestTimeout)
	} else if longest := c.Timing(c.MaxWallClock); longest.CallerDeadline() >= c.RequestTimeout {
		p.bad("MAX_WALL_CLOCK + 2 x HARD_KILL_GRACE + 1s (%v) must be below REQUEST_TIMEOUT (%v), so that the service's hard kill, a worker's own backstop and the wait for its answer end before the platform's timeout",
			longest.CallerDeadline(), c.RequestTimeout)
	}
	return p
}

// engineProblems: the engine and the worker processes, by their own checks.
func (c Config) engineProblems() problems {
	var p problems
	p.named("MAX_MEMORY_BYTES", quickjs.CheckMaxMemoryBytes(c.MaxMemoryBytes))
	if c.DefaultMemoryBytes > 0 { // else limitProblems says it must be positive
		p.named("DEFAULT_MEMORY_BYTES", quickjs.CheckMemoryLimit(c.DefaultMemoryBytes))
	}
	p.named("POOL_SIZE", quickjs.CheckPoolSize(c.PoolSize))
	p.named("HARD_KILL_GRACE", quickjs.CheckHardKillGrace(c.HardKillGrace))
	p.named("MAX_CONCURRENT_EVALUATIONS", worker.CheckConcurrent(c.MaxConcurrentEvaluations))
	p.named("WORKER_SPARES", worker.CheckSpares(c.WorkerSpares))
	p.named("WORKER_LOCKDOWN", worker.Lockdown(c.WorkerLockdown).Check())
	return p
}

// authProblems: the ID-token check, on only with both variables.
func (c Config) authProblems() problems {
	var p problems
	if c.AuthAudience != "" && len(c.AuthAllowedCallers) == 0 {
		p.bad("AUTH_AUDIENCE is set but AUTH_ALLOWED_CALLERS is empty: name the identities allowed to call")
	}
	if c.AuthAudience == "" && len(c.AuthAllowedCallers) > 0 {
		p.bad("AUTH_ALLOWED_CALLERS is set but AUTH_AUDIENCE is empty: set the audience to turn authentication on")
	}
	return p
}

// HostProblems reports what the configuration names on this host that is
// not there: a local script store directory that does not exist (which
// would answer every reference as missing), and a compilation cache
// directory that cannot be created or used (with which no worker would
// start). A remote store is not checked here: it may be unreachable for a
// moment, and the server serves scripts by value meanwhile (readiness says
// so). The cache directory is created, as the engine would.
func (c Config) HostProblems() []error { return c.hostProblems(true) }

func (c Config) hostProblems(store bool) problems {
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
	return p
}

// Level is LOG_LEVEL as a slog level.
func (c Config) Level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(c.LogLevel))); err != nil {
		return l, fmt.Errorf("LOG_LEVEL must be debug, info, warn or error, got %s", quoteValue(c.LogLevel))
	}
	return l, nil
}
