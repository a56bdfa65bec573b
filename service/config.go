package service

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// Config is the service's whole configuration, a field per environment
// variable. A field is its setting's one declaration: its tags name the
// variable (envconfig) and its default (default; none, and the variable
// unset is empty), its type says how its text is read (a string as it is,
// a []string split at its commas, a bool, a time.Duration with its unit, a
// uint64, an int or int64, a count of bytes where the field's name ends in
// Bytes), and its comment says what it is for: README.md's configuration
// table is made of these comments and tags (a test holds it to them). What
// a value must be beyond its kind, Validate says; where that is a
// package's own range, by the package's check, and where a default is a
// package's own constant, a test holds the two equal.
type Config struct {
	// listen port
	Port string `envconfig:"PORT" default:"8080"`

	// script store: `gs://bucket/prefix` (Application Default Credentials;
	// `STORAGE_EMULATOR_HOST` honoured), `file:///path` or a plain path (the
	// directory must exist; `put` creates it), `mem:`, or `none` (no store:
	// only scripts by value on `/v1/sandbox/evaluate`)
	StoreURL string `envconfig:"STORE_URL" default:"examples/store"`

	// largest script read from the store (its size is checked before reading)
	MaxScriptBytes int64 `envconfig:"MAX_SCRIPT_BYTES" default:"1048576"`

	// in-memory LRU of verified scripts; `0` disables
	ScriptCacheBytes int64 `envconfig:"SCRIPT_CACHE_BYTES" default:"67108864"`

	// the longest the cache runs a script without its store's word that the
	// script is still there: a run from the cache past it first asks the store
	// (GCS: the object's metadata, never its bytes; a directory: a stat), one
	// question at a time per script. A script the store no longer has answers
	// `scriptMissing` (404 `script-not-found` on the SPI) and leaves the
	// cache, so a deletion reaches every instance within this bound; a store
	// that cannot answer by the fetch deadline fails the run as a fetch fails
	// (`store-unavailable`, retryable) rather than run the script. `0` asks
	// before every run. What a question costs: `docs/spi.md`, "Scripts"
	ScriptConfirmAfter time.Duration `envconfig:"SCRIPT_CONFIRM_AFTER" default:"30s"`

	// wall clock when a request gives none
	DefaultWallClock time.Duration `envconfig:"DEFAULT_WALL_CLOCK" default:"5s"`

	// the most a request may ask
	MaxWallClock time.Duration `envconfig:"MAX_WALL_CLOCK" default:"30s"`

	// QuickJS memory limit when a request gives none; at least `262144`, the
	// engine's `minMemoryBytes` (below it nothing runs, and a request that
	// asks for less is answered as the memory limit)
	DefaultMemoryBytes int64 `envconfig:"DEFAULT_MEMORY_BYTES" default:"67108864"`

	// the most a request may ask; guest linear memory is capped at this plus
	// 64 MiB
	MaxMemoryBytes int64 `envconfig:"MAX_MEMORY_BYTES" default:"268435456"`

	// largest input JSON text
	MaxInputBytes int64 `envconfig:"MAX_INPUT_BYTES" default:"1048576"`

	// largest output JSON text on `/v1/evaluations` (`limitExceeded{output}`
	// above it); the SPI returns the value whole, for the caller's effect to
	// bound
	MaxOutputBytes int64 `envconfig:"MAX_OUTPUT_BYTES" default:"1048576"`

	// largest request body (413 above it); at least 6 × (`MAX_SCRIPT_BYTES` +
	// `MAX_INPUT_BYTES`) + 64 KiB, so that a script and an input within their
	// bounds arrive however a client escapes them (a byte written as `\u0000`
	// takes six)
	MaxRequestBytes int64 `envconfig:"MAX_REQUEST_BYTES" default:"16777216"`

	// most inputs in one `POST /v1/evaluations:batch` (a `413` problem,
	// `too-many-inputs`, above it); the body is bounded by `MAX_REQUEST_BYTES`
	// as every request's is
	MaxBatchItems int `envconfig:"MAX_BATCH_ITEMS" default:"1000"`

	// evaluations at once, each in a worker process of its own; the next
	// request gets 429 with `Retry-After` at once. The server's own Go code
	// gets at most this many processors unless `GOMAXPROCS` is set
	MaxConcurrentEvaluations int `envconfig:"MAX_CONCURRENT_EVALUATIONS" default:"1"`

	// the server's own deadline for an evaluation request; set it to the Cloud
	// Run request timeout; it must exceed `MAX_WALL_CLOCK` + 2 ×
	// `HARD_KILL_GRACE` + 1 s
	RequestTimeout time.Duration `envconfig:"REQUEST_TIMEOUT" default:"60s"`

	// how long past its deadline a run stuck in native code may go before the
	// server kills its worker and answers `limit: wallClock`; the worker's own
	// kernel backstop fires at twice that
	HardKillGrace time.Duration `envconfig:"HARD_KILL_GRACE" default:"500ms"`

	// arm each worker's per-run kernel `SIGKILL` backstop (Linux; it ends that
	// worker only); see `docs/hard-kill.md`
	ProcessKill bool `envconfig:"PROCESS_KILL" default:"true"`

	// CPU budget in interrupt-handler calls (one every 1,000 function calls or
	// backward jumps; a tight loop uses it up in a few seconds on these
	// machines); `0` disables
	CPUBudget uint64 `envconfig:"CPU_BUDGET" default:"1000000"`

	// instances each worker keeps ready ahead of requests; an instance serves
	// one run at a time and is reset to the set-up's memory image after each
	// (`docs/security.md`, "Fresh per run")
	PoolSize int `envconfig:"POOL_SIZE" default:"2"`

	// the instance's memory for kept compiled scripts, shared evenly among its
	// worker processes (`MAX_CONCURRENT_EVALUATIONS` + `WORKER_SPARES`: 64 MiB
	// each by default), outside the Go heap: a script's first run in a worker
	// compiles it and keeps the memory the compile left, and its later runs
	// there start from that instead of compiling again; the least recently
	// used leave first, and one compile larger than a quarter of a worker's
	// share is not kept. `0` keeps none (`RATIONALE.md`, "A script compiles
	// once, an instance serves many runs")
	CompiledScriptBytes int64 `envconfig:"COMPILED_SCRIPT_BYTES" default:"134217728"`

	// wazero compilation cache (the image bakes one with `compile-cache`);
	// created if missing, and a directory that cannot be created or used is a
	// start-up problem; a cache that exists but cannot serve this host
	// (compiled for other CPU features) falls back to compiling, with a
	// warning
	CompilationCacheDir string `envconfig:"COMPILATION_CACHE_DIR"`

	// worker processes kept warm beyond `MAX_CONCURRENT_EVALUATIONS`, so that
	// the run after a hard kill finds one ready (`0` to `8`)
	WorkerSpares int `envconfig:"WORKER_SPARES" default:"1"`

	// `required`: on Linux a worker that cannot lock itself down
	// (no_new_privs, resource limits, seccomp) refuses to start and the
	// instance is not ready; `best-effort`: it runs with what it could apply,
	// and logs which step failed; `off`: no lock-down. Elsewhere (a laptop)
	// workers run without it. `/v1/capabilities` says what is on
	// (`docs/security.md`)
	WorkerLockdown string `envconfig:"WORKER_LOCKDOWN" default:"required"`

	// largest request header block (a `431` problem above it,
	// `header-too-large`); well below Go's 1 MiB default, so that a flood of
	// large headers stays small
	MaxHeaderBytes int `envconfig:"MAX_HEADER_BYTES" default:"32768"`

	// when set, verify a Google-signed ID token for this audience on `/v1/…`
	// (defence in depth behind Cloud Run IAM); unset, auth is off
	AuthAudience string `envconfig:"AUTH_AUDIENCE"`

	// comma-separated caller emails allowed when auth is on (required with
	// `AUTH_AUDIENCE`)
	AuthAllowedCallers []string `envconfig:"AUTH_ALLOWED_CALLERS"`

	// `none`, `stdout`, or `otlp` (with the standard `OTEL_EXPORTER_OTLP_*`
	// variables)
	OTelExporter string `envconfig:"OTEL_EXPORTER" default:"none"`

	// `debug`, `info`, `warn` or `error`
	LogLevel string `envconfig:"LOG_LEVEL" default:"info"`

	// on SIGTERM: stop taking requests, let the running evaluation finish or
	// hit its deadline, exit within this
	ShutdownTimeout time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"10s"`

	// names the trace in log lines (`projects/P/traces/T`)
	GoogleProject string `envconfig:"GOOGLE_CLOUD_PROJECT"`

	// the `bulk` verb's script reference, `sha256:<hex>`, read from
	// `STORE_URL` (its `-script` overrides it; `docs/batch.md`, "Bulk runs on
	// Cloud Run Jobs")
	BulkScript string `envconfig:"BULK_SCRIPT"`

	// the `bulk` verb's inputs: `gs://bucket/object`, `gs://bucket/prefix/`, a
	// file or a directory of NDJSON (`-inputs` overrides it)
	BulkInputs string `envconfig:"BULK_INPUTS"`

	// where the `bulk` verb writes each shard's results and manifest:
	// `gs://bucket/prefix/` or a directory (`-results` overrides it)
	BulkResults string `envconfig:"BULK_RESULTS"`

	// set by Cloud Run Jobs: this task's shard of the `bulk` verb's inputs, in
	// [0, `CLOUD_RUN_TASK_COUNT`)
	TaskIndex int `envconfig:"CLOUD_RUN_TASK_INDEX" default:"0"`

	// set by Cloud Run Jobs: the number of tasks, each a shard of the inputs
	TaskCount int `envconfig:"CLOUD_RUN_TASK_COUNT" default:"1"`

	// set by Cloud Run Jobs: how many times this task has been retried;
	// recorded in the shard's manifest
	TaskAttempt int `envconfig:"CLOUD_RUN_TASK_ATTEMPT" default:"0"`
}

