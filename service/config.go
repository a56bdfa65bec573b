package service

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// Environment is the environment as the service reads it: one field per
// variable, holding its text. Its tags are the one place each variable's
// name (envconfig) and default (default) are written: envconfig reads the
// process's environment into it (ReadEnvironment), LookupEnvironment reads
// a lookup's (a test's map) by the same tags, the parsers of settings turn
// it into a Config, Variables lists the names, README.md's configuration
// table restates the defaults (a test holds the two together), and the
// defaults that are a package's own (the engine's memory maximum, CPU
// budget, pool size and hard-kill grace, the effect's byte bounds, the
// store's script size, the cache's size and its bound on running a script
// without the store's confirmation) are tested equal to that package's
// constant. A field without a default is empty when its variable is unset.
type Environment struct {
	Port string `envconfig:"PORT" default:"8080"`

	StoreURL           string `envconfig:"STORE_URL" default:"examples/store"`
	MaxScriptBytes     string `envconfig:"MAX_SCRIPT_BYTES" default:"1048576"`
	ScriptCacheBytes   string `envconfig:"SCRIPT_CACHE_BYTES" default:"67108864"`
	ScriptConfirmAfter string `envconfig:"SCRIPT_CONFIRM_AFTER" default:"30s"`

	DefaultWallClock   string `envconfig:"DEFAULT_WALL_CLOCK" default:"5s"`
	MaxWallClock       string `envconfig:"MAX_WALL_CLOCK" default:"30s"`
	DefaultMemoryBytes string `envconfig:"DEFAULT_MEMORY_BYTES" default:"67108864"`
	MaxMemoryBytes     string `envconfig:"MAX_MEMORY_BYTES" default:"268435456"`
	MaxInputBytes      string `envconfig:"MAX_INPUT_BYTES" default:"1048576"`
	MaxOutputBytes     string `envconfig:"MAX_OUTPUT_BYTES" default:"1048576"`
	MaxRequestBytes    string `envconfig:"MAX_REQUEST_BYTES" default:"16777216"`
	MaxBatchItems      string `envconfig:"MAX_BATCH_ITEMS" default:"1000"`

	MaxConcurrentEvaluations string `envconfig:"MAX_CONCURRENT_EVALUATIONS" default:"1"`
	RequestTimeout           string `envconfig:"REQUEST_TIMEOUT" default:"60s"`
	HardKillGrace            string `envconfig:"HARD_KILL_GRACE" default:"500ms"`
	ProcessKill              string `envconfig:"PROCESS_KILL" default:"true"`
	CPUBudget                string `envconfig:"CPU_BUDGET" default:"1000000"`
	PoolSize                 string `envconfig:"POOL_SIZE" default:"2"`
	CompiledScriptBytes      string `envconfig:"COMPILED_SCRIPT_BYTES" default:"134217728"`
	CompilationCacheDir      string `envconfig:"COMPILATION_CACHE_DIR"`
	WorkerSpares             string `envconfig:"WORKER_SPARES" default:"1"`
	WorkerLockdown           string `envconfig:"WORKER_LOCKDOWN" default:"required"`
	MaxHeaderBytes           string `envconfig:"MAX_HEADER_BYTES" default:"32768"`

	AuthAudience       string `envconfig:"AUTH_AUDIENCE"`
	AuthAllowedCallers string `envconfig:"AUTH_ALLOWED_CALLERS"`

	OTelExporter    string `envconfig:"OTEL_EXPORTER" default:"none"`
	LogLevel        string `envconfig:"LOG_LEVEL" default:"info"`
	ShutdownTimeout string `envconfig:"SHUTDOWN_TIMEOUT" default:"10s"`
	GoogleProject   string `envconfig:"GOOGLE_CLOUD_PROJECT"`

	// The bulk verb's: what a job execution sets (--update-env-vars), and
	// the task's place in it, which Cloud Run sets for each task.
	BulkScript  string `envconfig:"BULK_SCRIPT"`
	BulkInputs  string `envconfig:"BULK_INPUTS"`
	BulkResults string `envconfig:"BULK_RESULTS"`
	TaskIndex   string `envconfig:"CLOUD_RUN_TASK_INDEX" default:"0"`
	TaskCount   string `envconfig:"CLOUD_RUN_TASK_COUNT" default:"1"`
	TaskAttempt string `envconfig:"CLOUD_RUN_TASK_ATTEMPT" default:"0"`
}

