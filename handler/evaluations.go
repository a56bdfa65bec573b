package handler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
)

// startEval creates the evaluation's record and attaches it to the
// request's log record.
func (s *server) startEval(r *http.Request) *evalRecord {
	ev := &evalRecord{tracer: s.tracer}
	if rec := recordFrom(r.Context()); rec != nil {
		rec.mu.Lock()
		rec.eval = ev
		rec.mu.Unlock()
	}
	return ev
}

// awaitEngine waits, at most HardKillGrace, for an evaluation's backend
// call that was given up on (cancellation, deadline) to return: finished is
// closed when nothing of the evaluation runs. The concurrency gate admits
// the next request only once the engine has stopped, or the grace passed.
func (s *server) awaitEngine(ctx context.Context, finished <-chan struct{}, script string) {
	select {
	case <-finished:
		return
	default:
	}
	t := time.NewTimer(s.cfg.HardKillGrace)
	defer t.Stop()
	select {
	case <-finished:
	case <-t.C:
		s.log.WarnContext(ctx, "the engine had not stopped a grace after the effect gave up on it; admitting the next request anyway",
			"script", script, "grace", s.cfg.HardKillGrace)
	}
}

func (s *server) noStore() *problem {
	return newProblem(pNoScriptStore, http.StatusServiceUnavailable,
		"no script store configured: this server runs scripts sent by value only (POST "+routeSandbox+` with "script")`)
}

// evaluations serves POST /v1/evaluations: the effect over HTTP. Every
// outcome of the script, typed failures included, is a 200; an untyped
// failure is a 5xx problem that says whether a retry can help.
func (s *server) evaluations(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ev := s.startEval(r)
	body, ok := s.requestBody(w, r)
	if !ok {
		return
	}
	req, p := decodeEvaluation(body, s.lim)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	ev.script = req.ScriptRef.String()
	ev.inputBytes = len(req.Input)
	ev.wantLogs = req.CaptureLogs
	if s.cfg.Effect == nil {
		writeProblem(w, r, s.noStore())
		return
	}
	start := time.Now()
	finished := make(chan struct{})
	value, err := s.cfg.Effect.Evaluate(withEval(ctx, ev), effect.Input{
		ScriptRef:               req.ScriptRef.String(),
		Input:                   req.Input,
		Limits:                  req.Limits,
		ExpectedOutputShapeHash: req.ExpectedOutputShapeHash,
		FetchDeadline:           s.fetchDeadline(ctx, req.Limits.WallClock),
		Finished:                func() { close(finished) },
	})
	if !ev.stepsObserved() {
		// an effect not built by NewEffect: its steps cannot be told apart
		ev.setTimes(0, time.Since(start))
	}
	s.awaitEngine(ctx, finished, ev.script)
	if err != nil && ctx.Err() != nil {
		if errors.Is(err, effect.ErrNotRun) {
			s.stoppedFetching(w, r, ctx, ev.script)
			return
		}
		s.stopped(w, r, ctx)
		return
	}

	var f *effect.Failure
	switch {
	case err == nil:
		ev.setOutcome("ok", "", len(value))
		s.writeEvaluation(w, r, ev, api.EvaluationResponse{OK: true, Value: value})
	case errors.As(err, &f):
		ev.setOutcome(string(f.Channel), string(f.Kind), 0)
		s.writeEvaluation(w, r, ev, api.EvaluationResponse{Failure: f})
	default:
		writeProblem(w, r, s.effectProblem(req.ScriptRef, err))
	}
}

// writeEvaluation sends the effect's decision, with the logs when the
// request asked for them.
func (s *server) writeEvaluation(w http.ResponseWriter, r *http.Request, ev *evalRecord, resp api.EvaluationResponse) {
	if ev.wantLogs {
		logs := ev.capturedLogs()
		resp.Logs = &logs
	}
	out, err := api.AppendEvaluation(make([]byte, 0, len(resp.Value)+128), resp)
	if err != nil { // a failure of a channel the effect does not have: a bug
		writeProblem(w, r, newProblem(pInternal, http.StatusInternalServerError, "internal error").withCause(err))
		return
	}
	writeBody(w, http.StatusOK, "application/json", append(out, '\n'))
}