// Environment is the text of every setting's variable, by its name, as the
// service reads it: the value set (empty included), or the setting's
// default where the variable is not set.
type Environment map[string]string

// ReadEnvironment reads the process's environment with envconfig, into a
// struct of one string field for each of Config's, with its tags: so that
// envconfig reads every value as text, and each is parsed here, where
// every problem is reported at once and in the setting's words (LoadConfig).
// It fails only on a Config envconfig cannot read, which a test rules out.
func ReadEnvironment() (Environment, error) {
	var fields []reflect.StructField
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Config]()) {
		fields = append(fields, reflect.StructField{Name: f.Name, Type: reflect.TypeFor[string](), Tag: f.Tag})
	}
	text := reflect.New(reflect.StructOf(fields))
	if err := envconfig.Process("", text.Interface()); err != nil {
		return nil, fmt.Errorf("reading the environment: %w", err)
	}
	e := Environment{}
	for _, s := range settings() {
		e[s.name] = text.Elem().Field(s.field).String()
	}
	return e, nil
}

// LookupEnvironment reads the variables lookup has (a test's map) as
// ReadEnvironment reads the process's, by the same tags: a variable set,
// even to nothing, is its value; one not set is its default.
func LookupEnvironment(lookup func(name string) (value string, ok bool)) Environment {
	e := Environment{}
	for _, s := range settings() {
		value, ok := lookup(s.name)
		if !ok {
			value = s.def
		}
		e[s.name] = value
	}
	return e
}

