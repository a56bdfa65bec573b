// Package service builds the whole service from a Config: the script store
// behind its cache, the worker pool (or an in-process engine), the effect,
// the handler, telemetry and the HTTP server. The binary's serve and eval
// verbs, the reliability and security tests and the HTTP benchmarks build it
// here and nowhere else, so that what they test is what runs.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/auth"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore/gcsstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// Backend is the engine the service runs guests on: the worker pool, or an
// in-process engine (InProcess).
type Backend interface {
	spi.Reporter
	Warm(ctx context.Context) error
	Close(ctx context.Context) error
}

// Options are what a Config does not say: where the logs go, and the parts a
// test or benchmark puts in place of the configured ones.
type Options struct {
	// Logger receives the service's log lines; nil discards.
	Logger *slog.Logger
	// TelemetryOut is the stdout exporter's output (OTEL_EXPORTER=stdout);
	// nil discards.
	TelemetryOut io.Writer
	// Version is the service's version, in its telemetry.
	Version string
	// Store, when set, is the script store in place of STORE_URL's. The
	// service closes it.
	Store contentstore.Store
	// Backend, when set, builds the engine in place of the worker pool,
	// from the engine options the configuration gives (InProcess).
	Backend func(ctx context.Context, eo worker.EngineOptions, log *slog.Logger) (Backend, error)
	// WrapScripts and WrapBackend put a test's misbehaviour between the
	// effect and the real store or engine.
	WrapScripts func(effect.ScriptReader) effect.ScriptReader
	WrapBackend func(spi.Reporter) spi.Reporter
}

// Service is the wired service.
type Service struct {
	Config Config
	// Handler is the HTTP API; Server serves it with the service's timeouts.
	Handler http.Handler
	Server  *http.Server
	// Backend is the engine; Workers is the same pool when the engine is
	// the worker pool, else nil.
	Backend Backend
	Workers *worker.Pool
	// Effect runs every evaluation over the store and the engine: the
	// handler's, and the eval verb's.
	Effect *effect.Effect
	// Store is the script store behind its cache (Cache); both nil when
	// STORE_URL is none.
	Store contentstore.Store
	Cache *contentstore.Cache

	log     *slog.Logger
	version string
	tel     telemetry.Providers
	ready   atomic.Bool

	// storeName names the store in readiness and its log lines: STORE_URL,
	// or an Options.Store's String ("" without one). storeState is the last store check's
	// failure kind ("" while it answers), so that a failure is logged when
	// it starts or changes, not at every probe.
	storeName  string
	storeMu    sync.Mutex
	storeState string
}

// Limits are the bounds of an evaluation and of a request, from the
// configuration, as GET /v1/capabilities advertises them.
func (c Config) Limits() api.Limits {
	return api.Limits{
		DefaultWallClock: c.DefaultWallClock, MaxWallClock: c.MaxWallClock,
		DefaultMemoryBytes: c.DefaultMemoryBytes, MinMemoryBytes: quickjs.MinMemoryBytes, MaxMemoryBytes: c.MaxMemoryBytes,
		MaxInputBytes: c.MaxInputBytes, MaxOutputBytes: c.MaxOutputBytes,
		MaxScriptBytes: c.MaxScriptBytes, MaxRequestBytes: c.MaxRequestBytes, MaxHeaderBytes: int64(c.MaxHeaderBytes),
		MaxConcurrent: int64(c.MaxConcurrentEvaluations), RequestTimeout: c.RequestTimeout,
		MaxBatchItems: int64(c.MaxBatchItems),
	}
}

// EffectOptions are the effect's options, from the configuration: the
// bounds that Limits advertises, which the effect applies to every
// evaluation (docs/spi.md, "Answers no retry can change"). The effect takes
// the run's timeline from the backend (spi.Timed), which Timing describes.
func (c Config) EffectOptions(log *slog.Logger) effect.Options {
	return effect.Options{
		MaxInputBytes: int(c.MaxInputBytes), MaxOutputBytes: int(c.MaxOutputBytes),
		MaxScriptBytes: c.MaxScriptBytes, MinMemoryBytes: quickjs.MinMemoryBytes, MaxMemoryBytes: c.MaxMemoryBytes,
		MaxWallClock: c.MaxWallClock,
		Logger:       log,
	}
}

