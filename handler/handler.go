// Package handler is the service's HTTP layer: it decodes requests, calls the
// effect (POST /v1/evaluations) or the engine (POST /v1/sandbox/evaluate, the
// backend SPI over HTTP), and encodes outcomes and problems. It is the one
// place that maps channels, outcomes and errors to HTTP (api/openapi.yaml is
// the contract; docs/problems.md lists every problem type).
//
// Every size a client controls is bounded here before anything else runs: the
// request body (MaxRequestBytes), an SPI input (MaxInputBytes) and an inline
// script (MaxScriptBytes). At most MaxConcurrent evaluations run at once; the
// next one is refused at once with 429, never queued. Each evaluation's
// context ends at the earliest of the client's disconnect, the server's
// request timeout and the run's wall clock plus a grace, and the engine stops
// when it ends.
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
)

// Limits are the server's bounds on an evaluation. Every field must be
// positive; each default must not exceed its maximum.
type Limits struct {
	// DefaultWallClock is the wall clock of a request that names none.
	DefaultWallClock time.Duration
	// MaxWallClock is the largest wall clock a request may ask for
	// (limits.wallClockMs); a larger one is a 400 problem. It should be
	// below RequestTimeout minus HardKillGrace, or the request timeout ends
	// long runs first.
	MaxWallClock time.Duration
	// DefaultMemoryBytes is the memory limit of a request that names none.
	DefaultMemoryBytes int64
	// MaxMemoryBytes is the largest memory limit a request may ask for
	// (limits.memoryBytes). It must not exceed the engine's own maximum
	// (checked when the backend has a MaxMemoryBytes method).
	MaxMemoryBytes int64
	// MaxInputBytes bounds the input's JSON text. On /v1/evaluations the
	// effect applies it (typed inputTooLarge; build the effect with
	// NewEffect so that it uses this value); on /v1/sandbox/evaluate a
	// longer inputJson is a 413 problem.
	MaxInputBytes int64
	// MaxOutputBytes bounds the value's canonical JSON text on
	// /v1/evaluations (typed limitExceeded output, applied by the effect;
	// NewEffect passes it on). The SPI route returns the value whole: the
	// caller's effect bounds it (ADR 0144 D2: a backend never reports the
	// output limit), and the memory limit bounds what the engine can make,
	// at most effect.MaxValueBytes(MaxMemoryBytes), which the route enforces.
	MaxOutputBytes int64
	// MaxScriptBytes bounds a script: an inline one on the SPI route (413
	// problem) and a stored one fetched by reference (413 problem, or the
	// effect's untyped failure).
	MaxScriptBytes int64
	// MaxRequestBytes bounds a request body (413 problem). It should leave
	// room for MaxInputBytes and MaxScriptBytes as JSON strings, whose
	// escapes can take up to six bytes per byte of text.
	MaxRequestBytes int64
}

// EngineInfo identifies the engine in GET /v1/capabilities.
type EngineInfo struct {
	Name       string // for example quickjs.EngineName
	Version    string // for example quickjs.EngineVersion
	WasmSHA256 string // lowercase hex SHA-256 of the engine's wasm, quickjs.WasmSHA256()
}

// LogBackend is a backend that can also return a run's console output
// (quickjs.Engine).
type LogBackend interface {
	effect.Backend
	EvaluateWithLogs(ctx context.Context, req effect.Request) (effect.Outcome, string, error)
}

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

