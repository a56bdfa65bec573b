package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/internal/logline"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// errRequestTimeout is the cause of an evaluation's context when the
// server's request timeout passes.
var errRequestTimeout = errors.New("handler: the server's request timeout passed")

type recordKey struct{}

// reqRecord collects what a request's log line and metrics report; the
// handlers and middleware fill it in.
type reqRecord struct {
	mu         sync.Mutex
	problem    *api.Problem
	principal  string
	eval       *answer.Record
	clientGone bool
}

func recordFrom(ctx context.Context) *reqRecord {
	rec, _ := ctx.Value(recordKey{}).(*reqRecord)
	return rec
}

func (rec *reqRecord) setProblem(p *api.Problem) {
	rec.mu.Lock()
	rec.problem = p
	rec.mu.Unlock()
}

// statusWriter remembers the status and the size of the response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requestID gives the request its id (the caller's X-Request-Id when it is
// well formed, else a new one), which the answer's X-Request-Id header, a
// problem's instance and every log line written for the request carry; and
// when the request belongs to a trace, the answer says which
// (traceresponse, W3C Trace Context), so that a caller has both to quote.
func (s *server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(api.RequestIDHeader)
		if !api.ValidRequestID(id) {
			id = telemetry.NewRequestID()
		}
		w.Header().Set(api.RequestIDHeader, id)
		ctx := telemetry.WithRequestID(r.Context(), id)
		if t, ok := telemetry.TraceFrom(ctx); ok && t.SpanID != "" {
			flags := "00"
			if t.Sampled {
				flags = "01"
			}
			w.Header().Set("Traceresponse", "00-"+t.TraceID+"-"+t.SpanID+"-"+flags)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// traceContext puts the caller's trace (traceparent or Cloud Run's
// X-Cloud-Trace-Context) in the context, for log correlation.
func (s *server) traceContext(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t, ok := telemetry.TraceFromHeaders(r.Header); ok {
			r = r.WithContext(telemetry.WithTrace(r.Context(), t))
		}
		next.ServeHTTP(w, r)
	})
}

// cloudTraceContext extracts Cloud Run's X-Cloud-Trace-Context when no
// traceparent was given, so that the server span continues the platform's
// trace and the log lines correlate with it. It injects nothing.
type cloudTraceContext struct{}

func (cloudTraceContext) Inject(context.Context, propagation.TextMapCarrier) {}

func (cloudTraceContext) Fields() []string { return []string{"X-Cloud-Trace-Context"} }

func (cloudTraceContext) Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx // traceparent, extracted first, wins
	}
	h := http.Header{}
	h.Set("X-Cloud-Trace-Context", carrier.Get("X-Cloud-Trace-Context"))
	t, ok := telemetry.TraceFromHeaders(h)
	if !ok || t.SpanID == "" {
		return ctx
	}
	tid, err1 := trace.TraceIDFromHex(t.TraceID)
	sid, err2 := trace.SpanIDFromHex(t.SpanID)
	if err1 != nil || err2 != nil {
		return ctx
	}
	var flags trace.TraceFlags
	if t.Sampled {
		flags = trace.FlagsSampled
	}
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true,
	}))
}

// requestLog writes one log line per request (for an evaluation, the
// evaluation's line) and records the evaluation metrics. It does so in a
// deferred call, so that a response aborted with http.ErrAbortHandler (a
// client that left: see stopped) is logged too.
func (s *server) requestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &reqRecord{}
		ctx := context.WithValue(r.Context(), recordKey{}, rec)
		sw := &statusWriter{ResponseWriter: w}
		defer s.logRequest(ctx, r, sw, rec, start)
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// logRequest is requestLog's line and metrics for one request.
func (s *server) logRequest(ctx context.Context, r *http.Request, sw *statusWriter, rec *reqRecord, start time.Time) {
	total := time.Since(start)

	route := ""
	if rctx := chi.RouteContext(ctx); rctx != nil {
		route = rctx.RoutePattern()
	}
	rec.mu.Lock()
	p, principal, ev, gone := rec.problem, rec.principal, rec.eval, rec.clientGone
	rec.mu.Unlock()
	if route == "" {
		route = unmatchedRoute
		if allowedMethods[r.URL.Path] != "" { // a known path with another method
			route = r.URL.Path
		}
	}
	span := trace.SpanFromContext(ctx)
	span.SetName(r.Method + " " + route)
	span.SetAttributes(attribute.String("http.route", route))

	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	if gone {
		status = 499 // the client closed the request; nothing was sent
	}
	req, level := answer.RequestOf(route, status, total, p)
	req.Principal = principal

	if (route != routeEvaluations && route != routeSandbox) || r.Method != http.MethodPost {
		if route == routeHealthz || route == routeReadyz {
			level = min(level, probeLevel)
		}
		line := requestLine{Request: req, Method: r.Method}
		if route == unmatchedRoute {
			line.Path = quoteField(r.URL.Path)
		}
		s.log.LogAttrs(ctx, level, RequestMessage, logline.Attrs(line)...)
		return
	}

	s.logEvaluation(ctx, level, answer.NewEvaluation(req, gone, p, ev), ev, total)
}