// effectProblem maps the effect's untyped failures to problems. The detail
// is the effect's own bounded text, except where it would show the store's
// internals or a panic's value (both are logged).
func (s *server) effectProblem(ref contentref.Ref, err error) *problem {
	text := err.Error()
	switch {
	case errors.Is(err, effect.ErrInvalidInput):
		return newProblem(pInvalidRequest, http.StatusBadRequest, text)
	case errors.Is(err, effect.ErrScriptFetch):
		return s.storeProblem(ref, err)
	case errors.Is(err, effect.ErrBackendDidNotSettle):
		return newProblem(pBackendDidNotSettle, http.StatusServiceUnavailable, text+"; a retry may succeed").retry().withCause(err)
	case errors.Is(err, effect.ErrBackendPanicked):
		return newProblem(pInternal, http.StatusInternalServerError, "internal error").withCause(err)
	case errors.Is(err, effect.ErrMalformedOutcome):
		return newProblem(pMalformedOutcome, http.StatusInternalServerError, text).withCause(err)
	case errors.Is(err, effect.ErrBackendFailed) && effect.Retryable(err):
		return newProblem(pBackendUnavailable, http.StatusServiceUnavailable, text+"; a retry may succeed").retry().withCause(err)
	case errors.Is(err, effect.ErrBackendFailed):
		return newProblem(pBackendFailed, http.StatusInternalServerError, text).withCause(err)
	}
	p := newProblem(pInternal, http.StatusInternalServerError, "internal error").withCause(err)
	p.retryable = effect.Retryable(err)
	return p
}

// storeProblem maps a failure to read a script (from the store, or the
// effect's fetch) to a problem.
func (s *server) storeProblem(ref contentref.Ref, err error) *problem {
	switch {
	case errors.Is(err, contentref.ErrPanicked):
		// a bug in the store, logged with its stack where it was recovered;
		// answered as a panic in the handler or the engine is
		return newProblem(pInternal, http.StatusInternalServerError, "internal error").withCause(err)
	case errors.Is(err, contentref.ErrNotFound):
		return newProblem(pScriptNotFound, http.StatusNotFound,
			fmt.Sprintf("no script is stored under %s; store it first (the put command)", ref)).withField("scriptRef").withCause(err)
	case errors.Is(err, contentref.ErrIntegrity):
		return newProblem(pScriptIntegrity, http.StatusInternalServerError,
			fmt.Sprintf("the bytes the store holds under %s do not hash to that reference; the script was not run, and a retry cannot help until the stored object is repaired", ref)).withCause(err)
	case errors.Is(err, contentref.ErrTooLarge):
		return s.storedScriptTooLarge(ref, err)
	case errors.Is(err, contentref.ErrUnavailable), errors.Is(err, context.DeadlineExceeded), effect.Retryable(err):
		return storeUnavailable(fmt.Sprintf("the script store did not answer for %s; a retry may succeed", ref)).withCause(err)
	case errors.Is(err, contentref.ErrPermission):
		return newProblem(pStoreFailed, http.StatusInternalServerError,
			fmt.Sprintf("the script store refused access while reading %s (a configuration problem)", ref)).withCause(err)
	}
	return newProblem(pStoreFailed, http.StatusInternalServerError,
		fmt.Sprintf("the script store failed while reading %s", ref)).withCause(err)
}

// storedScriptTooLarge is the 413 for a script the store refused as over its
// maximum size. It names the server's maxScriptBytes (the limit member and
// the number) when that bound applied: when the store's own maximum is the
// same or larger (the service opens the store with MAX_SCRIPT_BYTES), or is not
// known. A store whose maximum is below the server's is named as such.
func (s *server) storedScriptTooLarge(ref contentref.Ref, err error) *problem {
	head := fmt.Sprintf("the script stored under %s is", ref)
	var tl *contentref.TooLargeError
	if errors.As(err, &tl) && tl.Size >= 0 {
		head = fmt.Sprintf("the script stored under %s is %d bytes,", ref, tl.Size)
	}
	if tl != nil && tl.Limit < s.lim.MaxScriptBytes {
		return newProblem(pScriptTooLarge, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("%s over the store's maximum script size of %d bytes (below the server's maxScriptBytes of %d)",
				head, tl.Limit, s.lim.MaxScriptBytes)).withField("scriptRef").withCause(err)
	}
	return newProblem(pScriptTooLarge, http.StatusRequestEntityTooLarge,
		fmt.Sprintf("%s over the store's maximum script size, the server's maxScriptBytes of %d", head, s.lim.MaxScriptBytes)).
		withLimit("maxScriptBytes", s.lim.MaxScriptBytes).withField("scriptRef").withCause(err)
}

// storeUnavailable is the retryable 503 for a script the store did not
// deliver in time.
func storeUnavailable(detail string) *problem {
	p := newProblem(pStoreUnavailable, http.StatusServiceUnavailable, detail).retry()
	p.retryAfter = "1"
	return p
}
