package handler

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
)

// evalRecord is what one evaluation leaves for its log line, its metrics and
// its spans: what the request asked for and what Effect.Run found. It only
// records: nothing the handler answers reads it. The handler writes it, and
// the request log reads it on the same goroutine once the handler returned.
type evalRecord struct {
	ran bool // the request was decoded and run
	ev  effect.Evaluation
	res effect.Result
	err error
}

// startEval creates the evaluation's record and attaches it to the
// request's log record, before anything of the request is read, so that a
// request refused on its way in is logged as an evaluation too.
func (s *server) startEval(r *http.Request) *evalRecord {
	ev := &evalRecord{}
	if req := recordFrom(r.Context()); req != nil {
		req.mu.Lock()
		req.eval = ev
		req.mu.Unlock()
	}
	return ev
}

// trace draws the evaluation's steps as children of the request's span: the
// fetch, the verification between the fetch and the call, and the call.
func (rec *evalRecord) trace(ctx context.Context, tracer trace.Tracer) {
	res := rec.res
	if !res.Fetch.Start.IsZero() {
		_, span := tracer.Start(ctx, "fetch", trace.WithTimestamp(res.Fetch.Start),
			trace.WithAttributes(attribute.String("sandbox.script_ref", rec.ev.ScriptRef.String())))
		if res.Call.Start.IsZero() && rec.err != nil {
			span.SetStatus(codes.Error, "fetch failed")
		} else {
			span.SetAttributes(attribute.Int("sandbox.script_bytes", res.ScriptBytes))
		}
		span.End(trace.WithTimestamp(res.Fetch.End))
		if !res.Call.Start.IsZero() {
			_, verify := tracer.Start(ctx, "verify", trace.WithTimestamp(res.Fetch.End))
			verify.End(trace.WithTimestamp(res.Call.Start))
		}
	}
	if res.Call.Start.IsZero() {
		return
	}
	_, span := tracer.Start(ctx, "evaluate", trace.WithTimestamp(res.Call.Start))
	switch o := res.Outcome; {
	case o.OK:
		span.SetAttributes(attribute.String("sandbox.outcome", "ok"))
	case o.Kind != "":
		span.SetAttributes(attribute.String("sandbox.outcome", string(o.Kind)))
		if o.Limit != "" {
			span.SetAttributes(attribute.String("sandbox.limit", string(o.Limit)))
		}
	default:
		span.SetStatus(codes.Error, "backend returned an error")
	}
	end := res.Call.End
	if end.IsZero() {
		end = time.Now() // the backend still runs: the span ends where the wait did
	}
	span.End(trace.WithTimestamp(end))
}

// scriptLabel names an evaluation's script in the request log: its
// reference, or "inline" and the reference of the bytes that ran.
func scriptLabel(ev effect.Evaluation) (script, inlineSHA string) {
	if !ev.ScriptRef.IsZero() {
		return ev.ScriptRef.String(), ""
	}
	return "inline", answer.ScriptRef(ev).String()
}

// engineFault logs an engine fault and counts it, on the request's
// context, whose id and trace the line then carries as every line of the
// request does.
func (s *server) engineFault(ctx context.Context, route string, rec *evalRecord) {
	answer.LogEngineFault(ctx, s.log, route, rec.ev, rec.res)
	s.metrics.engineFault(ctx, route)
}
