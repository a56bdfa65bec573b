package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/internal/ndjson"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// The synopses of the verbs that evalUsage and conformanceUsage do not
// cover, with their exit statuses.
const (
	versionUsage = `usage: sandbox-cloudrun version

Prints the version, the engine's name, version and wasm hash, and the SPI
version.

exit status:
  0  printed
  2  a usage error`

	putUsage = `usage: sandbox-cloudrun put FILE...

Stores each script under its content address in STORE_URL and prints a
"REF  FILE" line for it; "-" reads a script from standard input.

exit status:
  0  every script was stored
  1  a script could not be read or stored, or the store could not be opened;
     standard error says which and why
  2  a usage error: no FILE`

	compileCacheUsage = `usage: sandbox-cloudrun compile-cache DIR

Compiles the engine into wazero's compilation cache in DIR (created if
missing), so that a service started with COMPILATION_CACHE_DIR=DIR skips
compiling it (the Dockerfile bakes it into the image).

exit status:
  0  compiled
  1  DIR could not be created or the engine could not be compiled
  2  a usage error: not exactly one DIR`

	serveUsage = `usage: sandbox-cloudrun serve

Runs the HTTP service until SIGTERM or an interrupt; the default verb, which
sandbox-cloudrun with no verb runs too. It is
configured by environment variables (README.md, "Configuration"), which it
checks all at once before it starts.

exit status:
  0  served, and shut down when told to
  1  the configuration was refused, or the service failed; the log says why
  2  a usage error`
)

// version is stamped by the build: -ldflags "-X main.version=…".
var version = "dev"

func versionCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", versionUsage)
	positional, err := fs.parse(args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(positional) != 0 {
		return fs.usageError(stderr, "version: takes no arguments, got %d", len(positional))
	}
	_, err = fmt.Fprintf(stdout, "sandbox-cloudrun %s\nengine %s %s\nengine wasm sha256 %s\nspi %s\n",
		version, quickjs.EngineName, quickjs.EngineVersion, quickjs.WasmSHA256(), spi.SPIVersion)
	return err
}

// loadConfig reads the configuration from the environment, as serve does,
// for the verb named verb. It first prints on stderr what serve logs as
// warnings: each variable that looks like a misspelt setting, by name (a
// value may be a secret); it may be why the configuration is not the one
// meant, or why a problem it reports is one.
func loadConfig(verb string, stderr io.Writer) (service.Config, error) {
	for _, l := range service.Lookalikes(os.Environ()) {
		fmt.Fprintf(stderr, "%s: warning: %s\n", verb, l)
	}
	env, err := service.ReadEnvironment()
	if err != nil {
		return service.Config{}, err
	}
	return service.LoadConfig(env)
}

// openStore opens STORE_URL for the put verb.
func openStore(ctx context.Context, stderr io.Writer) (contentstore.Store, service.Config, error) {
	cfg, err := loadConfig("put", stderr)
	if err != nil {
		return nil, cfg, err
	}
	if cfg.StoreURL == "none" {
		return nil, cfg, fmt.Errorf("STORE_URL=none: no script store is configured")
	}
	s, err := service.OpenStore(ctx, cfg.StoreURL, contentstore.Options{MaxScriptBytes: cfg.MaxScriptBytes})
	return s, cfg, err
}

func putCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("put", putUsage)
	args, err := fs.parse(args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fs.usageError(stderr, "put: name at least one FILE (or - for standard input)")
	}
	s, _, err := openStore(ctx, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	return contentstore.PutFiles(ctx, s, args, stdin, stdout)
}

