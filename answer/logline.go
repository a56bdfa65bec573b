package answer

import (
	"context"
	"log/slog"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/logline"
)

// EngineFaultMessage is the message of the line logged at ERROR for each
// evaluation whose engine was broken from inside by its script (an engine
// fault: spi.Report.EngineFault), an operator's alarm (docs/security.md,
// "Engine faults"), by the service and by the verbs that run scripts
// outside it. terraform/monitoring.tf's alert selects it by its message
// and reads its fields, and deploy's TestLogFiltersReadWhatTheServiceWrites
// holds the two together.
const EngineFaultMessage = "engine fault"

const engineFaultLevel = slog.LevelError

// LogLines describes the lines of this package for the readers of the
// service's log (service.LogLines).
func LogLines() []logline.Line {
	return []logline.Line{
		logline.Describe(EngineFaultMessage, engineFaultLevel, engineFaultLine{}),
	}
}

// engineFaultLine is the line of an engine fault: where it ran (the route,
// or a verb's name), the script's hash, by which an operator fetches the
// script from the store to reproduce the fault, and the trap's text; the
// request's id and trace, which every line of a request carries, tie it to
// its evaluation line.
type engineFaultLine struct {
	Route string `log:"route"`
	logline.OfScript
	Trap string `log:"trap"`
}

// LogEngineFault writes the engine fault line of ev's run, whose result
// res has an EngineFault, under where: the route, or, for a verb that
// runs scripts outside the service, the verb's name.
func LogEngineFault(ctx context.Context, log *slog.Logger, where string, ev effect.Evaluation, res effect.Result) {
	log.LogAttrs(ctx, engineFaultLevel, EngineFaultMessage, logline.Attrs(engineFaultLine{
		Route:    where,
		OfScript: logline.OfScript{ScriptSHA256: ScriptRef(ev).String()},
		Trap:     res.EngineFault,
	})...)
}

// ScriptRef is the content reference of the script an evaluation ran,
// sent by reference or by value alike: the hash by which the store holds
// it.
func ScriptRef(ev effect.Evaluation) contentref.Ref {
	if !ev.ScriptRef.IsZero() {
		return ev.ScriptRef
	}
	return contentref.RefOf([]byte(ev.Script))
}
