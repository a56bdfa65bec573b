package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/auth"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// serve runs the HTTP service until ctx ends (SIGTERM), then drains.
func serve(ctx context.Context, stdout, stderr io.Writer) error {
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	level, _ := cfg.level()
	log := telemetry.NewLogger(stdout, level, cfg.GoogleProject)
	ensureSpareProcessor(cfg.MaxConcurrentEvaluations, log)
	if cfg.MaxConcurrentEvaluations == 1 {
		tuneGC(os.LookupEnv, log)
	}
	srv, err := newServer(ctx, cfg, log, stdout)
	if err != nil {
		log.Error("start-up failed", "err", err)
		return err
	}
	ln, err := net.Listen("tcp", ":"+cfg.Port)
	if err != nil {
		srv.close(context.Background())
		return fmt.Errorf("listen on :%s: %w", cfg.Port, err)
	}
	return srv.serve(ctx, ln)
}

// server is the wired service: store, engine, effect, handler, telemetry.
type server struct {
	cfg     Config
	log     *slog.Logger
	store   contentstore.Store // nil in credential-free mode
	engine  *quickjs.Engine
	tel     telemetry.Providers
	http    *http.Server
	ready   atomic.Bool
	stuck   chan struct{}
	handler http.Handler
}

// newServer wires the parts. It does not compile the engine: serve warms it
// in the background, and /readyz turns ready when it is warm.
func newServer(ctx context.Context, cfg Config, log *slog.Logger, telemetryOut io.Writer) (*server, error) {
	s := &server{cfg: cfg, log: log, stuck: make(chan struct{}, 1)}
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

	opts := []quickjs.Option{
		quickjs.WithMaxMemoryBytes(cfg.MaxMemoryBytes),
		quickjs.WithCPUBudget(cfg.CPUBudget),
		quickjs.WithPoolSize(cfg.PoolSize),
		quickjs.WithHardKill(quickjs.HardKillWatchdog, cfg.HardKillGrace),
		quickjs.WithProcessKill(cfg.ProcessKill),
		// one run per process: nothing overlaps a run to keep the collector
		// off for long
		quickjs.WithGCHeldDuringRuns(cfg.MaxConcurrentEvaluations == 1),
		quickjs.WithLogger(log),
		quickjs.WithOnStuck(s.onStuck),
	}
	if cfg.CompilationCacheDir != "" {
		opts = append(opts, quickjs.WithCompilationCache(cfg.CompilationCacheDir))
	}
	engine, err := quickjs.New(ctx, opts...)
	if err != nil {
		s.close(ctx)
		return nil, err
	}
	s.engine = engine

	limits := handler.Limits{
		DefaultWallClock: cfg.DefaultWallClock, MaxWallClock: cfg.MaxWallClock,
		DefaultMemoryBytes: cfg.DefaultMemoryBytes, MaxMemoryBytes: cfg.MaxMemoryBytes,
		MaxInputBytes: cfg.MaxInputBytes, MaxOutputBytes: cfg.MaxOutputBytes,
		MaxScriptBytes: cfg.MaxScriptBytes, MaxRequestBytes: cfg.MaxRequestBytes,
	}
	var eff *effect.Effect
	if scripts != nil {
		eff, err = handler.NewEffect(scripts, engine, limits, effect.Options{
			// covers instantiation when the pool is empty, and the hard kill
			BackendGrace: 2*cfg.HardKillGrace + time.Second,
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
		Backend:        engine,
		Scripts:        scripts,
		Effect:         eff,
		Ready:          s.readiness,
		Limits:         limits,
		MaxConcurrent:  cfg.MaxConcurrentEvaluations,
		RequestTimeout: cfg.RequestTimeout,
		HardKillGrace:  2*cfg.HardKillGrace + time.Second,
		Auth:           authFn,
		Engine:         handler.EngineInfo{Name: quickjs.EngineName, Version: quickjs.EngineVersion, WasmSHA256: quickjs.WasmSHA256()},
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
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.RequestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// readiness: the engine is compiled and warm, and the store answers.
func (s *server) readiness(ctx context.Context) error {
	if !s.ready.Load() {
		return errors.New("engine is warming up")
	}
	if s.store != nil {
		if err := s.store.Check(ctx); err != nil {
			return fmt.Errorf("script store: %w", err)
		}
	}
	return nil
}

// onStuck is called when the watchdog abandons a run stuck in native code.
// One request per instance makes ending the process sound: the response is
// already on its way, and the platform replaces the instance. The kernel
// timer armed by WithProcessKill is the backstop if this goroutine cannot run.
func (s *server) onStuck(r quickjs.StuckRun) {
	s.log.Error("a run did not stop at its deadline; ending the process so the platform replaces it",
		"overrun", r.Overrun.String(), "cancelled", r.Cancelled)
	s.ready.Store(false)
	select {
	case s.stuck <- struct{}{}:
	default:
	}
}

// serve serves on ln until ctx ends, then drains: no new requests, the
// running evaluation finishes or hits its deadline, exit within
// SHUTDOWN_TIMEOUT.
func (s *server) serve(ctx context.Context, ln net.Listener) error {
	s.log.Info("serving", "addr", ln.Addr().String(), "version", version, "engine", quickjs.EngineVersion,
		"store", s.cfg.StoreURL, "processKill", s.cfg.ProcessKill)
	warmed := make(chan error, 1)
	go func() {
		start := time.Now()
		err := s.engine.Warm(ctx)
		if err == nil {
			s.ready.Store(true)
			s.log.Info("engine warm", "took", time.Since(start).String())
		} else {
			s.log.Error("engine failed to warm", "err", err)
		}
		warmed <- err
	}()
	served := make(chan error, 1)
	go func() { served <- s.http.Serve(ln) }()

	var err error
	exitStuck := false
	select {
	case <-ctx.Done():
		s.log.Info("shutting down: draining")
	case err = <-served:
	case <-s.stuck:
		exitStuck = true
	}
	s.ready.Store(false)
	timeout := s.cfg.ShutdownTimeout
	if exitStuck {
		// Stop accepting at once; give the abandoned run's response a
		// moment to flush, and end before the kernel timer does (it fires
		// one grace after the watchdog), so that the exit is ours: code 70
		// and its log line. The engine's close cannot finish (the guest
		// still runs), so everything shares this one short deadline.
		timeout = min(time.Second, s.cfg.HardKillGrace/2)
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if serr := s.http.Shutdown(sctx); serr != nil {
		s.log.Warn("drain did not finish in time", "err", serr)
		_ = s.http.Close()
	}
	if exitStuck {
		// The engine cannot finish closing while the guest still runs: do
		// not spend the deadline waiting for it (a second Close is a no-op).
		done, stop := context.WithCancel(sctx)
		stop()
		if err := s.engine.Close(done); err != nil {
			s.log.Warn("engine close", "err", err)
		}
	}
	s.close(sctx)
	if exitStuck {
		return exitError{70, errors.New("a run was stuck in native code past its hard-kill grace; exited for the platform to replace this instance")}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *server) close(ctx context.Context) {
	if s.engine != nil {
		if err := s.engine.Close(ctx); err != nil {
			s.log.Warn("engine close", "err", err)
		}
	}
	if s.store != nil {
		_ = s.store.Close()
	}
	if s.tel.Shutdown != nil {
		_ = s.tel.Shutdown(ctx)
	}
}

// ensureSpareProcessor makes GOMAXPROCS at least one more than the runs that
// may be in progress at once. A guest cannot be preempted: it holds its
// processor until it returns. With one CPU (Cloud Run's default, which the Go
// runtime turns into GOMAXPROCS=1) a guest stuck in a native builtin would
// hold the only processor, and neither the watchdog nor the HTTP server could
// run until the kernel killed the process, so a stuck run would never be
// answered. A spare processor costs nothing while the guest polls normally:
// the kernel shares the CPU quota between the threads.
func ensureSpareProcessor(maxRuns int, log *slog.Logger) {
	want := maxRuns + 1
	if have := runtime.GOMAXPROCS(0); have < want {
		runtime.GOMAXPROCS(want)
		log.Info("raised GOMAXPROCS so that a stuck run leaves a processor for the watchdog",
			"from", have, "to", want)
	}
}

// defaultGCPercent is Go's collection target when GOGC is not set. A run at
// one per process holds the collector off (quickjs.WithGCHeldDuringRuns),
// and a run that starts while a collection is marking first waits for the
// mark to end, about a millisecond. The service's live heap is small (4 to
// 5 MB), so at Go's default of 100 a collection came every dozen echo
// evaluations, and back-to-back runs often waited. At 200, measured over
// HTTP one at a time (bench/cmd/load, two alternations against GOGC=100):
// echo 2,599-2,654 -> 2,980-3,265 requests/s, the 16 KiB reshape 373-455 ->
// 444-481 requests/s; resident memory under load about 6 MiB higher (59-62
// against 53-56 MiB over 10,000 evaluations, without the baked cache).
const defaultGCPercent = 200

// tuneGC sets the collection target unless the operator set GOGC. The
// service applies it at one run per process only, where the collector is
// held off during runs and the waits it removes happen; with runs
// overlapping there is no hold, and the higher target only raised the
// resident set (the two-at-a-time soak: peak 279 against 190 MiB).
func tuneGC(lookupEnv func(string) (string, bool), log *slog.Logger) {
	if v, set := lookupEnv("GOGC"); set {
		log.Info("GOGC set by the environment; the service's default is not applied", "GOGC", v)
		return
	}
	debug.SetGCPercent(defaultGCPercent)
}
