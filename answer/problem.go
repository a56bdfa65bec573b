// Package answer is the answer to one evaluation, wherever it runs: the
// problem an error of a run is answered with (Problem, the one mapping of
// the service's routes and of the verbs that run scripts), a batch
// input's line (Item) and a batch's lines and summary (Batch), which POST
// /v1/evaluations:batch, eval -inputs and the bulk verb write alike, and
// the log lines an evaluation leaves: its evaluation line (Evaluation),
// which each input of a batch has too, wherever it ran (LogItem), and its
// engine fault's (LogEngineFault). It knows the effect and the wire format
// (api), not the HTTP server: the handler, eval and bulk stand on it, and
// it on none of them.
package answer

import (
	"errors"
	"fmt"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Problem maps an error of a run, or of its answer, to the problem POST
// /v1/evaluations answers it with, under the server's limits lim. The
// detail is the effect's own bounded text, except where it would show the
// store's internals or a panic's value (the cause, which the log line
// carries).
func Problem(lim api.Limits, err error) *api.Problem {
	var nr *effect.NotRunError
	if errors.As(err, &nr) {
		return notRunProblem(lim, nr)
	}
	text := err.Error()
	switch {
	case errors.Is(err, spi.ErrValueNotJSON):
		return api.NewProblem(api.ProblemMalformedOutcome,
			"the engine returned an outcome outside the SPI's closed vocabulary: "+text).WithCause(err)
	case errors.Is(err, effect.ErrInvalidInput):
		return api.NewProblem(api.ProblemInvalidRequest, text)
	case errors.Is(err, effect.ErrBackendDidNotSettle):
		return api.NewProblem(api.ProblemBackendDidNotSettle, text+"; a retry may succeed").WithCause(err)
	case errors.Is(err, effect.ErrBackendPanicked):
		return api.NewProblem(api.ProblemInternal, "internal error").WithCause(err)
	case errors.Is(err, effect.ErrMalformedOutcome):
		return api.NewProblem(api.ProblemMalformedOutcome, text).WithCause(err)
	case errors.Is(err, effect.ErrBackendFailed) && effect.Retryable(err):
		return api.NewProblem(api.ProblemBackendUnavailable, text+"; a retry may succeed").WithCause(err)
	case errors.Is(err, effect.ErrBackendFailed):
		return api.NewProblem(api.ProblemBackendFailed, text).WithCause(err)
	}
	return api.NewProblem(api.ProblemInternal, "internal error").WithCause(err)
}

// notRunProblem maps each way a script never ran to its problem.
func notRunProblem(lim api.Limits, nr *effect.NotRunError) *api.Problem {
	ref := nr.ScriptRef
	switch nr.Reason {
	case effect.ScriptNotFound:
		return api.NewProblem(api.ProblemScriptNotFound,
			fmt.Sprintf("no script is stored under %s; store it first (the put command)", ref)).WithField("scriptRef").WithCause(nr)
	case effect.NoScriptStore:
		return api.NewProblem(api.ProblemNoScriptStore,
			`no script store configured: this server runs scripts sent by value only (POST /v1/sandbox/evaluate with "script")`)
	case effect.StoreUnavailable:
		return api.NewProblem(api.ProblemStoreUnavailable,
			fmt.Sprintf("the script store did not answer for %s; a retry may succeed", ref)).WithCause(nr)
	case effect.ScriptTooLarge:
		return storedScriptTooLarge(lim, nr)
	case effect.ScriptIntegrity:
		return api.NewProblem(api.ProblemScriptIntegrity,
			fmt.Sprintf("the bytes the store holds under %s do not hash to that reference; the script was not run, and a retry cannot help until the stored object is repaired", ref)).WithCause(nr)
	case effect.StoreRefused:
		return api.NewProblem(api.ProblemStoreFailed,
			fmt.Sprintf("the script store refused access while reading %s (a configuration problem)", ref)).WithCause(nr)
	case effect.StorePanicked:
		// a bug in the store, logged with its stack where it was recovered;
		// answered as a panic in the handler or the engine is
		return api.NewProblem(api.ProblemInternal, "internal error").WithCause(nr)
	case effect.StoreFailed:
		return api.NewProblem(api.ProblemStoreFailed,
			fmt.Sprintf("the script store failed while reading %s", ref)).WithCause(nr)
	}
	return api.NewProblem(api.ProblemInternal, "internal error").WithCause(nr)
}

// storedScriptTooLarge is the 413 for a stored script over a bound. It names
// the server's maxScriptBytes (the limit member and the number) when that
// bound applied: the store's own maximum is the same or larger (the service
// opens the store with MAX_SCRIPT_BYTES), or is not known. A store whose
// maximum is below the server's is named as such.
func storedScriptTooLarge(lim api.Limits, nr *effect.NotRunError) *api.Problem {
	head := fmt.Sprintf("the script stored under %s is", nr.ScriptRef)
	if nr.Size >= 0 {
		head = fmt.Sprintf("the script stored under %s is %d bytes,", nr.ScriptRef, nr.Size)
	}
	if nr.StoreLimit {
		return api.NewProblem(api.ProblemScriptTooLarge,
			fmt.Sprintf("%s over the store's maximum script size of %d bytes (below the server's maxScriptBytes of %d)",
				head, nr.Limit, lim.MaxScriptBytes)).WithField("scriptRef").WithCause(nr)
	}
	return api.NewProblem(api.ProblemScriptTooLarge,
		fmt.Sprintf("%s over the server's maxScriptBytes of %d", head, lim.MaxScriptBytes)).
		WithLimit("maxScriptBytes", lim.MaxScriptBytes).WithField("scriptRef").WithCause(nr)
}
