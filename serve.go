package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/auth"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// serve runs the HTTP service until ctx ends (SIGTERM), then drains.
func serve(ctx context.Context, stdout, stderr io.Writer) error {
	cfg, err := loadConfig()
	if err != nil {
		// logged as JSON like every line of the service, once
		telemetry.NewLogger(stdout, slog.LevelInfo, "").Error("start-up failed", "err", err.Error())
		return exitError{1, errSilent}
	}
	level, _ := cfg.level()
	log := telemetry.NewLogger(stdout, level, cfg.GoogleProject)
	srv, err := newServer(ctx, cfg, log, stdout)
	if err != nil {
		log.Error("start-up failed", "err", err.Error())
		return exitError{1, errSilent}
	}
	ln, err := net.Listen("tcp", ":"+cfg.Port)
	if err != nil {
		srv.close(context.Background())
		log.Error("start-up failed", "err", fmt.Sprintf("listen on :%s: %v", cfg.Port, err))
		return exitError{1, errSilent}
	}
	return srv.serve(ctx, ln)
}

// server is the wired service: store, workers, effect, handler, telemetry.
type server struct {
	cfg     Config
	log     *slog.Logger
	store   contentstore.Store // nil in credential-free mode
	workers *worker.Pool
	tel     telemetry.Providers
	http    *http.Server
	ready   atomic.Bool
	handler http.Handler
}