// Config is what New needs. Backend, Limits, MaxConcurrent, RequestTimeout
// and HardKillGrace are required (the service's configuration owns their
// defaults); the rest may be zero.
type Config struct {
	// Backend is the engine. The SPI route calls it through the effect's
	// own Caller (Effect.Caller), or, when Effect is nil, through a Caller
	// New builds over it with the effect's default options (its
	// capabilities read once, in New; a backend with network access or
	// reused environments refused, as the effect refuses it).
	Backend LogBackend
	// Scripts reads scripts by reference for the SPI route's scriptRef.
	// Nil means no store is configured (credential-free mode):
	// /v1/evaluations and scriptRef on the SPI route answer 503 problem
	// no-script-store; a script by value still works.
	Scripts effect.ScriptReader
	// Effect serves /v1/evaluations. Build it with NewEffect over the same
	// Scripts and Backend: that wraps the backend with CaptureLogs (for
	// captureLogs) and the store with ObserveScripts (fetch timings and
	// spans), and passes the byte bounds of Limits. Nil exactly when
	// Scripts is nil.
	Effect *effect.Effect
	// Ready reports readiness for GET /readyz: the engine compiled and
	// warm, the store reachable. Nil means always ready.
	Ready func(ctx context.Context) error
	// Limits are the defaults and maxima of an evaluation.
	Limits Limits
	// MaxConcurrent is how many evaluations run at once (both evaluation
	// routes together); the next request gets 429 with Retry-After at once.
	// It must be positive.
	MaxConcurrent int
	// RequestTimeout is the server's own deadline for an evaluation request,
	// counted from when it passes the concurrency gate; set it to the Cloud
	// Run request timeout. When it passes, the run is stopped and the
	// response is a 504 problem. Fetching a script by reference must end by
	// this deadline minus the run's wall clock and HardKillGrace (at least
	// a second after it starts), so that the run still fits: a store that
	// has not delivered by then is a retryable 503 store-unavailable (on
	// /v1/evaluations through the reader NewEffect installs). It must be
	// positive.
	RequestTimeout time.Duration
	// HardKillGrace bounds how long a request waits, after the effect gave
	// up on a run, for the engine to stop before the next request is
	// admitted, and it sets the fetch deadline (see RequestTimeout). Without
	// an Effect it is also the SPI route's backend grace (with one, the
	// effect's BackendGrace is, as on /v1/evaluations): added to the run's
	// wall clock, it gives the deadline of the backend call. It should
	// exceed the engine's own hard-kill grace, so that the engine reports
	// the wall-clock limit itself; a backend still running at the deadline
	// is a retryable 503.
	// It must be positive.
	HardKillGrace time.Duration
	// Auth authenticates a request to /v1/...; nil turns it off. It returns
	// the caller's identity (logged) or an error wrapping ErrUnauthenticated
	// (401) or ErrForbidden (403); the error's text is the problem's detail,
	// so it must not carry secrets. /healthz and /readyz are never
	// authenticated (platform probes).
	Auth func(r *http.Request) (principal string, err error)
	// Engine identifies the engine in GET /v1/capabilities.
	Engine EngineInfo
	// Isolation, when set, is the "isolation" member of GET
	// /v1/capabilities, read at each request: which protections beyond
	// wasm are on (the worker processes' lock-down).
	Isolation func() any
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
}

// Route patterns.
const (
	routeEvaluations = "/v1/evaluations"
	routeSandbox     = "/v1/sandbox/evaluate"
	routeCaps        = "/v1/capabilities"
	routeHealthz     = "/healthz"
	routeReadyz      = "/readyz"
)

// allowedMethods is the Allow header of each route, for 405 responses.
var allowedMethods = map[string]string{
	routeEvaluations: http.MethodPost,
	routeSandbox:     http.MethodPost,
	routeCaps:        http.MethodGet,
	routeHealthz:     http.MethodGet,
	routeReadyz:      http.MethodGet,
}

