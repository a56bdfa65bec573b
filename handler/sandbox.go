package handler

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
)

// sandboxEvaluate serves POST /v1/sandbox/evaluate: the backend SPI over HTTP
// (ADR 0144 D1), for loom's effect using this service as its backend. There
// is no effect here, only its steps that a backend's caller owns: the answer
// is the engine's outcome object (D2), exactly, from the effect's own fetch
// and verification (Effect.Fetch) and its own call of the backend, raced
// against wall clock + grace and validated (effect.Caller). The route
// decodes, calls and encodes. Its value is returned whole: maxOutputBytes
// bounds /v1/evaluations only, and here the caller's effect bounds the
// output (ADR 0144 D2); effect.MaxValueBytes is the longest value it returns.
func (s *server) sandboxEvaluate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ev := s.startEval(r)
	body, ok := s.requestBody(w, r)
	if !ok {
		return
	}
	req, p := decodeSandboxEvaluate(body, s.lim)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	ev.inputBytes = len(req.InputJSON)

	start := time.Now()
	script := req.Script
	if req.HasScript {
		ev.script = "inline"
		ev.inlineSHA = contentref.RefOf([]byte(req.Script)).String()
	} else {
		ev.script = req.ScriptRef.String()
		if s.cfg.Effect == nil {
			writeProblem(w, r, s.noStore())
			return
		}
		b, p := s.fetch(withEval(ctx, ev), req.ScriptRef, req.Limits.WallClock)
		if p != nil || ctx.Err() != nil {
			if !ev.stepsObserved() {
				ev.setTimes(time.Since(start), 0)
			}
			if ctx.Err() != nil {
				s.stoppedFetching(w, r, ctx, ev.script)
				return
			}
			writeProblem(w, r, p)
			return
		}
		script = string(b)
	}

	runStart := time.Now()
	finished := make(chan struct{})
	out, err := s.caller.Call(withEval(ctx, ev), effect.Request{Script: script, InputJSON: req.InputJSON, Limits: req.Limits},
		ev.script, func() { close(finished) })
	if !ev.stepsObserved() {
		ev.setTimes(runStart.Sub(start), time.Since(runStart))
	}
	s.awaitEngine(ctx, finished, ev.script)
	switch {
	case ctx.Err() != nil:
		s.stopped(w, r, ctx)
		return
	case err != nil:
		writeProblem(w, r, s.effectProblem(req.ScriptRef, err))
		return
	}
	if n, max := int64(len(out.Value)), effect.MaxValueBytes(s.lim.MaxMemoryBytes); n > max {
		// The route's only bound on a value (see effect.MaxValueBytes); an
		// engine within its memory cannot reach it.
		writeProblem(w, r, newProblem(pMalformedOutcome, http.StatusInternalServerError,
			fmt.Sprintf("the engine returned a value of %d bytes, over the %d bytes a run within maxMemoryBytes can make", n, max)))
		return
	}
	resp, label, limit, p := encodeOutcome(out)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	outBytes := 0
	if out.OK {
		outBytes = len(out.Value)
	}
	ev.setOutcome(label, limit, outBytes)
	writeBody(w, http.StatusOK, "application/json", append(resp, '\n'))
}

// fetch reads the script of a run with this wall clock through the
// effect's own fetch and verification, by fetchDeadline, and bounds it by
// MaxScriptBytes.
func (s *server) fetch(ctx context.Context, ref contentref.Ref, wall time.Duration) ([]byte, *problem) {
	fctx, cancel := s.fetchContext(ctx, wall)
	defer cancel()
	b, err := s.cfg.Effect.Fetch(fctx, ref)
	if err != nil {
		return nil, s.storeProblem(ref, err) // scriptMissing wraps the store's not-found
	}
	if n := int64(len(b)); n > s.lim.MaxScriptBytes {
		return nil, newProblem(pScriptTooLarge, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the script stored under %s is %d bytes, over the server's maxScriptBytes of %d", ref, n, s.lim.MaxScriptBytes)).
			withLimit("maxScriptBytes", s.lim.MaxScriptBytes).withField("scriptRef")
	}
	return b, nil
}

// minFetchTime is the least a script fetch is given when the run's wall
// clock and grace take (nearly) all of the request timeout.
const minFetchTime = time.Second

// fetchDeadline is when fetching the script of a run with this wall clock
// must end: the request's deadline minus the wall clock and HardKillGrace,
// so that the run still fits in the request after the fetch. A store that
// stalls or keeps failing then ends the fetch, answered 503 store-unavailable
// (retryable: the script never ran, and another instance, or this one a
// moment later, may well read it), rather than the request, answered 504
// request-timeout, which would blame the wall clock. The fetch gets at least
// minFetchTime; zero (no deadline but the request's) when that reaches the
// request's deadline or ctx has none. When the request's deadline ends a
// fetch, stopped still answers store-unavailable.
func (s *server) fetchDeadline(ctx context.Context, wall time.Duration) time.Time {
	deadline, ok := ctx.Deadline()
	if !ok {
		return time.Time{}
	}
	d := deadline.Add(-(wall + s.cfg.HardKillGrace))
	if floor := time.Now().Add(minFetchTime); d.Before(floor) {
		d = floor
	}
	if !d.Before(deadline) {
		return time.Time{} // the request's own deadline bounds the fetch
	}
	return d
}

// fetchContext is ctx ending at fetchDeadline.
func (s *server) fetchContext(ctx context.Context, wall time.Duration) (context.Context, context.CancelFunc) {
	d := s.fetchDeadline(ctx, wall)
	if d.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, d)
}

// encodeOutcome writes the outcome object (api.AppendOutcome) and says
// how the request log labels it.
func encodeOutcome(o effect.Outcome) (body []byte, label, limit string, p *problem) {
	body, err := api.AppendOutcome(nil, o)
	if err != nil {
		return nil, "", "", newProblem(pMalformedOutcome, http.StatusInternalServerError,
			"the engine returned an outcome outside ADR 0144 D2's vocabulary: "+err.Error())
	}
	if o.OK {
		return body, "ok", "", nil
	}
	return body, string(o.Kind), string(o.Limit), nil
}
