// Package handler is the service's HTTP layer. Both evaluation routes are
// the same three steps: decode the request (api), run the evaluation it asks
// for (effect.Effect.Run, which owns everything an evaluation is), and encode
// the answer (api): POST /v1/evaluations answers with the effect's decision,
// POST /v1/sandbox/evaluate (the backend SPI over HTTP) with the backend's
// outcome. POST /v1/evaluations:batch is /v1/evaluations over many inputs
// of one script, its answers streamed a line each (docs/batch.md), which
// eval -inputs and the bulk verb write alike (package answer). Every error
// is answered with a problem document (api/openapi.yaml is the contract;
// docs/problems.md lists every problem type): a request's here, a run's by
// answer.Problem, the one mapping of a run's errors, which the verbs share.
//
// Every size a client controls is bounded before anything else runs: the
// request body (MaxRequestBytes, which holds any request whose script and
// input are within their bounds, api.MinRequestBytes) here, the input and
// an inline script by the effect, which answers them as outcomes no retry
// can change (docs/spi.md, "Answers no retry can change"). At most MaxConcurrent
// evaluations run at once; the next one is refused at once with 429, never
// queued, and the gate admits it only once the effect has seen the engine
// stop. Each evaluation's context ends at the earliest of the client's
// disconnect and the server's request timeout; the effect derives every
// deadline of the run from it.
package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Errors an Auth hook wraps to choose the response: ErrUnauthenticated is
// 401 (no or invalid credentials), ErrForbidden is 403 (valid credentials of
// a caller who is not allowed). Any other error is a retryable 503 (the
// credentials could not be checked).
var (
	ErrUnauthenticated = errors.New("handler: unauthenticated")
	ErrForbidden       = errors.New("handler: forbidden")
)

// ReadyTimeout bounds one call of Config.Ready from GET /readyz.
const ReadyTimeout = 5 * time.Second

// Config is what New needs. Effect and Limits are required (the service's
// configuration owns their defaults); the rest may be zero.
type Config struct {
	// Effect runs every evaluation, on both routes. Build it over the script
	// store (effect.NoStore for none: /v1/evaluations and scriptRef then
	// answer 503 no-script-store, and a script by value still works) and the
	// engine, with the byte bounds of Limits.
	Effect *effect.Effect
	// Limits are the defaults and maxima of an evaluation and of a request,
	// as GET /v1/capabilities advertises them and the decoders apply them.
	// MaxConcurrent is how many evaluations run at once (both routes
	// together); the next request gets 429 with Retry-After at once.
	// RequestTimeout is the server's own deadline for an evaluation request,
	// counted from when it passes the concurrency gate; set it to the Cloud
	// Run request timeout. When it passes, the run is stopped and the
	// response is a 504 problem (a 503 store-unavailable while the script
	// was being fetched: the script never ran).
	Limits api.Limits
	// Ready reports readiness for GET /readyz: the engine compiled and
	// warm, the store reachable. Nil means always ready. A NotReady error
	// says why in the problem's detail; any other error's text is only
	// logged.
	Ready func(ctx context.Context) error
	// Auth authenticates a request to /v1/...; nil turns it off. It returns
	// the caller's identity (logged) or an error wrapping ErrUnauthenticated
	// (401) or ErrForbidden (403); the error's text is the problem's detail,
	// so it must not carry secrets. /healthz and /readyz are never
	// authenticated (platform probes).
	Auth func(r *http.Request) (principal string, err error)
	// Engine identifies the engine in GET /v1/capabilities.
	Engine api.Engine
	// Isolation, when set, is the "isolation" member of GET
	// /v1/capabilities, read at each request: which protections beyond
	// wasm are on (the worker processes' lock-down).
	Isolation func() api.Isolation
	// Logger receives one line per request (one per evaluation, with its
	// reference, outcome, durations and byte counts; never the input, the
	// value, the logs or the script text). Nil discards.
	Logger *slog.Logger
	// Tracer and Meter are the OpenTelemetry providers; nil means no-op.
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// CacheStats, when set, reports the script cache's hits and misses
	// (contentstore.Cache.Stats), exported as observable counters.
	CacheStats func() (hits, misses uint64)
	// CompiledScriptStats, when set, reports what the engine's kept
	// compiled scripts did: runs that started from a kept compile (hits),
	// runs that compiled (misses), and compiles evicted for room; exported
	// as observable counters.
	CompiledScriptStats func() (hits, misses, evictions uint64)
}

// Route patterns.
const (
	routeEvaluations = "/v1/evaluations"
	routeBatch       = "/v1/evaluations:batch"
	routeSandbox     = "/v1/sandbox/evaluate"
	routeCaps        = "/v1/capabilities"
	routeHealthz     = "/healthz"
	routeReadyz      = "/readyz"
)

// allowedMethods is the Allow header of each route, for 405 responses.
var allowedMethods = map[string]string{
	routeEvaluations: http.MethodPost,
	routeBatch:       http.MethodPost,
	routeSandbox:     http.MethodPost,
	routeCaps:        http.MethodGet,
	routeHealthz:     http.MethodGet + ", " + http.MethodHead,
	routeReadyz:      http.MethodGet + ", " + http.MethodHead,
}

// server is the state behind the router.
type server struct {
	cfg      Config
	lim      api.Limits
	capsJSON []byte
	gate     chan struct{}
	log      *slog.Logger
	tracer   trace.Tracer
	metrics  *metrics
}

const instrumentationName = "github.com/loom-plugins/sandbox-cloudrun/handler"