// A setting is a field of Config as its declaration says: the variable's
// name and default, the field's index, and how its text is read.
type setting struct {
	name, def string
	field     int
	reader
}

// settings are Config's fields as settings, in their order. A field
// without a variable, or of a type no kind reads, is a mistake in
// Config's declaration, which every test of the package meets.
func settings() []setting {
	var rows []setting
	for i, f := range reflect.VisibleFields(reflect.TypeFor[Config]()) {
		name, ok := f.Tag.Lookup("envconfig")
		if !ok {
			panic("service: Config." + f.Name + " names no environment variable")
		}
		r, ok := readerFor(f)
		if !ok {
			panic("service: Config." + f.Name + " is a " + f.Type.String() + ", which no kind of value reads")
		}
		rows = append(rows, setting{name: name, def: f.Tag.Get("default"), field: i, reader: r})
	}
	return rows
}

// Variables are the names of the environment variables Config reads, in
// the order of its fields.
func Variables() []string {
	var names []string
	for _, s := range settings() {
		names = append(names, s.name)
	}
	return names
}

// Defaults is the configuration of an empty environment.
func Defaults() Config {
	c, _ := parse(Environment{})
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

// parse is e's values as a Config (a variable e lacks is unset, and takes
// its default), and the problem of each variable whose value does not
// parse.
func parse(e Environment) (Config, map[string]error) {
	var c Config
	v := reflect.ValueOf(&c).Elem()
	unparsed := map[string]error{}
	for _, s := range settings() {
		value, ok := e[s.name]
		if !ok {
			value = s.def
		}
		if err := s.apply(v.Field(s.field), s.name, value, s.def); err != nil {
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

// ForOneRun is c for one evaluation from the command line (the eval verb):
// one run at a time and no spare worker, and the process-kill backstop only
// where the engine has it (Linux). Its bounds are c's, so that the run is
// answered as the service c configures would answer it.
func (c Config) ForOneRun() Config {
	c.MaxConcurrentEvaluations, c.WorkerSpares = 1, 0
	c.ProcessKill = c.ProcessKill && runtime.GOOS == "linux"
	return c
}