// ReadEnvironment reads the process's environment with envconfig: each
// variable's value as it is set (empty included), or its default when it
// is not set. It fails only on an Environment envconfig cannot read, which
// a test rules out: every field is text, so no value fails here; what a
// value must be, LoadConfig says.
func ReadEnvironment() (Environment, error) {
	var e Environment
	if err := envconfig.Process("", &e); err != nil {
		return Environment{}, fmt.Errorf("reading the environment: %w", err)
	}
	return e, nil
}

// LookupEnvironment reads the variables lookup has (a test's map) as
// ReadEnvironment reads the process's, by the same tags: a variable set,
// even to nothing, is its value; one not set is its default.
func LookupEnvironment(lookup func(name string) (value string, ok bool)) Environment {
	var e Environment
	v := reflect.ValueOf(&e).Elem()
	for i, f := range reflect.VisibleFields(v.Type()) {
		value, ok := lookup(f.Tag.Get("envconfig"))
		if !ok {
			value = f.Tag.Get("default")
		}
		v.Field(i).SetString(value)
	}
	return e
}

// Config is the service's whole configuration: Environment's values, each
// parsed into the field of the same name by its row of settings.
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
	MaxBatchItems      int

	MaxConcurrentEvaluations int
	RequestTimeout           time.Duration
	HardKillGrace            time.Duration
	ProcessKill              bool
	CPUBudget                uint64
	PoolSize                 int
	// CompiledScriptBytes is the instance's budget of kept compiled
	// scripts, shared out evenly among its worker processes.
	CompiledScriptBytes int64
	CompilationCacheDir string
	WorkerSpares        int
	WorkerLockdown      string
	MaxHeaderBytes      int

	AuthAudience       string
	AuthAllowedCallers []string

	OTelExporter    string
	LogLevel        string
	ShutdownTimeout time.Duration
	GoogleProject   string

	// BulkScript, BulkInputs and BulkResults are the bulk verb's defaults
	// for -script, -inputs and -results.
	BulkScript  string
	BulkInputs  string
	BulkResults string
	// TaskIndex of TaskCount is the bulk verb's shard of the inputs;
	// TaskAttempt counts the task's retries (0 the first run).
	TaskIndex   int
	TaskCount   int
	TaskAttempt int
}

// settings is the table of parsers: one row per variable, binding its text
// in e to the field of c it sets, with the kind of value it holds. The
// variable's name and default are not written here but read from e's tags,
// so that no row can disagree with them.
func settings(c *Config, e *Environment) []setting {
	rows := []setting{
		bind(&e.Port, &c.Port, anyText),
		bind(&e.StoreURL, &c.StoreURL, anyText),
		bind(&e.MaxScriptBytes, &c.MaxScriptBytes, byteCount[int64]()),
		bind(&e.ScriptCacheBytes, &c.ScriptCacheBytes, byteCount[int64]()),
		bind(&e.ScriptConfirmAfter, &c.ScriptConfirmAfter, duration),
		bind(&e.DefaultWallClock, &c.DefaultWallClock, duration),
		bind(&e.MaxWallClock, &c.MaxWallClock, duration),
		bind(&e.DefaultMemoryBytes, &c.DefaultMemoryBytes, byteCount[int64]()),
		bind(&e.MaxMemoryBytes, &c.MaxMemoryBytes, byteCount[int64]()),
		bind(&e.MaxInputBytes, &c.MaxInputBytes, byteCount[int64]()),
		bind(&e.MaxOutputBytes, &c.MaxOutputBytes, byteCount[int64]()),
		bind(&e.MaxRequestBytes, &c.MaxRequestBytes, byteCount[int64]()),
		bind(&e.MaxBatchItems, &c.MaxBatchItems, wholeNumber[int]()),
		bind(&e.MaxConcurrentEvaluations, &c.MaxConcurrentEvaluations, wholeNumber[int]()),
		bind(&e.RequestTimeout, &c.RequestTimeout, duration),
		bind(&e.HardKillGrace, &c.HardKillGrace, duration),
		bind(&e.ProcessKill, &c.ProcessKill, boolean),
		bind(&e.CPUBudget, &c.CPUBudget, naturalNumber),
		bind(&e.PoolSize, &c.PoolSize, wholeNumber[int]()),
		bind(&e.CompiledScriptBytes, &c.CompiledScriptBytes, byteCount[int64]()),
		bind(&e.CompilationCacheDir, &c.CompilationCacheDir, anyText),
		bind(&e.WorkerSpares, &c.WorkerSpares, wholeNumber[int]()),
		bind(&e.WorkerLockdown, &c.WorkerLockdown, anyText),
		bind(&e.MaxHeaderBytes, &c.MaxHeaderBytes, byteCount[int]()),
		bind(&e.AuthAudience, &c.AuthAudience, anyText),
		bind(&e.AuthAllowedCallers, &c.AuthAllowedCallers, commaList),
		bind(&e.OTelExporter, &c.OTelExporter, anyText),
		bind(&e.LogLevel, &c.LogLevel, anyText),
		bind(&e.ShutdownTimeout, &c.ShutdownTimeout, duration),
		bind(&e.GoogleProject, &c.GoogleProject, anyText),
		bind(&e.BulkScript, &c.BulkScript, anyText),
		bind(&e.BulkInputs, &c.BulkInputs, anyText),
		bind(&e.BulkResults, &c.BulkResults, anyText),
		bind(&e.TaskIndex, &c.TaskIndex, wholeNumber[int]()),
		bind(&e.TaskCount, &c.TaskCount, wholeNumber[int]()),
		bind(&e.TaskAttempt, &c.TaskAttempt, wholeNumber[int]()),
	}
	tags := map[*string]reflect.StructTag{}
	v := reflect.ValueOf(e).Elem()
	for i, f := range reflect.VisibleFields(v.Type()) {
		tags[v.Field(i).Addr().Interface().(*string)] = f.Tag
	}
	for i, r := range rows {
		tag, ok := tags[r.text]
		if !ok {
			panic("service: a row of settings reads no field of Environment")
		}
		rows[i].name, rows[i].def = tag.Get("envconfig"), tag.Get("default")
	}
	return rows
}