// server is the state behind the router.
type server struct {
	cfg      Config
	lim      Limits
	caller   *effect.Caller
	caps     effect.Capabilities
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
		gate: make(chan struct{}, cfg.MaxConcurrent),
		log:  cfg.Logger,
	}
	var err error
	if s.caller, err = newCaller(cfg); err != nil {
		return nil, err
	}
	s.caps = s.caller.Capabilities()
	if s.capsJSON, err = s.capabilitiesJSON(); err != nil {
		return nil, err
	}
	s.tracer = cfg.Tracer.Tracer(instrumentationName)
	if s.metrics, err = newMetrics(cfg.Meter, cfg.CacheStats); err != nil {
		return nil, fmt.Errorf("handler: metrics: %w", err)
	}

	r := chi.NewRouter()
	r.Use(s.traceContext, s.requestLog, s.recoverPanics)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)
	r.Get(routeHealthz, s.healthz)
	r.Get(routeReadyz, s.readyz)
	r.With(s.authenticate).Get(routeCaps, s.capabilities)
	r.Group(func(r chi.Router) {
		// Cheapest refusals first; none of these reads the body, and the
		// gate is taken only by a request that passed the others.
		r.Use(s.capBody, s.requireJSON, s.authenticate, s.admit, s.deadline)
		r.Post(routeEvaluations, s.evaluations)
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
	if c.Backend == nil {
		bad("Backend is required")
	}
	switch {
	case c.Scripts != nil && c.Effect == nil:
		bad("Effect is required when Scripts is set (build it with NewEffect)")
	case c.Scripts == nil && c.Effect != nil:
		bad("Effect is set without Scripts: set both, or neither for credential-free mode")
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
	positive("MaxMemoryBytes", l.MaxMemoryBytes)
	if l.DefaultMemoryBytes > l.MaxMemoryBytes {
		bad("Limits.DefaultMemoryBytes %d exceeds Limits.MaxMemoryBytes %d", l.DefaultMemoryBytes, l.MaxMemoryBytes)
	}
	if m, ok := c.Backend.(interface{ MaxMemoryBytes() int64 }); ok && c.Backend != nil && l.MaxMemoryBytes > m.MaxMemoryBytes() {
		bad("Limits.MaxMemoryBytes %d exceeds the engine's maximum of %d", l.MaxMemoryBytes, m.MaxMemoryBytes())
	}
	positive("MaxInputBytes", l.MaxInputBytes)
	positive("MaxOutputBytes", l.MaxOutputBytes)
	positive("MaxScriptBytes", l.MaxScriptBytes)
	positive("MaxRequestBytes", l.MaxRequestBytes)
	if c.MaxConcurrent <= 0 {
		bad("MaxConcurrent must be positive, got %d", c.MaxConcurrent)
	}
	if c.RequestTimeout <= 0 {
		bad("RequestTimeout must be positive, got %v", c.RequestTimeout)
	}
	if c.HardKillGrace <= 0 {
		bad("HardKillGrace must be positive, got %v", c.HardKillGrace)
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

// newCaller is the SPI route's call of the backend: the effect's own when
// there is an effect, so that both routes share one vetted copy of the
// backend's declaration, else one over Backend with HardKillGrace.
func newCaller(cfg Config) (*effect.Caller, error) {
	if cfg.Effect != nil {
		return cfg.Effect.Caller(), nil
	}
	c, err := effect.NewCaller(CaptureLogs(cfg.Backend), effect.Options{BackendGrace: cfg.HardKillGrace, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("handler: %w", err)
	}
	return c, nil
}

// capabilitiesJSON is GET /v1/capabilities' body: fixed at construction but
// for the isolation member.
func (s *server) capabilitiesJSON() ([]byte, error) {
	l := s.lim
	var isolation any
	if s.cfg.Isolation != nil {
		isolation = s.cfg.Isolation()
	}
	return api.AppendInfo(nil, api.Info{
		SPIVersion:   effect.SPIVersion,
		Capabilities: s.caps,
		Idempotent:   s.caller.Idempotent(),
		ScriptStore:  s.cfg.Scripts != nil,
		Limits: api.Limits{
			DefaultWallClock:   l.DefaultWallClock,
			MaxWallClock:       l.MaxWallClock,
			DefaultMemoryBytes: l.DefaultMemoryBytes,
			MaxMemoryBytes:     l.MaxMemoryBytes,
			MaxInputBytes:      l.MaxInputBytes,
			MaxOutputBytes:     l.MaxOutputBytes,
			MaxScriptBytes:     l.MaxScriptBytes,
			MaxRequestBytes:    l.MaxRequestBytes,
			MaxConcurrent:      int64(s.cfg.MaxConcurrent),
			RequestTimeout:     s.cfg.RequestTimeout,
		},
		Engine:    api.Engine{Name: s.cfg.Engine.Name, Version: s.cfg.Engine.Version, WasmSHA256: s.cfg.Engine.WasmSHA256},
		Isolation: isolation,
	})
}