// logEvaluation writes an evaluation's line (answer.Log, with its engine
// fault's line), and draws its spans and records its metrics, when rec
// (what it ran) is not nil; total is how long it took.
func (s *server) logEvaluation(ctx context.Context, level slog.Level, line answer.Evaluation, rec *answer.Record, total time.Duration) {
	route := line.Route
	if rec != nil {
		traceEvaluation(ctx, s.tracer, rec)
		if rec.Result.EngineFault != "" {
			s.metrics.engineFault(ctx, route)
		}
		if !rec.Result.Call.Start.IsZero() {
			s.metrics.usage(ctx, route, rec.Result.Usage)
		}
	}
	answer.Log(ctx, s.log, level, line, rec)
	s.metrics.evaluation(ctx, route, line.Label, total)
}

// recoverPanics turns a panic into a 500 problem that says nothing of the
// panic, logs the panic with its stack, and lets the next request run.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(r.Context(), "handler panicked",
				"panic", spi.BoundText(fmt.Sprint(v), spi.MaxMessageUnits), "stack", string(debug.Stack()))
			p := api.NewProblem(api.ProblemInternal, "internal error")
			if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
				if rec := recordFrom(r.Context()); rec != nil {
					rec.setProblem(p) // too late to send it; the log says what happened
				}
				return
			}
			writeProblem(w, r, p)
		}()
		next.ServeHTTP(w, r)
	})
}

// capBody refuses a body declared over MaxRequestBytes at once and caps the
// body that is read (a chunked body over the cap fails when it is read).
func (s *server) capBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		max := s.lim.MaxRequestBytes
		if r.ContentLength > max {
			writeProblem(w, r, tooLargeBody(max))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		next.ServeHTTP(w, r)
	})
}

// requireJSON refuses a body that is not declared application/json in UTF-8.
func (s *server) requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		mt, params, err := mime.ParseMediaType(ct)
		cs, hasCharset := params["charset"]
		if err != nil || mt != "application/json" || hasCharset && !strings.EqualFold(cs, "utf-8") {
			got := "no Content-Type"
			if ct != "" {
				got = "Content-Type " + quoteField(ct)
			}
			writeProblem(w, r, api.NewProblem(api.ProblemUnsupportedMediaType,
				"the body must be JSON sent as Content-Type application/json (UTF-8); got "+got))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireIdentity refuses a body sent with a content coding (gzip, br, …),
// which the decoders would read as its compressed bytes. The service does
// not decompress: its bodies are JSON of at most MaxRequestBytes that a
// client can send as they are, and decoding would let a few KiB on the wire
// cost the server's one processor MaxRequestBytes of work. RFC 9110's 415,
// with Accept-Encoding naming the one coding accepted.
func (s *server) requireIdentity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, v := range r.Header.Values("Content-Encoding") {
			for c := range strings.SplitSeq(v, ",") {
				if c = strings.TrimSpace(c); c == "" || strings.EqualFold(c, "identity") {
					continue
				}
				w.Header().Set("Accept-Encoding", "identity")
				writeProblem(w, r, api.NewProblem(api.ProblemUnsupportedEncoding,
					"the body must be sent uncompressed: Content-Encoding "+quoteField(v)+
						" is not accepted; send the JSON as it is, with no Content-Encoding (or identity)"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate runs the Auth hook, when there is one.
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Auth == nil {
			next.ServeHTTP(w, r)
			return
		}
		principal, err := s.cfg.Auth(r)
		if err != nil {
			detail := spi.BoundText(err.Error(), 512)
			switch {
			case errors.Is(err, ErrForbidden):
				writeProblem(w, r, api.NewProblem(api.ProblemForbidden, detail))
			case errors.Is(err, ErrUnauthenticated):
				w.Header().Set("WWW-Authenticate", "Bearer")
				writeProblem(w, r, api.NewProblem(api.ProblemUnauthenticated, detail))
			default:
				writeProblem(w, r, api.NewProblem(api.ProblemAuthUnavailable,
					"the caller's credentials could not be checked; a retry may succeed").WithCause(err))
			}
			return
		}
		if rec := recordFrom(r.Context()); rec != nil {
			rec.mu.Lock()
			rec.principal = principal
			rec.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// admit is the concurrency gate: at most MaxConcurrent evaluations at once,
// and the next request is refused at once, never queued.
func (s *server) admit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.gate <- struct{}{}:
			defer func() { <-s.gate }()
			next.ServeHTTP(w, r)
		default:
			s.metrics.busyRejection(r.Context(), r.URL.Path)
			writeProblem(w, r, api.NewProblem(api.ProblemBusy,
				fmt.Sprintf("this instance is already running its maximum of %d evaluation(s) and does not queue; retry (another instance may take it)", s.lim.MaxConcurrent)).
				WithLimit("maxConcurrent", s.lim.MaxConcurrent))
		}
	})
}

// deadline ends the evaluation's context when the server's request timeout
// passes (the client's disconnect ends it already).
func (s *server) deadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeoutCause(r.Context(), s.lim.RequestTimeout, errRequestTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// routeUnescaped routes a request by its path unescaped, as the 404 names
// it and as the OpenAPI document's tools read it: /v1/evaluations%3Abatch,
// as url.PathEscape and encodeURIComponent write the batch route, is the
// batch route. (The router would otherwise match the path as sent, and
// answer that the route it lists does not exist.) No route has a
// parameter that an escaped slash could belong to.
func routeUnescaped(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawPath != "" {
			u := *r.URL
			u.RawPath = ""
			r2 := *r
			r2.URL = &u
			r = &r2
		}
		next.ServeHTTP(w, r)
	})
}

func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, r, api.NewProblem(api.ProblemNotFound,
		fmt.Sprintf("no route %s; the routes are POST %s, POST %s, POST %s, GET %s, GET or HEAD %s and GET or HEAD %s",
			quoteField(r.URL.Path), routeEvaluations, routeBatch, routeSandbox, routeCaps, routeHealthz, routeReadyz)))
}

