package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/loom-plugins/sandbox-cloudrun/internal/service"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// serve runs the HTTP service until ctx ends (SIGTERM), then drains.
func serve(ctx context.Context, stdout, stderr io.Writer) error {
	cfg, err := service.LoadConfig()
	if err != nil {
		// logged as JSON like every line of the service, once
		telemetry.NewLogger(stdout, slog.LevelInfo, "").Error("start-up failed", "err", err.Error())
		return exitError{1, errSilent}
	}
	level, _ := cfg.Level()
	log := telemetry.NewLogger(stdout, level, cfg.GoogleProject)
	srv, err := service.New(ctx, cfg, service.Options{Logger: log, TelemetryOut: stdout, Version: version})
	if err != nil {
		log.Error("start-up failed", "err", err.Error())
		return exitError{1, errSilent}
	}
	ln, err := net.Listen("tcp", ":"+cfg.Port)
	if err != nil {
		srv.Close(context.Background())
		log.Error("start-up failed", "err", fmt.Sprintf("listen on :%s: %v", cfg.Port, err))
		return exitError{1, errSilent}
	}
	return srv.Serve(ctx, ln)
}
