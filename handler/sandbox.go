package handler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// errBackendDeadline is the cause of the SPI route's backend context when
// the run's wall clock plus HardKillGrace passes.
var errBackendDeadline = errors.New("handler: the backend deadline (wall clock + grace) passed")

// sandboxEvaluate serves POST /v1/sandbox/evaluate: the backend SPI over HTTP
// (ADR 0144 D1), for loom's effect using this service as its backend. There
// is no effect here: the answer is the engine's outcome object (D2), exactly.
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

	var fetchDur time.Duration
	script := req.Script
	if req.HasScript {
		ev.script = "inline"
		ev.inlineSHA = contentref.RefOf([]byte(req.Script)).String()
	} else {
		ev.script = req.ScriptRef.String()
		if s.cfg.Scripts == nil {
			writeProblem(w, r, s.noStore())
			return
		}
		start := time.Now()
		fctx, cancel := s.fetchContext(ctx, req.Limits.WallClock)
		ev.beginFetch()
		b, p := s.fetchVerified(fctx, req.ScriptRef)
		cancel()
		fetchDur = time.Since(start)
		if p != nil {
			ev.setTimes(fetchDur, 0)
			if ctx.Err() != nil {
				s.stopped(w, r, ctx)
				return
			}
			writeProblem(w, r, p)
			return
		}
		script = string(b)
	}

	start := time.Now()
	ev.beginRun()
	out, err, deadlinePassed := s.callBackend(ctx, effect.Request{Script: script, InputJSON: req.InputJSON, Limits: req.Limits})
	ev.setTimes(fetchDur, time.Since(start))
	switch {
	case ctx.Err() != nil:
		s.stopped(w, r, ctx)
		return
	case err != nil && deadlinePassed:
		writeProblem(w, r, newProblem(pBackendDidNotSettle, http.StatusServiceUnavailable,
			fmt.Sprintf("the engine did not stop within the wall clock of %v plus the grace of %v; a retry may succeed", req.Limits.WallClock, s.cfg.HardKillGrace)).
			retry().withCause(err))
		return
	case err != nil:
		writeProblem(w, r, newProblem(pBackendUnavailable, http.StatusServiceUnavailable,
			"the engine returned an error instead of an outcome; a retry may succeed").retry().withCause(err))
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

// fetchVerified reads the script and checks its bytes against the reference
// (the store is not trusted to have done so), each step in its own span.
func (s *server) fetchVerified(ctx context.Context, ref contentref.Ref) ([]byte, *problem) {
	fctx, span := s.tracer.Start(ctx, "fetch", trace.WithAttributes(attribute.String("sandbox.script_ref", ref.String())))
	b, err := s.cfg.Scripts.Get(fctx, ref)
	if err != nil {
		span.SetStatus(codes.Error, "fetch failed")
		span.End()
		return nil, s.storeProblem(ref, err)
	}
	span.SetAttributes(attribute.Int("sandbox.script_bytes", len(b)))
	span.End()

	_, span = s.tracer.Start(ctx, "verify")
	defer span.End()
	if !ref.Matches(b) {
		span.SetStatus(codes.Error, "integrity mismatch")
		return nil, s.storeProblem(ref, fmt.Errorf("%w: got %s", contentref.ErrIntegrity, contentref.RefOf(b)))
	}
	if n := int64(len(b)); n > s.lim.MaxScriptBytes {
		return nil, newProblem(pScriptTooLarge, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the script stored under %s is %d bytes, over the server's maxScriptBytes of %d", ref, n, s.lim.MaxScriptBytes)).
			withLimit("maxScriptBytes", s.lim.MaxScriptBytes).withField("scriptRef")
	}
	return b, nil
}

// callBackend runs the engine under a deadline of wall clock + grace, in an
// "evaluate" span. A panic propagates to recoverPanics (after the span ends).
func (s *server) callBackend(ctx context.Context, req effect.Request) (out effect.Outcome, err error, deadlinePassed bool) {
	budget := req.Limits.WallClock + s.cfg.HardKillGrace
	bctx, cancel := context.WithTimeoutCause(ctx, budget, errBackendDeadline)
	defer cancel()
	bctx, span := s.tracer.Start(bctx, "evaluate")
	defer func() {
		if v := recover(); v != nil {
			span.SetStatus(codes.Error, "backend panicked")
			span.End()
			panic(v)
		}
		annotateOutcome(span, out, err)
		span.End()
	}()
	out, err = s.cfg.Backend.Evaluate(bctx, req)
	return out, err, errors.Is(context.Cause(bctx), errBackendDeadline)
}

// encodeOutcome writes ADR 0144 D2's outcome object and nothing else. An
// outcome outside the vocabulary is a 500 problem, never a guess.
func encodeOutcome(o effect.Outcome) (body []byte, label, limit string, p *problem) {
	malformed := func(why string) ([]byte, string, string, *problem) {
		return nil, "", "", newProblem(pMalformedOutcome, http.StatusInternalServerError,
			"the engine returned an outcome outside ADR 0144 D2's vocabulary: "+why)
	}
	switch {
	case o.OK:
		if o.Kind != "" || o.Limit != "" || o.Name != nil || o.Message != "" {
			return malformed("an ok outcome with failure fields")
		}
		if len(o.Value) == 0 || jsontext.Validate(o.Value) != nil {
			return malformed("an ok outcome whose value is not JSON text")
		}
		body = append([]byte(`{"ok":true,"value":`), o.Value...)
		return append(body, '}'), "ok", "", nil
	case o.Value != nil:
		return malformed("a failed outcome with a value")
	case o.Kind == effect.KindLimit:
		switch o.Limit {
		case effect.LimitCPU, effect.LimitMemory, effect.LimitWallClock:
		default:
			return malformed(fmt.Sprintf("limit %s", quoteField(string(o.Limit))))
		}
		if o.Name != nil || o.Message != "" {
			return malformed("a limit outcome with a name or message")
		}
		body = append([]byte(`{"ok":false,"kind":"limit","limit":`), appendJSONString(nil, string(o.Limit))...)
		return append(body, '}'), string(effect.KindLimit), string(o.Limit), nil
	case o.Kind == effect.KindThrew:
		// The message may be empty (throw new Error(), throw ""): it is the
		// script's own outcome (effect/spi.go; ADR 0144 D2 types it string).
		if o.Limit != "" {
			return malformed("a threw outcome with a limit")
		}
		body = []byte(`{"ok":false,"kind":"threw"`)
		if o.Name != nil {
			body = appendJSONString(append(body, `,"name":`...), *o.Name)
		}
		body = appendJSONString(append(body, `,"message":`...), o.Message)
		return append(body, '}'), string(effect.KindThrew), "", nil
	case o.Kind == effect.KindInputTooLarge:
		if o.Limit != "" || o.Name != nil || o.Message != "" {
			return malformed("an inputTooLarge outcome with other fields")
		}
		return []byte(`{"ok":false,"kind":"inputTooLarge"}`), string(effect.KindInputTooLarge), "", nil
	case o.Kind == effect.KindInfrastructure:
		if o.Limit != "" || o.Name != nil || o.Message == "" {
			return malformed("an infrastructure outcome needs a message and nothing else")
		}
		body = appendJSONString([]byte(`{"ok":false,"kind":"infrastructure","message":`), o.Message)
		return append(body, '}'), string(effect.KindInfrastructure), "", nil
	}
	return malformed(fmt.Sprintf("kind %s", quoteField(string(o.Kind))))
}
