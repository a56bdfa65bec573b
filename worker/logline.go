package worker

import (
	"log/slog"

	"github.com/loom-plugins/sandbox-cloudrun/internal/logline"
)

// HardKillEvent is the event of the lines the pool logs, at ERROR, each
// time it ends a worker whose run did not stop at its deadline (a hard
// kill, docs/hard-kill.md): terraform/monitoring.tf's hard_kills metric
// counts the lines that carry it.
const HardKillEvent = "hardKill"

// The messages of the hard kill's lines: a kill the pool decided, and a
// worker that retired because its own engine abandoned a run.
const (
	killedMessage  = "killed a sandbox worker whose run did not stop at its deadline"
	retiredMessage = "a sandbox worker retired: its engine abandoned a run inside the guest"
	hardKillLevel  = slog.LevelError
)

// hardKillLine is the line of a hard kill: its event and the worker's pid,
// and for a kill the pool decided, the script's hash, the run's wall clock
// and grace, and whether its caller had cancelled it. The request's id and
// trace, which the run's context carries, tie it to its evaluation.
type hardKillLine struct {
	Event string `log:"event"`
	PID   int    `log:"pid"`
	logline.OfScript
	WallClock string `log:"wallClock,omitempty"`
	Grace     string `log:"grace,omitempty"`
	Cancelled *bool  `log:"cancelled,omitempty"`
}

// LogLines describes the lines the pool writes for the readers of the
// service's log.
func LogLines() []logline.Line {
	proto := hardKillLine{Event: HardKillEvent}
	return []logline.Line{
		logline.Describe(killedMessage, hardKillLevel, proto),
		logline.Describe(retiredMessage, hardKillLevel, proto),
	}
}
