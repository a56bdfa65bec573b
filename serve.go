package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"

	"github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// serveCmd is the serve verb: its flags (only -h) and then serve.
func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", serveUsage)
	positional, err := fs.parse(args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(positional) != 0 {
		return fs.usageError(stderr, "serve: takes no arguments (it is configured by environment variables), got %d", len(positional))
	}
	return serve(ctx, stdout, stderr)
}

// serve runs the HTTP service until ctx ends (SIGTERM), then drains.
func serve(ctx context.Context, stdout, stderr io.Writer) error {
	env, err := service.ReadEnvironment()
	if err != nil {
		return err
	}
	cfg, err := service.LoadServeConfig(env)
	// a misspelt setting is ignored, never refused (the platform sets many
	// variables), but said first: it may be why a problem below is one
	lookalikes := service.Lookalikes(os.Environ())
	if err != nil {
		// logged as JSON like every line of the service, once
		log := telemetry.NewLogger(stdout, slog.LevelInfo, "")
		warnLookalikes(log, lookalikes)
		log.Error(service.StartupFailedMessage, "err", err.Error())
		return exitError{1, errSilent}
	}
	level, _ := cfg.Level()
	log := telemetry.NewLogger(stdout, level, cfg.GoogleProject)
	warnLookalikes(log, lookalikes)
	limitProcessors(cfg.MaxConcurrentEvaluations, log)
	srv, err := service.New(ctx, cfg, service.Options{Logger: log, TelemetryOut: stdout, Version: version})
	if err != nil {
		log.Error(service.StartupFailedMessage, "err", err.Error())
		return exitError{1, errSilent}
	}
	ln, err := net.Listen("tcp", ":"+cfg.Port)
	if err != nil {
		srv.Close(context.Background())
		log.Error(service.StartupFailedMessage, "err", fmt.Sprintf("listen on :%s: %v", cfg.Port, err))
		return exitError{1, errSilent}
	}
	return srv.Serve(ctx, ln)
}

// limitProcessors gives the server's Go code at most one processor per
// evaluation that may run at once, unless GOMAXPROCS is set. The server runs
// no guest code: an evaluation's work here is one request's HTTP and JSON,
// done serially, while the guest runs in a worker process with a processor
// of its own. A spare processor in the server did no work of its own: every
// hand-off (the worker's answer to the waiting handler, the handler to the
// connection's writer) woke an idle thread on the other core, which took
// that core from the worker and the client (RATIONALE.md, "A worker's run
// path"). One processor is also what the Go runtime chooses on Cloud Run's
// default of one CPU.
func limitProcessors(maxRuns int, log *slog.Logger) {
	have := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") != "" {
		log.Info("processors", "GOMAXPROCS", have, "source", "GOMAXPROCS")
		return
	}
	if have <= maxRuns {
		log.Info("processors", "GOMAXPROCS", have, "source", "the Go runtime")
		return
	}
	runtime.GOMAXPROCS(maxRuns)
	log.Info("processors", "GOMAXPROCS", runtime.GOMAXPROCS(0), "source", "MAX_CONCURRENT_EVALUATIONS", "from", have)
}

// warnLookalikes logs each environment variable that looks like a misspelt
// setting, by name (a value may be a secret).
func warnLookalikes(log *slog.Logger, ls []service.Lookalike) {
	for _, l := range ls {
		log.Warn(l.String(), "variable", l.Name, "didYouMean", l.Known)
	}
}