// New validates cfg and returns the service's handler: a chi router with its
// middleware, wrapped in OpenTelemetry's HTTP server instrumentation.
func New(cfg Config) (http.Handler, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	s := &server{
		cfg:  cfg,
		lim:  cfg.Limits,
		gate: make(chan struct{}, cfg.Limits.MaxConcurrent),
		log:  cfg.Logger,
	}
	s.capsJSON = s.capabilitiesJSON()
	s.tracer = cfg.Tracer.Tracer(instrumentationName)
	var err error
	if s.metrics, err = newMetrics(cfg.Meter, cfg.CacheStats, cfg.CompiledScriptStats); err != nil {
		return nil, fmt.Errorf("handler: metrics: %w", err)
	}

	r := chi.NewRouter()
	r.Use(routeUnescaped, s.traceContext, s.requestID, s.requestLog, s.recoverPanics)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)
	// The probes answer HEAD too: uptime checkers use it.
	r.Get(routeHealthz, s.healthz)
	r.Head(routeHealthz, s.healthz)
	r.Get(routeReadyz, s.readyz)
	r.Head(routeReadyz, s.readyz)
	r.With(s.authenticate).Get(routeCaps, s.capabilities)
	r.Group(func(r chi.Router) {
		// Cheapest refusals first; none of these reads the body, and the
		// gate is taken only by a request that passed the others.
		r.Use(s.capBody, s.requireJSON, s.requireIdentity, s.authenticate, s.admit, s.deadline)
		r.Post(routeEvaluations, s.evaluations)
		r.Post(routeBatch, s.batch)
		r.Post(routeSandbox, s.sandboxEvaluate)
	})
	return otelhttp.NewHandler(r, "sandbox",
		otelhttp.WithTracerProvider(cfg.Tracer),
		otelhttp.WithMeterProvider(cfg.Meter),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, cloudTraceContext{})),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return r.URL.Path != routeHealthz && r.URL.Path != routeReadyz
		}),
	), nil
}

// withDefaults fills the optional zero fields and reports every invalid one
// at once.
func (c *Config) withDefaults() error {
	var problems []error
	bad := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	if c.Effect == nil {
		bad("Effect is required")
	}
	l := c.Limits
	positive := func(name string, v int64) {
		if v <= 0 {
			bad("Limits.%s must be positive, got %d", name, v)
		}
	}
	if l.DefaultWallClock < time.Millisecond {
		bad("Limits.DefaultWallClock must be at least 1ms, got %v", l.DefaultWallClock)
	}
	if l.MaxWallClock < time.Millisecond {
		bad("Limits.MaxWallClock must be at least 1ms, got %v", l.MaxWallClock)
	}
	if l.DefaultWallClock > l.MaxWallClock {
		bad("Limits.DefaultWallClock %v exceeds Limits.MaxWallClock %v", l.DefaultWallClock, l.MaxWallClock)
	}
	positive("DefaultMemoryBytes", l.DefaultMemoryBytes)
	positive("MinMemoryBytes", l.MinMemoryBytes)
	positive("MaxMemoryBytes", l.MaxMemoryBytes)
	if l.MinMemoryBytes > l.DefaultMemoryBytes {
		bad("Limits.MinMemoryBytes %d exceeds Limits.DefaultMemoryBytes %d", l.MinMemoryBytes, l.DefaultMemoryBytes)
	}
	if l.DefaultMemoryBytes > l.MaxMemoryBytes {
		bad("Limits.DefaultMemoryBytes %d exceeds Limits.MaxMemoryBytes %d", l.DefaultMemoryBytes, l.MaxMemoryBytes)
	}
	positive("MaxInputBytes", l.MaxInputBytes)
	positive("MaxOutputBytes", l.MaxOutputBytes)
	positive("MaxScriptBytes", l.MaxScriptBytes)
	positive("MaxRequestBytes", l.MaxRequestBytes)
	if least := api.MinRequestBytes(l.MaxScriptBytes, l.MaxInputBytes); l.MaxRequestBytes < least {
		bad("Limits.MaxRequestBytes %d is below api.MinRequestBytes of MaxScriptBytes and MaxInputBytes, %d: a request within them, escaped, would not arrive", l.MaxRequestBytes, least)
	}
	positive("MaxHeaderBytes", l.MaxHeaderBytes)
	positive("MaxConcurrent", l.MaxConcurrent)
	positive("MaxBatchItems", l.MaxBatchItems)
	if l.RequestTimeout <= 0 {
		bad("Limits.RequestTimeout must be positive, got %v", l.RequestTimeout)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Tracer == nil {
		c.Tracer = tracenoop.NewTracerProvider()
	}
	if c.Meter == nil {
		c.Meter = metricnoop.NewMeterProvider()
	}
	if err := errors.Join(problems...); err != nil {
		return fmt.Errorf("handler: invalid config: %w", err)
	}
	return nil
}

// capabilitiesJSON is GET /v1/capabilities' body: fixed at construction but
// for the isolation member.
func (s *server) capabilitiesJSON() []byte {
	info := api.Info{
		SPIVersion:   spi.SPIVersion,
		Capabilities: s.cfg.Effect.Capabilities(),
		Idempotent:   s.cfg.Effect.Idempotent(),
		ScriptStore:  s.cfg.Effect.ScriptStore(),
		Determinism:  s.cfg.Effect.Replayable(),
		Limits:       s.lim,
		Engine:       s.cfg.Engine,
	}
	if s.cfg.Isolation != nil {
		iso := s.cfg.Isolation()
		info.Isolation = &iso
	}
	return api.AppendInfo(nil, info)
}