// compileCacheCmd compiles the embedded engine into wazero's compilation
// cache, so a process started with COMPILATION_CACHE_DIR skips compiling.
func compileCacheCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compile-cache", compileCacheUsage)
	args, err := fs.parse(args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return fs.usageError(stderr, "compile-cache: want exactly one DIR, got %d arguments", len(args))
	}
	if err := os.MkdirAll(args[0], 0o755); err != nil {
		return fmt.Errorf("compile-cache: %w", err)
	}
	start := time.Now()
	e, err := quickjs.New(ctx, quickjs.WithCompilationCache(args[0]), quickjs.WithPoolSize(0))
	if err != nil {
		return err
	}
	defer e.Close(ctx)
	if err := e.Warm(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "compiled %s %s into %s in %v\n", quickjs.EngineName, quickjs.EngineVersion, args[0], time.Since(start).Round(time.Millisecond))
	return err
}

// evalUsage is the eval verb's synopsis, with its exit statuses.
const evalUsage = `usage: sandbox-cloudrun eval [flags] SCRIPT_FILE|sha256:REF

Evaluates the script once, through the service that serve runs, configured
by the same environment variables, and prints the answer POST
/v1/evaluations would send for it. A reference is read from STORE_URL.
Flags may come before or after the script.

-wall-clock and -memory are the request's limits.wallClockMs and
limits.memoryBytes, and are answered as the service answers those: left
out, the run gets DEFAULT_WALL_CLOCK and DEFAULT_MEMORY_BYTES; one above
MAX_WALL_CLOCK or MAX_MEMORY_BYTES runs at that maximum (standard error
says so); a memory limit below the engine's minMemoryBytes is answered as
the memory limit.

With -inputs FILE, the script runs over each input of FILE (NDJSON: one
JSON value a line), each in a fresh run, and eval prints the lines POST
/v1/evaluations:batch answers for them (docs/batch.md): one per input in
order, then the summary; -logs then puts each run's console output in its
line. Each input's evaluation line, as the service logs it, with its
index and its source (FILE:line, -:line for standard input), goes to
standard error in the service's log format (LOG_LEVEL). When standard
error is a terminal, a bar on its last line says how many inputs are done,
the rate and the time left; piped, it has none. Its statuses are
the worst of the lines': 0 when every input's value was printed, 3 when a
typed failure was, 1 when an input had a problem or was not run
(interrupted), or the batch could not begin.

exit status:
  0  the script's value was printed
  3  a typed failure was printed (limitExceeded, scriptError, shapeMismatch,
     scriptMissing, inputTooLarge): the script ran, or was refused, as the
     service would answer it
  2  a usage error: a flag or an argument is wrong (-wall-clock not a
     positive whole number of milliseconds, -memory not a positive number
     of bytes), the script or input file cannot be read, or -inputs holds
     more than MAX_BATCH_ITEMS inputs; nothing ran
  1  no answer: the script could not be run (the configuration, the store or
     the engine failed); standard error says why and whether a retry can
     help, and says "engine fault" when the script broke the engine from
     inside (docs/security.md, "Engine faults")`

