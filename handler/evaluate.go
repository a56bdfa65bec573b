package handler

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// decoder reads a route's request body, with the server's limits, into the
// evaluation it asks for, or refuses it with the *api.Problem to answer.
type decoder func(body []byte, l api.Limits) (effect.Evaluation, error)

// encoder writes a route's 200 answer for what Effect.Run returned, or
// returns the error that is no answer of the route.
type encoder func(dst []byte, ev effect.Evaluation, res effect.Result, err error) ([]byte, error)

// appendEvaluation is POST /v1/evaluations' answer: the effect's decision,
// with the logs when the request asked for them.
func appendEvaluation(dst []byte, ev effect.Evaluation, res effect.Result, err error) ([]byte, error) {
	var logs *string
	if ev.CaptureLogs {
		logs = &res.Logs
	}
	return api.AppendEvaluationResult(dst, res.Value, logs, res.Usage, err)
}

// appendOutcome is POST /v1/sandbox/evaluate's answer: the outcome
// object, exactly, for the caller's effect to decide on.
func appendOutcome(dst []byte, ev effect.Evaluation, res effect.Result, err error) ([]byte, error) {
	if err != nil {
		return dst, err
	}
	a := api.SandboxAnswer{Outcome: res.Outcome, Usage: &res.Usage}
	if ev.CaptureLogs {
		a.Logs = &res.Logs
	}
	return api.AppendSandboxAnswer(dst, a)
}

// evaluations serves POST /v1/evaluations: the effect over HTTP. The answer
// is the effect's decision: the value, or the typed failure.
func (s *server) evaluations(w http.ResponseWriter, r *http.Request) {
	s.evaluate(w, r, api.DecodeEvaluationRequest, appendEvaluation)
}

// sandboxEvaluate serves POST /v1/sandbox/evaluate: the backend SPI over HTTP
// (docs/spi.md, "The backend"), for loom's effect using this service as its backend. The
// answer is the engine's outcome object (D2), exactly, from the same run as
// /v1/evaluations'; its value is returned whole (MaxOutputBytes bounds
// /v1/evaluations only: here the caller's effect bounds the output), up to
// what a run within the memory maximum can make.
func (s *server) sandboxEvaluate(w http.ResponseWriter, r *http.Request) {
	s.evaluate(w, r, api.DecodeSandboxRequest, appendOutcome)
}

// evaluate serves an evaluation route: decode, run, encode. Every outcome of
// the script is a 200, typed failures included; everything else is a problem
// that says whether a retry can help (problemFor), and a request whose
// context ended gets what stopped says.
func (s *server) evaluate(w http.ResponseWriter, r *http.Request, decode decoder, encode encoder) {
	rec := s.startEval(r)
	body, ok := s.requestBody(w, r)
	if !ok {
		return
	}
	ev, err := decode(body, s.lim)
	if err != nil {
		var refused *api.Problem
		if !errors.As(err, &refused) {
			refused = api.NewProblem(api.ProblemInternal, "internal error").WithCause(err)
		}
		writeProblem(w, r, refused)
		return
	}
	res, runErr := s.cfg.Effect.Run(r.Context(), ev)
	*rec = evalRecord{ran: true, ev: ev, res: res, err: runErr}
	setServerTiming(w.Header(), res.Usage)
	out, err := encode(make([]byte, 0, len(res.Value)+len(res.Outcome.Value)+128), ev, res, runErr)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeBody(w, http.StatusOK, "application/json", append(out, '\n'))
}

// fail answers an evaluation that has no answer of its route: a request
// whose context ended gets what stopped says (stoppedFetching while its
// script was being fetched); any other error is its problem.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	if ctx.Err() != nil {
		var nr *effect.NotRunError
		if errors.As(err, &nr) && nr.Reason == effect.Stopped && !nr.ScriptRef.IsZero() {
			s.stoppedFetching(w, r, ctx, nr.ScriptRef.String())
			return
		}
		s.stopped(w, r, ctx)
		return
	}
	writeProblem(w, r, problemFor(s.lim, err))
}

// problemFor maps an error of a run, or of its answer, to a problem. The
// detail is the effect's own bounded text, except where it would show the
// store's internals or a panic's value (both are logged).
func problemFor(lim api.Limits, err error) *api.Problem {
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
			"no script store configured: this server runs scripts sent by value only (POST "+routeSandbox+` with "script")`)
	case effect.StoreUnavailable:
		return storeUnavailable(fmt.Sprintf("the script store did not answer for %s; a retry may succeed", ref)).WithCause(nr)
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

// storeUnavailable is the problem of a script the store did not deliver in
// time.
func storeUnavailable(detail string) *api.Problem {
	return api.NewProblem(api.ProblemStoreUnavailable, detail)
}