// EngineOptions are the engine's options, from the configuration: each
// worker's, whose engine keeps its share of COMPILED_SCRIPT_BYTES.
func (c Config) EngineOptions() worker.EngineOptions {
	return worker.EngineOptions{
		MaxMemoryBytes:      c.MaxMemoryBytes,
		CPUBudget:           c.CPUBudget,
		PoolSize:            c.PoolSize,
		HardKillGrace:       c.HardKillGrace,
		ProcessKill:         c.ProcessKill,
		CompilationCacheDir: c.CompilationCacheDir,
		CompiledScriptBytes: c.CompiledScriptBytes / int64(max(1, c.MaxConcurrentEvaluations+c.WorkerSpares)),
	}
}

// Timing is the clock of a run with this wall clock, under HARD_KILL_GRACE.
func (c Config) Timing(wallClock time.Duration) spi.Timing {
	return spi.EngineTiming(wallClock, c.HardKillGrace)
}

// InProcess is an Options.Backend that runs guests in this process, on one
// quickjs.Engine, without worker processes or their lock-down: for tests of
// the HTTP layer and for benchmarks. extra options apply after the
// configuration's.
func InProcess(extra ...quickjs.Option) func(context.Context, worker.EngineOptions, *slog.Logger) (Backend, error) {
	return func(ctx context.Context, eo worker.EngineOptions, log *slog.Logger) (Backend, error) {
		return quickjs.New(ctx, append(eo.QuickJSOptions(log), extra...)...)
	}
}