func (s *server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	allow := allowedMethods[r.URL.Path]
	w.Header().Set("Allow", allow)
	writeProblem(w, r, api.NewProblem(api.ProblemMethodNotAllowed,
		fmt.Sprintf("%s does not accept %s; use %s", r.URL.Path, quoteField(r.Method), allow)))
}

// stoppedFetching is stopped for an evaluation whose context ended while its
// script was being fetched: the server's request timeout is then a 503
// store-unavailable (the fetch's own deadline, spi.Timing's
// FetchDeadline, is later only when the run leaves it less than a second):
// the script never ran, and the wall clock is not to blame.
func (s *server) stoppedFetching(w http.ResponseWriter, r *http.Request, ctx context.Context, script string) {
	if errors.Is(context.Cause(ctx), errRequestTimeout) {
		writeProblem(w, r, api.NewProblem(api.ProblemStoreUnavailable, fmt.Sprintf(
			"the script store did not answer for %s within the server's request timeout of %v; the script was not run, and a retry may succeed",
			script, s.lim.RequestTimeout)))
		return
	}
	s.stopped(w, r, ctx)
}

// stopped classifies an evaluation whose context ended: the server's
// request timeout is a 504 problem (stoppedFetching when it passed while
// the script was being fetched); a client that went away gets nothing
// (there is no one to read it), and the log says so.
//
// "Nothing" is an aborted response: stopped panics with http.ErrAbortHandler
// (recoverPanics lets it through, requestLog logs the request on the way
// out), and net/http closes the connection without a status line. Returning
// without writing would make net/http send an implicit "200 OK" with an
// empty body, which a client that only half-closed its side of the
// connection (as nc and some proxies do) would read as a success without an
// outcome.
func (s *server) stopped(w http.ResponseWriter, r *http.Request, ctx context.Context) {
	rec := recordFrom(r.Context())
	if errors.Is(context.Cause(ctx), errRequestTimeout) {
		writeProblem(w, r, api.NewProblem(api.ProblemRequestTimeout,
			fmt.Sprintf("the server's request timeout of %v passed before the evaluation finished; the run was stopped. Ask for a shorter wall clock, or retry where the timeout is longer", s.lim.RequestTimeout)).
			WithLimit("requestTimeoutMs", s.lim.RequestTimeout.Milliseconds()))
		return
	}
	if rec != nil {
		rec.mu.Lock()
		rec.clientGone = true
		rec.mu.Unlock()
	}
	panic(http.ErrAbortHandler)
}