// evalCmd evaluates one script once, through the service that serve runs
// (service.New), and prints the answer POST /v1/evaluations would send for
// it, byte for byte. Its exit statuses are evalUsage's.
func evalCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", evalUsage)
	input := fs.String("input", "null", "the input as JSON text")
	inputFile := fs.String("input-file", "", "read the input JSON from this file (- for standard input)")
	inputsFile := fs.String("inputs", "", "run the script over each input of this NDJSON file, one JSON value a line (- for standard input), and print the lines POST /v1/evaluations:batch answers")
	rf := fs.runFlags("the input")
	logs := fs.Bool("logs", false, "print the script's console output to standard error")
	positional, err := fs.parse(args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return fs.usageError(stderr, "eval: want exactly one script file or reference, got %d arguments", len(positional))
	}
	if err := rf.check(fs, stderr); err != nil {
		return err
	}
	var inputs []ndjson.Input
	if *inputsFile != "" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if set["input"] || set["input-file"] {
			return fs.usageError(stderr, "eval: -inputs runs a batch: give it without -input and -input-file")
		}
		if inputs, err = readInputs(*inputsFile, stdin, stderr); err != nil {
			return exitError{2, fmt.Errorf("eval: -inputs: %w", err)}
		}
	}
	in := []byte(*input)
	if *inputFile != "" {
		var err error
		if *inputFile == "-" {
			in, err = io.ReadAll(io.LimitReader(stdin, 64<<20))
		} else {
			in, err = os.ReadFile(*inputFile)
		}
		if err != nil {
			return exitError{2, fmt.Errorf("eval: input: %w", err)}
		}
	}
	if err := jsontext.Validate(in); err != nil {
		return exitError{2, fmt.Errorf("eval: the input is not valid JSON: %w", err)}
	}
	ev := spi.Evaluation{Input: jsontext.Text(in), ExpectedOutputShapeHash: *rf.shape, CaptureLogs: *logs}
	if ev.Replay, err = rf.replay(fs, stderr); err != nil {
		return err
	}

	cfg, err := loadConfig("eval", stderr)
	if err != nil {
		return err
	}
	if max := cfg.Limits().MaxBatchItems; int64(len(inputs)) > max {
		return exitError{2, fmt.Errorf("eval: -inputs has %d inputs, more than MAX_BATCH_ITEMS=%d, the most one batch holds (the route answers 413 too-many-inputs): raise MAX_BATCH_ITEMS for this run, or run them with the bulk verb, which takes any number (docs/batch.md, \"Bulk runs on Cloud Run Jobs\")", len(inputs), max)}
	}
	ev.Limits = rf.limits(cfg, fs.Name(), stderr)
	if script := positional[0]; strings.HasPrefix(script, "sha256:") {
		if ev.ScriptRef, err = contentref.ParseRef(script); err != nil {
			return exitError{2, fmt.Errorf("eval: %w", err)}
		}
		if cfg.StoreURL == "none" {
			return fmt.Errorf("STORE_URL=none: no script store is configured")
		}
	} else {
		src, err := os.ReadFile(script)
		if err != nil {
			return exitError{2, fmt.Errorf("eval: %w", err)}
		}
		ev.Script, cfg.StoreURL = string(src), "none" // sent by value: no store to open
	}
	svc, err := service.New(ctx, cfg.ForOneRun(), service.Options{Version: version})
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	defer svc.Close(context.Background())
	if err := svc.Warm(ctx); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if *inputsFile != "" {
		return evalBatch(ctx, svc.Effect, cfg, ev, inputs, stdout, stderr)
	}
	res, runErr := svc.Effect.Run(ctx, ev)
	if *logs && res.Logs != "" {
		fmt.Fprint(stderr, res.Logs)
	}
	reportEngineFault(stderr, ev, res)
	out, err := api.AppendEvaluationResult(nil, res.Value, nil, res.Usage, runErr)
	if err != nil {
		return fmt.Errorf("eval: %w (retryable: %v)", err, effect.Retryable(err))
	}
	if _, err := stdout.Write(append(out, '\n')); err != nil {
		return err
	}
	var f *spi.Failure
	if errors.As(runErr, &f) {
		return exitError{3, errSilent} // a typed failure, answered above
	}
	return nil
}

// runFlags are the flags of a run that the verbs which run scripts share:
// the members of a request's evaluation but its script and input.
type runFlags struct {
	wall             *time.Duration
	mem              *int64
	shape, seed, now *string
	replayable       *bool
	set              map[string]bool // the flags given, once parsed
}

// runFlags defines the run's flags; input names what a run's input is,
// from which a replay's seed is derived by default.
func (fs *verbFlags) runFlags(input string) runFlags {
	return runFlags{
		wall:       fs.optionalDuration("wall-clock", 5*time.Second, "the wall-clock limit, with its unit, as limits.wallClockMs (default DEFAULT_WALL_CLOCK; one above MAX_WALL_CLOCK runs at it)"),
		mem:        fs.Int64("memory", 0, "the memory limit in bytes, as limits.memoryBytes (default DEFAULT_MEMORY_BYTES; one above MAX_MEMORY_BYTES runs at it)"),
		shape:      fs.String("shape", "", "expected output shape hash (sha256:…)"),
		replayable: fs.Bool("deterministic", false, "a replayable run: Math.random seeded, every clock frozen (docs/spi.md, \"Replayable runs\"); -seed or -now imply it"),
		seed:       fs.String("seed", "", "the seed of a replayable run (default: derived from the script and "+input+")"),
		now:        fs.String("now", "", "the instant every clock of a replayable run reads, RFC 3339 (default "+spi.DefaultReplayNow+")"),
	}
}