// A setting is a row of the table: the variable's name and default (from
// Environment's tags), its text, and apply, which parses the text into the
// row's field of Config. form says what a value of the variable is, with
// its default as the example.
type setting struct {
	name, def string
	text      *string
	apply     func(name, value, def string) error
	form      func(def string) string
}

// A kind is what a variable's value is: parse reads a value or says what it
// must be, with def as the example; form says the same whatever the value.
type kind[T any] struct {
	parse func(value string, def T) (T, error)
	form  func(def T) string
}

// bind makes the row that reads text as a k into field. The default is
// read first, so that a value that does not parse leaves the field at its
// default, and is reported with the variable's name.
func bind[T any](text *string, field *T, k kind[T]) setting {
	var zero T
	readDefault := func(name, def string) (T, error) {
		d, err := k.parse(def, zero)
		if err != nil {
			return zero, fmt.Errorf("%s's default %q is not %w", name, def, err)
		}
		return d, nil
	}
	return setting{
		text: text,
		apply: func(name, value, def string) error {
			d, err := readDefault(name, def)
			if err != nil {
				return err
			}
			*field = d
			v, err := k.parse(value, d)
			if err != nil {
				return fmt.Errorf("%s must be %w, got %s", name, err, quoteValue(value))
			}
			*field = v
			return nil
		},
		form: func(def string) string {
			d, _ := readDefault("", def)
			return k.form(d)
		},
	}
}

// Defaults is the configuration of an empty environment.
func Defaults() Config {
	c, _ := parse(LookupEnvironment(func(string) (string, bool) { return "", false }))
	return c
}

// LoadConfig parses e (ReadEnvironment's; LookupEnvironment's in a test)
// and validates the result, reporting every problem at once: each value
// that does not parse, and what Validate finds.
func LoadConfig(e Environment) (Config, error) {
	c, errs := load(e)
	return c, configurationError(errs)
}

// LoadServeConfig is LoadConfig for the serve verb: HostProblems are
// reported with Validate's, so that a server that cannot serve what it is
// configured to serve says so, with every other problem, before it starts.
func LoadServeConfig(e Environment) (Config, error) {
	c, errs := load(e)
	return c, configurationError(append(errs, c.HostProblems()...))
}

// load keeps a variable's default when its value does not parse, and names
// it to validate as unparsed: a check that read the default in its place
// would report a problem the variable does not have.
func load(e Environment) (Config, []error) {
	c, unparsed := parse(e)
	var errs []error
	for _, name := range Variables() {
		if err := unparsed[name]; err != nil {
			errs = append(errs, err)
		}
	}
	return c, append(errs, c.validate(unparsed)...)
}

