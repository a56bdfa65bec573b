// Command sandbox-cloudrun is the sandbox service: it runs untrusted,
// model-written JavaScript in QuickJS-on-wasm behind loom's effect, over
// HTTP, on Cloud Run. Subcommands: serve (the default), put, eval, bulk,
// bulk-check, conformance, compile-cache and version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// version is stamped by the build: -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == worker.Verb {
		// a worker process, started by serve: no signals, no flags, no
		// environment (it has none)
		os.Exit(worker.Main())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errSilent) {
			fmt.Fprintln(os.Stderr, "sandbox-cloudrun:", err)
		}
		os.Exit(exitCode(err))
	}
}

// exitCode is the process's exit status for what run returned: 0 for nil
// (or a verb that printed the usage it was asked for), an exitCoder's own
// code, else 1.
func exitCode(err error) int {
	if err == nil || errors.Is(err, errHelp) {
		return 0
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}

// errSilent ends the process with a failure that has already been reported.
var errSilent = errors.New("failed")

type exitCoder interface{ ExitCode() int }

type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }
func (e exitError) ExitCode() int { return e.code }

const usage = `usage: sandbox-cloudrun [command] [arguments]

commands:
  serve                      run the HTTP service (the default); configured by environment variables (README.md)
  put FILE...                store scripts under their content address in STORE_URL; "-" reads standard input
  eval [flags] SCRIPT        evaluate a script file or a sha256: reference once and print the outcome
  bulk [flags]               run a Cloud Run job task's shard of NDJSON inputs and write its results and manifest
  bulk-check -results URL    check that a bulk run's results are one whole run's, and print their lines in index order
  conformance --url URL      run the backend conformance kit against a running service: a line per case, exit 1 on any failure
  compile-cache DIR          compile the engine into wazero's compilation cache in DIR
  version                    print the version and the engine's identity
`

// run runs the verb args name; a verb that printed the usage it was asked
// for has succeeded.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := dispatch(ctx, args, stdin, stdout, stderr); !errors.Is(err, errHelp) {
		return err
	}
	return nil
}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serveCmd(ctx, args, stdout, stderr)
	case "put":
		return putCmd(ctx, args, stdin, stdout, stderr)
	case "eval":
		return evalCmd(ctx, args, stdin, stdout, stderr)
	case "bulk":
		return bulkCmd(ctx, args, stdout, stderr)
	case "bulk-check":
		return bulkCheckCmd(ctx, args, stdout, stderr)
	case "conformance":
		return conformanceCmd(ctx, args, stdout, stderr)
	case "compile-cache":
		return compileCacheCmd(ctx, args, stdout, stderr)
	case "version", "--version", "-version":
		return versionCmd(args, stdout, stderr)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return exitError{2, fmt.Errorf("unknown command %q", cmd)}
	}
}

// verbFlags are a verb's flags and the first line of its usage.
type verbFlags struct {
	*flag.FlagSet
	synopsis string // "usage: sandbox-cloudrun eval [flags] SCRIPT", and what the verb does
}

func newFlagSet(name, synopsis string) *verbFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports its errors itself
	fs.Usage = func() {}
	return &verbFlags{FlagSet: fs, synopsis: synopsis}
}

// usage writes the verb's synopsis and its flags to w.
func (fs *verbFlags) usage(w io.Writer) {
	fmt.Fprintln(w, fs.synopsis)
	if !fs.hasFlags() {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// shortUsage writes the synopsis's first line and where the rest is, for a
// usage error, whose own line follows. It names the flags only for a verb
// that has some.
func (fs *verbFlags) shortUsage(w io.Writer) {
	first, _, _ := strings.Cut(fs.synopsis, "\n")
	what := "the usage and the exit statuses"
	if fs.hasFlags() {
		what = "the flags and the exit statuses"
	}
	fmt.Fprintf(w, "%s\n(sandbox-cloudrun %s -h prints %s)\n", first, fs.Name(), what)
}

// hasFlags reports whether the verb defines any flag.
func (fs *verbFlags) hasFlags() bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse reads args, whose flags may come before, between or after the
// positional arguments ("--" ends the flags), and returns the positional
// arguments. -h, -help or --help prints the usage to stdout and returns
// errHelp, for the verb to return as it is: run ends with status 0. Any
// other mistake prints the usage to stderr and is a usage error (status 2).
func (fs *verbFlags) parse(args []string, stdout, stderr io.Writer) ([]string, error) {
	var positional []string
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			fs.usage(stdout)
			return nil, errHelp
		case err != nil:
			fs.shortUsage(stderr)
			return nil, exitError{2, fmt.Errorf("%s: %w", fs.Name(), err)}
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
}

// durationFlag is a flag that reads a duration as the configuration reads
// one (service.ParseDuration), so that a value without its unit says so.
type durationFlag struct {
	d   *time.Duration
	def time.Duration
}

// duration defines a duration flag, with def as its default and example.
func (fs *verbFlags) duration(name string, def time.Duration, usage string) *time.Duration {
	d := def
	fs.Var(durationFlag{&d, def}, name, usage)
	return &d
}

// optionalDuration defines a duration flag with no default: zero until it
// is set, with example as the example its error gives.
func (fs *verbFlags) optionalDuration(name string, example time.Duration, usage string) *time.Duration {
	var d time.Duration
	fs.Var(durationFlag{&d, example}, name, usage)
	return &d
}

// String is the flag's value; a zero one is no value, which the usage
// does not print as a default.
func (f durationFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(value string) error {
	d, err := service.ParseDuration(value, f.def)
	if err != nil {
		return fmt.Errorf("must be %w", err)
	}
	*f.d = d
	return nil
}

// errHelp ends a verb whose usage was asked for and printed: not a failure.
var errHelp = errors.New("help printed")

// usageError prints the verb's synopsis to stderr and returns the error as
// a usage error (status 2).
func (fs *verbFlags) usageError(stderr io.Writer, format string, args ...any) error {
	fs.shortUsage(stderr)
	return exitError{2, fmt.Errorf(format, args...)}
}
