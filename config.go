package main

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"

	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// Config is the service's whole configuration, read from the environment.
// Every variable, with its default, is listed in README.md.
type Config struct {
	Port string `envconfig:"PORT" default:"8080"`

	// StoreURL: gs://bucket/prefix, file:///path, a plain path, mem:, or none.
	StoreURL         string `envconfig:"STORE_URL" default:"examples/store"`
	MaxScriptBytes   int64  `envconfig:"MAX_SCRIPT_BYTES" default:"1048576"`
	ScriptCacheBytes int64  `envconfig:"SCRIPT_CACHE_BYTES" default:"67108864"`

	DefaultWallClock   time.Duration `envconfig:"DEFAULT_WALL_CLOCK" default:"5s"`
	MaxWallClock       time.Duration `envconfig:"MAX_WALL_CLOCK" default:"30s"`
	DefaultMemoryBytes int64         `envconfig:"DEFAULT_MEMORY_BYTES" default:"67108864"`
	MaxMemoryBytes     int64         `envconfig:"MAX_MEMORY_BYTES" default:"268435456"`
	MaxInputBytes      int64         `envconfig:"MAX_INPUT_BYTES" default:"1048576"`
	MaxOutputBytes     int64         `envconfig:"MAX_OUTPUT_BYTES" default:"1048576"`
	MaxRequestBytes    int64         `envconfig:"MAX_REQUEST_BYTES" default:"4194304"`

	MaxConcurrentEvaluations int           `envconfig:"MAX_CONCURRENT_EVALUATIONS" default:"1"`
	RequestTimeout           time.Duration `envconfig:"REQUEST_TIMEOUT" default:"60s"`
	HardKillGrace            time.Duration `envconfig:"HARD_KILL_GRACE" default:"500ms"`
	ProcessKill              bool          `envconfig:"PROCESS_KILL" default:"true"`
	CPUBudget                uint64        `envconfig:"CPU_BUDGET" default:"1000000"`
	PoolSize                 int           `envconfig:"POOL_SIZE" default:"2"`
	CompilationCacheDir      string        `envconfig:"COMPILATION_CACHE_DIR"`
	WorkerSpares             int           `envconfig:"WORKER_SPARES" default:"1"`
	WorkerLockdown           string        `envconfig:"WORKER_LOCKDOWN" default:"required"`
	MaxHeaderBytes           int           `envconfig:"MAX_HEADER_BYTES" default:"32768"`

	AuthAudience       string   `envconfig:"AUTH_AUDIENCE"`
	AuthAllowedCallers []string `envconfig:"AUTH_ALLOWED_CALLERS"`

	OTelExporter    string        `envconfig:"OTEL_EXPORTER" default:"none"`
	LogLevel        string        `envconfig:"LOG_LEVEL" default:"info"`
	ShutdownTimeout time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"10s"`
	GoogleProject   string        `envconfig:"GOOGLE_CLOUD_PROJECT"`
}

// loadConfig reads the environment and validates the result, reporting every
// problem at once. envconfig stops at the first variable it cannot parse, so
// each field is read on its own (a struct of that field alone, with its
// tags), and Validate's checks run on the fields that parsed.
func loadConfig() (Config, error) {
	var c Config
	var errs []error
	var unparsed []string
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		one := reflect.New(reflect.StructOf([]reflect.StructField{{Name: f.Name, Type: f.Type, Tag: f.Tag}}))
		if err := envconfig.Process("", one.Interface()); err != nil {
			var pe *envconfig.ParseError
			if errors.As(err, &pe) {
				err = fmt.Errorf("%s=%q is not a valid %s: %w", pe.KeyName, pe.Value, pe.TypeName, pe.Err)
			}
			errs = append(errs, err)
			unparsed = append(unparsed, f.Tag.Get("envconfig"))
			continue
		}
		v.Field(i).Set(one.Elem().Field(0))
	}
	// a check that involves a variable that did not parse would only
	// repeat that failure in other words
	for _, err := range c.validate() {
		if !slices.ContainsFunc(unparsed, func(name string) bool { return strings.Contains(err.Error(), name) }) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("configuration:\n%w", err)
	}
	return c, nil
}

// validate reports every problem with the parsed configuration.
func (c Config) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p, err := strconv.Atoi(c.Port); err != nil || p < 1 || p > 65535 {
		bad("PORT must be a port number in [1, 65535], got %q", c.Port)
	}
	positive := func(name string, v int64) {
		if v <= 0 {
			bad("%s must be positive, got %d", name, v)
		}
	}
	positive("MAX_SCRIPT_BYTES", c.MaxScriptBytes)
	positive("DEFAULT_MEMORY_BYTES", c.DefaultMemoryBytes)
	positive("MAX_MEMORY_BYTES", c.MaxMemoryBytes)
	positive("MAX_INPUT_BYTES", c.MaxInputBytes)
	positive("MAX_OUTPUT_BYTES", c.MaxOutputBytes)
	positive("MAX_REQUEST_BYTES", c.MaxRequestBytes)
	if c.ScriptCacheBytes < 0 {
		bad("SCRIPT_CACHE_BYTES must be >= 0 (0 disables the cache), got %d", c.ScriptCacheBytes)
	}
	if c.DefaultWallClock <= 0 || c.MaxWallClock <= 0 {
		bad("DEFAULT_WALL_CLOCK (%v) and MAX_WALL_CLOCK (%v) must be positive", c.DefaultWallClock, c.MaxWallClock)
	}
	if c.DefaultWallClock > c.MaxWallClock {
		bad("DEFAULT_WALL_CLOCK %v exceeds MAX_WALL_CLOCK %v", c.DefaultWallClock, c.MaxWallClock)
	}
	if c.DefaultMemoryBytes > c.MaxMemoryBytes {
		bad("DEFAULT_MEMORY_BYTES %d exceeds MAX_MEMORY_BYTES %d", c.DefaultMemoryBytes, c.MaxMemoryBytes)
	}
	if c.MaxInputBytes > c.MaxRequestBytes {
		bad("MAX_INPUT_BYTES %d exceeds MAX_REQUEST_BYTES %d: an input at the limit could not arrive", c.MaxInputBytes, c.MaxRequestBytes)
	}
	if c.MaxConcurrentEvaluations < 1 {
		bad("MAX_CONCURRENT_EVALUATIONS must be >= 1, got %d", c.MaxConcurrentEvaluations)
	}
	if c.WorkerSpares < 0 || c.WorkerSpares > 8 {
		bad("WORKER_SPARES must be in [0, 8], got %d", c.WorkerSpares)
	}
	if !worker.Lockdown(c.WorkerLockdown).Valid() {
		bad("WORKER_LOCKDOWN must be required, best-effort or off, got %q", c.WorkerLockdown)
	}
	if c.MaxHeaderBytes < 4096 || c.MaxHeaderBytes > 1<<20 {
		bad("MAX_HEADER_BYTES must be in [4096, 1048576], got %d", c.MaxHeaderBytes)
	}
	if c.HardKillGrace <= 0 || c.HardKillGrace > time.Minute {
		bad("HARD_KILL_GRACE must be in (0, 1m], got %v", c.HardKillGrace)
	}
	if c.RequestTimeout <= 0 {
		bad("REQUEST_TIMEOUT must be positive, got %v", c.RequestTimeout)
	} else if c.MaxWallClock+2*c.HardKillGrace >= c.RequestTimeout {
		bad("MAX_WALL_CLOCK + 2 x HARD_KILL_GRACE (%v) must be below REQUEST_TIMEOUT (%v), so that the service's hard kill, and a worker's own backstop, fire before the platform's timeout",
			c.MaxWallClock+2*c.HardKillGrace, c.RequestTimeout)
	}
	if c.PoolSize < 0 || c.PoolSize > 64 {
		bad("POOL_SIZE must be in [0, 64], got %d", c.PoolSize)
	}
	if c.ShutdownTimeout <= 0 {
		bad("SHUTDOWN_TIMEOUT must be positive, got %v", c.ShutdownTimeout)
	}
	switch c.OTelExporter {
	case "none", "stdout", "otlp":
	default:
		bad("OTEL_EXPORTER must be none, stdout or otlp, got %q", c.OTelExporter)
	}
	if _, err := c.level(); err != nil {
		errs = append(errs, err)
	}
	if c.AuthAudience != "" && len(c.AuthAllowedCallers) == 0 {
		bad("AUTH_AUDIENCE is set but AUTH_ALLOWED_CALLERS is empty: name the identities allowed to call")
	}
	if c.AuthAudience == "" && len(c.AuthAllowedCallers) > 0 {
		bad("AUTH_ALLOWED_CALLERS is set but AUTH_AUDIENCE is empty: set the audience to turn authentication on")
	}
	return errs
}

func (c Config) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(c.LogLevel))); err != nil {
		return l, fmt.Errorf("LOG_LEVEL %q: want debug, info, warn or error", c.LogLevel)
	}
	return l, nil
}
