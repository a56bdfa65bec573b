package handler

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
)

// startEval creates the evaluation's record and attaches it to the
// request's log record, before anything of the request is read, so that a
// request refused on its way in is logged as an evaluation too. The
// handler fills it in, and the request log reads it on the same goroutine
// once the handler returned.
func (s *server) startEval(r *http.Request) *answer.Record {
	ev := &answer.Record{}
	if req := recordFrom(r.Context()); req != nil {
		req.mu.Lock()
		req.eval = ev
		req.mu.Unlock()
	}
	return ev
}

// traceEvaluation draws the steps of the evaluation rec as children of the
// request's span: the fetch, the verification between the fetch and the
// call, and the call.
func traceEvaluation(ctx context.Context, tracer trace.Tracer, rec *answer.Record) {
	res := rec.Result
	if !res.Fetch.Start.IsZero() {
		_, span := tracer.Start(ctx, "fetch", trace.WithTimestamp(res.Fetch.Start),
			trace.WithAttributes(attribute.String("sandbox.script_ref", rec.Evaluation.ScriptRef.String())))
		if res.Call.Start.IsZero() && rec.Err != nil {
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
