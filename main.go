// Command sandbox-cloudrun is the sandbox service: it runs untrusted,
// model-written JavaScript in QuickJS-on-wasm behind loom's effect, over
// HTTP, on Cloud Run. Subcommands: serve (the default), put, eval, bulk,
// bulk-check, conformance, compile-cache and version.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

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

const commandsUsage = `usage: sandbox-cloudrun [command] [arguments]

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
		fmt.Fprint(stdout, commandsUsage)
		return nil
	default:
		fmt.Fprint(stderr, commandsUsage)
		return exitError{2, fmt.Errorf("unknown command %q", cmd)}
	}
}
