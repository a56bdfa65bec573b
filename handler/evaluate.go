package handler

import (
	"errors"
	"net/http"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// decoder reads a route's request body, with the server's limits, into the
// evaluation it asks for, or refuses it with the *api.Problem to answer.
type decoder func(body []byte, l api.Limits) (spi.Evaluation, error)

// encoder writes a route's 200 answer for what Effect.Run returned, or
// returns the error that is no answer of the route.
type encoder func(dst []byte, ev spi.Evaluation, res effect.Result, err error) ([]byte, error)

// appendEvaluation is POST /v1/evaluations' answer: the effect's decision,
// with the logs when the request asked for them.
func appendEvaluation(dst []byte, ev spi.Evaluation, res effect.Result, err error) ([]byte, error) {
	var logs *string
	if ev.CaptureLogs {
		logs = &res.Logs
	}
	return api.AppendEvaluationResult(dst, res.Value, logs, res.Usage, err)
}

// appendOutcome is POST /v1/sandbox/evaluate's answer: the outcome
// object, exactly, for the caller's effect to decide on.
func appendOutcome(dst []byte, ev spi.Evaluation, res effect.Result, err error) ([]byte, error) {
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
// (docs/spi.md, "The backend"), for loom's effect using this service as its
// backend. The answer is the engine's outcome object (docs/spi.md,
// "Outcomes"), exactly, from the same run as /v1/evaluations'; its value is
// returned whole (MaxOutputBytes bounds /v1/evaluations only: here the
// caller's effect bounds the output), up to what a run within the memory
// maximum can make.
func (s *server) sandboxEvaluate(w http.ResponseWriter, r *http.Request) {
	s.evaluate(w, r, api.DecodeSandboxRequest, appendOutcome)
}

// evaluate serves an evaluation route: decode, run, encode. Every outcome of
// the script is a 200, typed failures included; everything else is a problem
// that says whether a retry can help (answer.Problem), and a request whose
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
	*rec = answer.Record{Ran: true, Evaluation: ev, Result: res, Err: runErr}
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
	writeProblem(w, r, answer.Problem(s.lim, err))
}