// check refuses, as a usage error, a limit out of the range of the
// request's member it stands for; fs has been parsed.
func (r *runFlags) check(fs *verbFlags, stderr io.Writer) error {
	r.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { r.set[f.Name] = true })
	// the ranges of the route's limits.wallClockMs and limits.memoryBytes
	if r.set["wall-clock"] && (*r.wall <= 0 || *r.wall%time.Millisecond != 0) {
		return fs.usageError(stderr, "%s: -wall-clock must be a positive whole number of milliseconds, as limits.wallClockMs is (one above MAX_WALL_CLOCK runs at it), got %v", fs.Name(), *r.wall)
	}
	if r.set["memory"] && *r.mem <= 0 {
		return fs.usageError(stderr, "%s: -memory must be a positive whole number of bytes, as limits.memoryBytes is (one above MAX_MEMORY_BYTES runs at it), got %d", fs.Name(), *r.mem)
	}
	return nil
}

// replay is the run's determinism, nil for none; a seed or instant the
// route would refuse is a usage error.
func (r *runFlags) replay(fs *verbFlags, stderr io.Writer) (*spi.Replay, error) {
	if !*r.replayable && *r.seed == "" && *r.now == "" {
		return nil, nil
	}
	rp := &spi.Replay{Seed: *r.seed}
	if *r.now != "" {
		var err error
		if rp.Now, err = spi.ParseReplayNow(*r.now); err != nil {
			return nil, fs.usageError(stderr, "%s: -now %v", fs.Name(), err)
		}
	}
	if err := rp.Check(); err != nil {
		return nil, fs.usageError(stderr, "%s: -%v", fs.Name(), err)
	}
	return rp, nil
}

// limits are the limits of the verb's runs, as the service reads a
// request's: a limit left out is the configuration's default; one above the
// configuration's maximum is kept as it is, for the effect to run it at the
// maximum, as it runs a request's (api's decodeLimits), and w is told so.
func (r *runFlags) limits(cfg service.Config, verb string, w io.Writer) spi.Limits {
	l := spi.Limits{WallClock: cfg.DefaultWallClock, MemoryBytes: cfg.DefaultMemoryBytes}
	if r.set["wall-clock"] {
		l.WallClock = *r.wall
		if l.WallClock > cfg.MaxWallClock {
			fmt.Fprintf(w, "%s: -wall-clock %v is above MAX_WALL_CLOCK: the run gets %v, as the service's would\n", verb, l.WallClock, cfg.MaxWallClock)
		}
	}
	if r.set["memory"] {
		l.MemoryBytes = *r.mem
		if l.MemoryBytes > cfg.MaxMemoryBytes {
			fmt.Fprintf(w, "%s: -memory %d is above MAX_MEMORY_BYTES: the run gets %d, as the service's would\n", verb, l.MemoryBytes, cfg.MaxMemoryBytes)
		}
	}
	return l
}

// reportEngineFault says on w, when the run was an engine fault, what the
// service's ERROR line says (answer.EngineFaultMessage): the script broke
// the engine from inside, which script, and the trap's text. The answer
// itself is the infrastructure failure evalCmd reports after it.
func reportEngineFault(w io.Writer, ev spi.Evaluation, res effect.Result) {
	if res.EngineFault == "" {
		return
	}
	fmt.Fprintf(w, "eval: %s: the script %s broke the engine from inside: %s (docs/security.md, \"Engine faults\")\n",
		answer.EngineFaultMessage, answer.ScriptRef(ev), res.EngineFault)
}