// New validates cfg and checks what it names on this host (HostProblems;
// not the store when Options.Store replaces it), reporting every problem at
// once, and wires the parts. It starts no worker until Warm or Serve; the
// service is ready once the first is warm. Close releases what New built,
// on every path.
func New(ctx context.Context, cfg Config, opts Options) (s *Service, err error) {
	if err := errors.Join(append(cfg.Validate(), cfg.hostProblems(opts.Store == nil)...)...); err != nil {
		return nil, fmt.Errorf("configuration:\n%w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.TelemetryOut == nil {
		opts.TelemetryOut = io.Discard
	}
	s = &Service{Config: cfg, log: log, version: opts.Version}
	defer func() {
		if err != nil {
			s.Close(ctx)
			s = nil
		}
	}()
	if s.tel, err = telemetry.Setup(ctx, cfg.OTelExporter, "sandbox-cloudrun", opts.Version, opts.TelemetryOut); err != nil {
		return s, err
	}

	scripts := effect.NoStore
	switch {
	case opts.Store != nil:
		s.Store = opts.Store
		if n, ok := opts.Store.(fmt.Stringer); ok {
			s.storeName = n.String()
		}
	case cfg.StoreURL != "none":
		s.storeName = cfg.StoreURL
		if s.Store, err = OpenStore(ctx, cfg.StoreURL, contentstore.Options{MaxScriptBytes: cfg.MaxScriptBytes, Logger: log}); err != nil {
			return s, err
		}
	}
	if s.Store != nil {
		s.Cache = contentstore.NewCache(s.Store, contentstore.CacheOptions{
			MaxBytes: cfg.ScriptCacheBytes, ConfirmAfter: cfg.ScriptConfirmAfter, Logger: log})
		scripts = s.Cache
		if opts.WrapScripts != nil {
			scripts = opts.WrapScripts(scripts)
		}
	}

	if opts.Backend != nil {
		if s.Backend, err = opts.Backend(ctx, cfg.EngineOptions(), log); err != nil {
			return s, err
		}
	} else {
		s.Workers, err = worker.New(worker.Options{
			Engine:     cfg.EngineOptions(),
			Concurrent: cfg.MaxConcurrentEvaluations,
			Spares:     cfg.WorkerSpares,
			Lockdown:   worker.Lockdown(cfg.WorkerLockdown),
			Logger:     log,
			LogLevel:   cfg.LogLevel,
		})
		if err != nil {
			return s, err
		}
		s.Backend = s.Workers
	}
	var backend spi.Reporter = s.Backend
	if opts.WrapBackend != nil {
		backend = opts.WrapBackend(backend)
	}
	if s.Effect, err = effect.New(scripts, backend, cfg.EffectOptions(log)); err != nil {
		return s, err
	}

	authFn, err := authenticator(ctx, cfg)
	if err != nil {
		return s, err
	}
	hcfg := handler.Config{
		Effect: s.Effect,
		Limits: cfg.Limits(),
		Ready:  s.readiness,
		Auth:   authFn,
		Engine: api.Engine{Name: quickjs.EngineName, Version: quickjs.EngineVersion, WasmSHA256: quickjs.WasmSHA256()},
		Logger: log,
		Tracer: s.tel.Tracer,
		Meter:  s.tel.Meter,
	}
	if s.Workers != nil {
		hcfg.Isolation = func() api.Isolation { return isolation(s.Workers.Protections()) }
	}
	if s.Cache != nil {
		hcfg.CacheStats = s.Cache.Stats
	}
	if c, ok := s.Backend.(interface {
		CompiledScripts() quickjs.CompiledScriptStats
	}); ok {
		hcfg.CompiledScriptStats = func() (hits, misses, evictions uint64) {
			st := c.CompiledScripts()
			return st.Hits, st.Misses, st.Evictions
		}
	}
	if s.Handler, err = handler.New(hcfg); err != nil {
		return s, err
	}
	s.Server = &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.RequestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// isolation is the capabilities document's account of the workers'
// protections.
func isolation(p worker.Protections) api.Isolation {
	return api.Isolation{Process: p.Process, EmptyEnvironment: p.EmptyEnvironment, NoNewPrivs: p.NoNewPrivs,
		ResourceLimits: p.ResourceLimits, Seccomp: p.Seccomp}
}

// OpenStore opens the script store a STORE_URL names, GCS included; its
// error names the variable and its value.
func OpenStore(ctx context.Context, rawURL string, opts contentstore.Options) (contentstore.Store, error) {
	s, err := gcsstore.Open(ctx, rawURL, opts)
	if err != nil {
		return nil, fmt.Errorf("STORE_URL=%s: the script store cannot be opened: %w", rawURL, err)
	}
	return s, nil
}

// authenticator is the handler's Auth hook when AUTH_AUDIENCE is set.
func authenticator(ctx context.Context, cfg Config) (func(*http.Request) (string, error), error) {
	if cfg.AuthAudience == "" {
		return nil, nil
	}
	v, err := auth.NewVerifier(ctx, cfg.AuthAudience, cfg.AuthAllowedCallers)
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) (string, error) {
		p, err := v.Verify(r)
		switch {
		case errors.Is(err, auth.ErrForbidden):
			return p, fmt.Errorf("%w: %w", handler.ErrForbidden, err)
		case errors.Is(err, auth.ErrUnauthenticated):
			return p, fmt.Errorf("%w: %w", handler.ErrUnauthenticated, err)
		}
		return p, err // auth.ErrUnavailable and the like: a retryable 503
	}, nil
}

// readiness: the first worker is warm, workers are starting, and the store
// answers. What is wrong is said by a handler.NotReady, whose reason
// GET /readyz's problem sends (the causes go to the log).
func (s *Service) readiness(ctx context.Context) error {
	var reasons []string
	var causes []error
	unhealthy := error(nil)
	if s.Workers != nil {
		unhealthy = s.Workers.Healthy()
	}
	switch {
	case unhealthy != nil:
		reasons, causes = append(reasons, "the sandbox workers fail to start"), append(causes, unhealthy)
	case !s.ready.Load() && s.Workers != nil:
		reasons = append(reasons, "the first sandbox worker is starting")
	case !s.ready.Load():
		reasons = append(reasons, "the engine is not warm yet")
	}
	if s.Store != nil {
		if err := s.checkStore(ctx); err != nil {
			reasons, causes = append(reasons, s.storeReason(err)), append(causes, fmt.Errorf("script store: %w", err))
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	reason := strings.Join(reasons, "; ")
	if len(causes) > 0 {
		reason += " (the log says why)"
	}
	return &handler.NotReady{Reason: reason, Err: errors.Join(causes...)}
}

// storeReason says how the store failed its check, for readiness: by the
// kind of failure, not the cause's text.
func (s *Service) storeReason(err error) string {
	what := "the script store"
	if s.storeName != "" {
		what += " " + s.storeName
	}
	return what + " cannot be read: " + storeFailure(err)
}

// storeFailure is the kind of a store check's failure, in words, by the
// effect's classification of a store's errors.
func storeFailure(err error) string {
	switch effect.StoreReason(err) {
	case effect.ScriptNotFound:
		return "it does not exist"
	case effect.StoreRefused:
		return "access is denied"
	case effect.StoreUnavailable:
		return "it does not answer"
	}
	return "it fails"
}

// checkStore checks the store and logs when its state changes: a failure
// at ERROR when it will not mend on its own (the store does not exist, or
// access is denied), else at WARNING, with its cause; the return to
// service at INFO. A check cut short by its caller (a probe that went
// away) changes nothing.
func (s *Service) checkStore(ctx context.Context) error {
	err := s.Store.Check(ctx)
	if err != nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	state := ""
	if err != nil {
		state = storeFailure(err)
	}
	s.storeMu.Lock()
	prev := s.storeState
	s.storeState = state
	s.storeMu.Unlock()
	switch {
	case state == prev:
	case err != nil:
		level := slog.LevelWarn
		if r := effect.StoreReason(err); r == effect.ScriptNotFound || r == effect.StoreRefused {
			level = slog.LevelError
		}
		s.log.Log(ctx, level, "the script store cannot be read: "+state, "store", s.storeName, "err", err.Error())
	default:
		s.log.Info("the script store can be read again", "store", s.storeName)
	}
	return err
}

// Warm starts the engine (the first worker process, or the in-process
// engine's compilation); the service is ready when it returns nil.
func (s *Service) Warm(ctx context.Context) error {
	start := time.Now()
	if err := s.Backend.Warm(ctx); err != nil {
		return err
	}
	attrs := []any{"took", time.Since(start).String()}
	if s.Workers != nil {
		attrs = append(attrs, "protections", s.Workers.Protections().String())
	}
	if !s.ready.Swap(true) {
		s.log.Info("engine warm", attrs...)
	}
	return nil
}

// Serve serves on ln until ctx ends, warming the engine in the background,
// then drains: no new requests, the running evaluation finishes or hits its
// deadline, all within SHUTDOWN_TIMEOUT, and the service is closed.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	s.log.Info("serving", "addr", ln.Addr().String(), "version", s.version, "engine", quickjs.EngineVersion,
		"store", s.Config.StoreURL, "processKill", s.Config.ProcessKill, "workerLockdown", s.Config.WorkerLockdown)
	if !s.ready.Load() {
		go func() {
			if err := s.Warm(ctx); err != nil {
				s.log.Log(ctx, startupFailedLevel, WorkersFailedMessage, "err", err)
			}
		}()
	}
	checked := make(chan struct{})
	if s.Store != nil {
		// a store that cannot be read does not stop the server (it may be
		// a moment's; scripts by value need none), but is said at once,
		// not at the first probe
		go func() {
			defer close(checked)
			cctx, cancel := context.WithTimeout(ctx, handler.ReadyTimeout)
			defer cancel()
			_ = s.checkStore(cctx)
		}()
	} else {
		close(checked)
	}
	served := make(chan error, 1)
	// net/http refuses a header block over MaxHeaderBytes itself; the
	// listener makes its answer the service's problem document.
	ln = handler.HeaderLimitListener(ln, s.Server.MaxHeaderBytes, s.log)
	go func() { served <- s.Server.Serve(ln) }()

	var err error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down: draining")
	case err = <-served:
	}
	s.ready.Store(false)
	sctx, cancel := context.WithTimeout(context.Background(), s.Config.ShutdownTimeout)
	defer cancel()
	if serr := s.Server.Shutdown(sctx); serr != nil {
		s.log.Warn("drain did not finish in time", "err", serr)
		_ = s.Server.Close()
	}
	<-checked // ended with ctx: the store is not closed under it
	s.Close(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Close stops the engine, closes the store and flushes telemetry.
func (s *Service) Close(ctx context.Context) {
	if s.Backend != nil {
		if err := s.Backend.Close(ctx); err != nil {
			s.log.Warn("sandbox workers close", "err", err)
		}
	}
	switch {
	case s.Cache != nil:
		_ = s.Cache.Close() // and the store
	case s.Store != nil:
		_ = s.Store.Close()
	}
	if s.tel.Shutdown != nil {
		_ = s.tel.Shutdown(ctx)
	}
}