// newServer wires the parts. It starts the worker processes in the
// background; /readyz turns ready when the first is warm.
func newServer(ctx context.Context, cfg Config, log *slog.Logger, telemetryOut io.Writer) (*server, error) {
	s := &server{cfg: cfg, log: log}
	tel, err := telemetry.Setup(ctx, cfg.OTelExporter, "sandbox-cloudrun", version, telemetryOut)
	if err != nil {
		return nil, err
	}
	s.tel = tel

	var cache *contentstore.Cache
	var scripts effect.ScriptReader
	if cfg.StoreURL != "none" {
		st, err := contentstore.Open(ctx, cfg.StoreURL, contentstore.Options{MaxScriptBytes: cfg.MaxScriptBytes, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("script store %s: %w", cfg.StoreURL, err)
		}
		cache = contentstore.NewCache(st, cfg.ScriptCacheBytes, log)
		s.store, scripts = cache, cache
	}

	pool, err := worker.New(worker.Options{
		Engine: worker.EngineOptions{
			MaxMemoryBytes:      cfg.MaxMemoryBytes,
			CPUBudget:           cfg.CPUBudget,
			PoolSize:            cfg.PoolSize,
			HardKillGrace:       cfg.HardKillGrace,
			ProcessKill:         cfg.ProcessKill,
			CompilationCacheDir: cfg.CompilationCacheDir,
		},
		Concurrent: cfg.MaxConcurrentEvaluations,
		Spares:     cfg.WorkerSpares,
		Lockdown:   worker.Lockdown(cfg.WorkerLockdown),
		Logger:     log,
		LogLevel:   cfg.LogLevel,
	})
	if err != nil {
		s.close(ctx)
		return nil, err
	}
	s.workers = pool

	limits := handler.Limits{
		DefaultWallClock: cfg.DefaultWallClock, MaxWallClock: cfg.MaxWallClock,
		DefaultMemoryBytes: cfg.DefaultMemoryBytes, MaxMemoryBytes: cfg.MaxMemoryBytes,
		MaxInputBytes: cfg.MaxInputBytes, MaxOutputBytes: cfg.MaxOutputBytes,
		MaxScriptBytes: cfg.MaxScriptBytes, MaxRequestBytes: cfg.MaxRequestBytes,
	}
	var eff *effect.Effect
	if scripts != nil {
		eff, err = handler.NewEffect(scripts, pool, limits, effect.Options{
			// covers waiting for a worker, and the hard kill
			BackendGrace: worker.CallerGrace(cfg.HardKillGrace),
			Logger:       log,
		})
		if err != nil {
			s.close(ctx)
			return nil, err
		}
	}
	var authFn func(*http.Request) (string, error)
	if cfg.AuthAudience != "" {
		v, err := auth.NewVerifier(ctx, cfg.AuthAudience, cfg.AuthAllowedCallers)
		if err != nil {
			s.close(ctx)
			return nil, err
		}
		authFn = func(r *http.Request) (string, error) {
			p, err := v.Verify(r)
			switch {
			case errors.Is(err, auth.ErrForbidden):
				return p, fmt.Errorf("%w: %w", handler.ErrForbidden, err)
			case errors.Is(err, auth.ErrUnauthenticated):
				return p, fmt.Errorf("%w: %w", handler.ErrUnauthenticated, err)
			}
			return p, err // auth.ErrUnavailable and the like: a retryable 503
		}
	}

	hcfg := handler.Config{
		Backend:        pool,
		Scripts:        scripts,
		Effect:         eff,
		Ready:          s.readiness,
		Limits:         limits,
		MaxConcurrent:  cfg.MaxConcurrentEvaluations,
		RequestTimeout: cfg.RequestTimeout,
		HardKillGrace:  worker.CallerGrace(cfg.HardKillGrace),
		Auth:           authFn,
		Engine:         handler.EngineInfo{Name: quickjs.EngineName, Version: quickjs.EngineVersion, WasmSHA256: quickjs.WasmSHA256()},
		Isolation:      func() any { return pool.Protections() },
		Logger:         log,
		Tracer:         tel.Tracer,
		Meter:          tel.Meter,
	}
	if cache != nil {
		hcfg.CacheStats = cache.Stats
	}
	h, err := handler.New(hcfg)
	if err != nil {
		s.close(ctx)
		return nil, err
	}
	s.handler = h
	s.http = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.RequestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// readiness: the first worker is warm, workers are starting, and the store
// answers.
func (s *server) readiness(ctx context.Context) error {
	if !s.ready.Load() {
		return errors.New("the sandbox workers are starting")
	}
	if err := s.workers.Healthy(); err != nil {
		return err
	}
	if s.store != nil {
		if err := s.store.Check(ctx); err != nil {
			return fmt.Errorf("script store: %w", err)
		}
	}
	return nil
}

// serve serves on ln until ctx ends, then drains: no new requests, the
// running evaluation finishes or hits its deadline, exit within
// SHUTDOWN_TIMEOUT.
func (s *server) serve(ctx context.Context, ln net.Listener) error {
	s.log.Info("serving", "addr", ln.Addr().String(), "version", version, "engine", quickjs.EngineVersion,
		"store", s.cfg.StoreURL, "processKill", s.cfg.ProcessKill, "workerLockdown", s.cfg.WorkerLockdown)
	go func() {
		start := time.Now()
		if err := s.workers.Warm(ctx); err != nil {
			s.log.Error("the sandbox workers failed to start", "err", err)
			return
		}
		s.ready.Store(true)
		s.log.Info("engine warm", "took", time.Since(start).String(), "protections", s.workers.Protections().String())
	}()
	served := make(chan error, 1)
	go func() { served <- s.http.Serve(ln) }()

	var err error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down: draining")
	case err = <-served:
	}
	s.ready.Store(false)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if serr := s.http.Shutdown(sctx); serr != nil {
		s.log.Warn("drain did not finish in time", "err", serr)
		_ = s.http.Close()
	}
	s.close(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *server) close(ctx context.Context) {
	if s.workers != nil {
		if err := s.workers.Close(ctx); err != nil {
			s.log.Warn("sandbox workers close", "err", err)
		}
	}
	if s.store != nil {
		_ = s.store.Close()
	}
	if s.tel.Shutdown != nil {
		_ = s.tel.Shutdown(ctx)
	}
}
