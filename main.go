// Command sandbox-cloudrun is the sandbox service: it runs untrusted,
// model-written JavaScript in QuickJS-on-wasm behind loom's effect, over
// HTTP, on Cloud Run. Subcommands: serve (the default), put, eval,
// conformance, compile-cache and version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

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

// exitCode is the process's exit status for what run returned: 0 for nil,
// an exitCoder's own code, else 1.
func exitCode(err error) int {
	if err == nil {
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
  conformance --url URL      run the backend conformance kit against a running service: a line per case, exit 1 on any failure
  compile-cache DIR          compile the engine into wazero's compilation cache in DIR
  version                    print the version and the engine's identity
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, stdout, stderr)
	case "put":
		return putCmd(ctx, args, stdin, stdout)
	case "eval":
		return evalCmd(ctx, args, stdin, stdout, stderr)
	case "conformance":
		return conformanceCmd(ctx, args, stdout, stderr)
	case "compile-cache":
		return compileCacheCmd(ctx, args, stdout)
	case "version", "--version", "-version":
		return versionCmd(stdout)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return exitError{2, fmt.Errorf("unknown command %q", cmd)}
	}
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