// parse is e's values as a Config, and the problem of each variable whose
// value does not parse.
func parse(e Environment) (Config, map[string]error) {
	var c Config
	unparsed := map[string]error{}
	for _, s := range settings(&c, &e) {
		if err := s.apply(s.name, *s.text, s.def); err != nil {
			unparsed[s.name] = err
		}
	}
	return c, unparsed
}

func configurationError(errs []error) error {
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	return nil
}

// Variables are the names of the environment variables Config reads, in
// the order of Environment's fields.
func Variables() []string {
	var names []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Environment]()) {
		names = append(names, f.Tag.Get("envconfig"))
	}
	return names
}

// The kinds of value. Each says, when a value does not parse, what it must
// be in the setting's words: the parser's own (strconv.ParseInt: parsing
// "abc": invalid syntax) name Go functions, not the setting. Numbers are
// read as Go writes them (0x100, 1_000), as the service always has.

// anyText takes a value as it is; what it may be, Validate checks. Without
// a default there is nothing to say of its form.
var anyText = kind[string]{
	parse: func(value, _ string) (string, error) { return value, nil },
	form: func(def string) string {
		if def == "" {
			return ""
		}
		return "a value such as " + def
	},
}

// commaList splits a value at its commas, leaving each item's spaces to
// the code that uses it; a blank value is no items.
var commaList = kind[[]string]{
	parse: func(value string, _ []string) ([]string, error) {
		if strings.TrimSpace(value) == "" {
			return nil, nil
		}
		return strings.Split(value, ","), nil
	},
	form: func([]string) string { return "a comma-separated list" },
}

var boolean = kind[bool]{
	parse: func(value string, _ bool) (bool, error) {
		b, err := strconv.ParseBool(value)
		if err != nil {
			return false, errors.New("true or false")
		}
		return b, nil
	},
	form: func(bool) string { return "true or false" },
}

// ParseDuration reads a duration as the configuration reads one, saying
// what a value must be, with def as the example, when it is not one: the
// eval and conformance verbs read their duration flags the same way.
func ParseDuration(value string, def time.Duration) (time.Duration, error) {
	return duration.parse(value, def)
}

var duration = kind[time.Duration]{
	parse: func(value string, def time.Duration) (time.Duration, error) {
		d, err := time.ParseDuration(value)
		if err != nil {
			want := durationForm(def)
			if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
				want += "; a number alone has no unit"
			}
			return 0, errors.New(want)
		}
		return d, nil
	},
	form: durationForm,
}

func durationForm(def time.Duration) string {
	return "a duration with a unit (ms, s, m, h), such as " + shortDuration(def)
}

func wholeNumber[T int | int64]() kind[T] { return signed[T]("a whole number") }

func byteCount[T int | int64]() kind[T] { return signed[T]("a whole number of bytes") }

// signed reads a T, a whole number described as what; an int is 32 bits on
// some platforms.
func signed[T int | int64](what string) kind[T] {
	bits := 64
	if _, isInt := any(T(0)).(int); isInt {
		bits = strconv.IntSize
	}
	form := func(def T) string { return fmt.Sprintf("%s, such as %d", what, def) }
	return kind[T]{
		parse: func(value string, def T) (T, error) {
			n, err := strconv.ParseInt(value, 0, bits)
			switch {
			case errors.Is(err, strconv.ErrRange):
				return 0, fmt.Errorf("%s in [%d, %d]", what, int64(-1)<<(bits-1), uint64(1)<<(bits-1)-1)
			case err != nil:
				return 0, errors.New(form(def))
			}
			return T(n), nil
		},
		form: form,
	}
}

var naturalNumber = kind[uint64]{
	parse: func(value string, def uint64) (uint64, error) {
		n, err := strconv.ParseUint(value, 0, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return 0, fmt.Errorf("a whole number, 0 or more, at most %d", uint64(math.MaxUint64))
		case err != nil:
			return 0, errors.New(naturalForm(def))
		}
		return n, nil
	},
	form: naturalForm,
}

func naturalForm(def uint64) string {
	return fmt.Sprintf("a whole number, 0 or more, such as %d", def)
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

// ForOneRun is c for one evaluation from the command line (the eval verb):
// one run at a time and no spare worker, and the process-kill backstop only
// where the engine has it (Linux). Its bounds are c's, so that the run is
// answered as the service c configures would answer it.
func (c Config) ForOneRun() Config {
	c.MaxConcurrentEvaluations, c.WorkerSpares = 1, 0
	c.ProcessKill = c.ProcessKill && runtime.GOOS == "linux"
	return c
}

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
