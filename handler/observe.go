package handler

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
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

// logged is an evaluation as its log line and metrics report it.
type logged struct {
	script, inlineSHA       string
	outcome, limit          string // the answer's label: ok, the channel or the outcome's kind
	inputBytes, outputBytes int
	evaluate                time.Duration
	usage                   spi.Usage
}

// logged reports the evaluation; an evaluation refused before it ran has
// no script and no outcome.
func (rec *evalRecord) logged() logged {
	l := logged{evaluate: rec.res.Call.Duration(), usage: rec.res.Usage}
	if !rec.ran {
		return l
	}
	l.inputBytes = len(rec.ev.Input)
	l.script, l.inlineSHA = scriptLabel(rec.ev)
	var f *effect.Failure
	switch res := rec.res; {
	case errors.As(rec.err, &f):
		l.outcome, l.limit = string(f.Channel), string(f.Kind)
	case rec.err != nil:
		// a problem, which labels the line
	case rec.ev.Answer == effect.AnswerOutcome && !res.Outcome.OK:
		l.outcome, l.limit = string(res.Outcome.Kind), string(res.Outcome.Limit)
	case rec.ev.Answer == effect.AnswerOutcome:
		l.outcome, l.outputBytes = "ok", len(res.Outcome.Value)
	default:
		l.outcome, l.outputBytes = "ok", len(res.Value)
	}
	return l
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
	return "inline", scriptRef(ev).String()
}

// scriptRef is the content reference of the script an evaluation ran, sent
// by reference or by value alike: the hash by which the store holds it.
func scriptRef(ev effect.Evaluation) contentref.Ref {
	if !ev.ScriptRef.IsZero() {
		return ev.ScriptRef
	}
	return contentref.RefOf([]byte(ev.Script))
}

// scriptSHA256Key names the script's hash (sha256:<hex>) in a log line:
// the evaluation line of a script sent by value, and the engine fault's.
const scriptSHA256Key = "scriptSha256"

// EngineFaultMessage is the message of the line the service logs at ERROR
// for each evaluation whose engine was broken from inside by its script (an
// engine fault: spi.Report.EngineFault), an operator's alarm:
// terraform/monitoring.tf's engine_faults metric counts the lines that
// carry it (docs/security.md, "Engine faults").
const EngineFaultMessage = "engine fault"

// engineFault logs an engine fault and counts it, on the request's
// context, whose id and trace the line then carries as every line of the
// request does: with the route, the script's hash, by which an operator
// fetches the script from the store to reproduce the fault, and the trap's
// text.
func (s *server) engineFault(ctx context.Context, route string, rec *evalRecord) {
	s.log.LogAttrs(ctx, slog.LevelError, EngineFaultMessage,
		slog.String("route", route),
		slog.String(scriptSHA256Key, scriptRef(rec.ev).String()),
		slog.String("trap", rec.res.EngineFault))
	s.metrics.engineFault(ctx, route)
}
