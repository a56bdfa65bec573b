package handler

import (
	"log/slog"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/internal/logline"
)

// The line of every request that is no evaluation, an interface as an
// evaluation's lines are (package answer): terraform/monitoring.tf's
// log-based metrics select it by its message and read its fields.
const (
	// RequestMessage is the message of the line of every request to no
	// evaluation route (requestLine), at INFO; DEBUG for the platform's
	// probes. An evaluation's line is answer.EvaluationMessage's.
	RequestMessage = "request"
	probeLevel     = slog.LevelDebug
)

// LogLines describes the lines the handler writes, besides those of
// package answer (answer.LogLines), for the readers of the service's log.
func LogLines() []logline.Line {
	return []logline.Line{
		logline.Describe(RequestMessage, probeLevel, requestLine{}),
	}
}

// requestLine is the line of a request to no evaluation route, with its
// method, and its path when no route matched. A header block over the
// server's cap (HeaderLimitListener) is refused before its request line is
// read: its line has neither.
type requestLine struct {
	answer.Request
	Method string `log:"method,omitempty"`
	Path   string `log:"path,omitempty"`
}

// unmatchedRoute is the route of a line of a request that matched none.
const unmatchedRoute = "unmatched"
