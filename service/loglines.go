package service

import (
	"log/slog"
	"slices"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/internal/logline"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// The messages of the service's lines, at ERROR, that say an instance did
// not start: the configuration or the listener refused (serve), and the
// worker processes that do not start (Serve). terraform/monitoring.tf's
// startup_failures metric counts them.
const (
	StartupFailedMessage = "start-up failed"
	WorkersFailedMessage = "the sandbox workers failed to start"
	startupFailedLevel   = slog.LevelError
)

// LogLines describes the lines of the service that the readers of its log
// (terraform/monitoring.tf's log-based metrics and alerts) may select and
// read: the log's interface, which deploy's
// TestLogFiltersReadWhatTheServiceWrites holds the Terraform module to.
// Each comes from the package that writes it.
func LogLines() []logline.Line {
	lines := slices.Concat(handler.LogLines(), answer.LogLines(), worker.LogLines())
	return append(lines,
		logline.Describe(StartupFailedMessage, startupFailedLevel, nil),
		logline.Describe(WorkersFailedMessage, startupFailedLevel, nil),
	)
}
