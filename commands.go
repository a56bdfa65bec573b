package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/internal/service"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

func versionCmd(stdout io.Writer) error {
	_, err := fmt.Fprintf(stdout, "sandbox-cloudrun %s\nengine %s %s\nengine wasm sha256 %s\nspi %s\n",
		version, quickjs.EngineName, quickjs.EngineVersion, quickjs.WasmSHA256(), effect.SPIVersion)
	return err
}

// openStore opens STORE_URL for the CLI verbs.
func openStore(ctx context.Context) (contentstore.Store, service.Config, error) {
	cfg, err := service.LoadConfig()
	if err != nil {
		return nil, cfg, err
	}
	if cfg.StoreURL == "none" {
		return nil, cfg, fmt.Errorf("STORE_URL=none: no script store is configured")
	}
	s, err := service.OpenStore(ctx, cfg.StoreURL, contentstore.Options{MaxScriptBytes: cfg.MaxScriptBytes})
	return s, cfg, err
}

func putCmd(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return exitError{2, fmt.Errorf("put: name at least one FILE (or - for standard input)")}
	}
	s, _, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	return contentstore.PutFiles(ctx, s, args, stdin, stdout)
}

// compileCacheCmd compiles the embedded engine into wazero's compilation
// cache, so a process started with COMPILATION_CACHE_DIR skips compiling.
func compileCacheCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return exitError{2, fmt.Errorf("compile-cache: want exactly one DIR")}
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

// evalCmd evaluates one script once, through the effect, and prints the
// outcome as the /v1/evaluations route would.
func evalCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", stderr)
	input := fs.String("input", "null", "the input as JSON text")
	inputFile := fs.String("input-file", "", "read the input JSON from this file (- for standard input)")
	wall := fs.Duration("wall-clock", 5*time.Second, "wall-clock limit")
	mem := fs.Int64("memory", 64<<20, "memory limit in bytes")
	shape := fs.String("shape", "", "expected output shape hash (sha256:…)")
	logs := fs.Bool("logs", false, "print the script's console output to standard error")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sandbox-cloudrun eval [flags] SCRIPT_FILE|sha256:REF")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitError{2, err}
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError{2, fmt.Errorf("eval: want exactly one script file or reference")}
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
			return fmt.Errorf("eval: input: %w", err)
		}
	}
	if err := jsontext.Validate(in); err != nil {
		return exitError{2, fmt.Errorf("eval: the input is not valid JSON: %w", err)}
	}

	var store contentstore.Store
	ref := fs.Arg(0)
	if strings.HasPrefix(ref, "sha256:") {
		s, _, err := openStore(ctx)
		if err != nil {
			return err
		}
		store = s
	} else {
		src, err := os.ReadFile(ref)
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		m, err := contentstore.NewMemStore(contentstore.Options{MaxScriptBytes: int64(len(src)) + 1})
		if err != nil {
			return err
		}
		r, err := m.Put(ctx, src)
		if err != nil {
			return err
		}
		store, ref = m, r.String()
	}
	defer store.Close()

	// the script runs as the service's do: in a locked-down worker process
	eo := service.Defaults().EngineOptions()
	eo.MaxMemoryBytes = max(*mem, eo.MaxMemoryBytes)
	eo.ProcessKill = runtime.GOOS == "linux"
	pool, err := worker.New(worker.Options{
		Engine:     eo,
		Concurrent: 1,
		Lockdown:   worker.LockdownRequired,
	})
	if err != nil {
		return err
	}
	defer pool.Close(ctx)
	if err := pool.Warm(ctx); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	var captured string
	backend := &logCapture{Pool: pool, want: *logs, logs: &captured}
	eff, err := effect.New(store, backend, effect.Options{})
	if err != nil {
		return err
	}
	value, err := eff.Evaluate(ctx, effect.Input{ScriptRef: ref, Input: jsontext.Text(in),
		Limits: effect.Limits{WallClock: *wall, MemoryBytes: *mem}, ExpectedOutputShapeHash: *shape})
	if *logs && captured != "" {
		fmt.Fprint(stderr, captured)
	}
	var out any
	var failure *effect.Failure
	switch {
	case err == nil:
		out = map[string]any{"ok": true, "value": value}
	case errors.As(err, &failure):
		out = map[string]any{"ok": false, "failure": failure}
	default:
		return fmt.Errorf("eval: %w (retryable: %v)", err, effect.Retryable(err))
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintln(stdout, string(b))
	if failure != nil {
		return exitError{3, errSilent}
	}
	return nil
}

// logCapture is the worker as the eval verb's backend, keeping the run's
// console output when asked.
type logCapture struct {
	*worker.Pool
	want bool
	logs *string
}

func (l *logCapture) Evaluate(ctx context.Context, req effect.Request) (effect.Outcome, error) {
	if !l.want {
		return l.Pool.Evaluate(ctx, req)
	}
	out, logs, err := l.Pool.EvaluateWithLogs(ctx, req)
	*l.logs = logs
	return out, err
}
