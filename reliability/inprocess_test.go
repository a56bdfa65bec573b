package reliability

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/internal/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// inprocConfig configures an in-process server; zero fields take the
// binary's defaults (config.go).
type inprocConfig struct {
	store          contentstore.Store // default: a fresh memory store
	cacheBytes     int64              // SCRIPT_CACHE_BYTES; -1 disables, 0 is the default 64 MiB
	maxConcurrent  int
	cpuBudget      uint64
	poolSize       int
	grace          time.Duration // HARD_KILL_GRACE
	requestTimeout time.Duration
	limits         handler.Limits
	// wrapScripts and wrapBackend put a test's misbehaviour between the
	// handler and the real store or engine.
	wrapScripts func(effect.ScriptReader) effect.ScriptReader
	wrapBackend func(handler.LogBackend) handler.LogBackend
}

// inproc is the service wired in this process as serve.go wires it (store
// behind contentstore.Cache, the quickjs engine, the effect from
// handler.NewEffect, handler.New, an http.Server with the binary's
// timeouts), on a loopback port. The process kill is off: it would end the
// test binary.
type inproc struct {
	t      *testing.T
	url    string
	store  contentstore.Store
	engine *quickjs.Engine
	http   *http.Server
	client *http.Client
	logs   *servicetest.Logs
}

func defaultLimits() handler.Limits {
	return handler.Limits{
		DefaultWallClock: 5 * time.Second, MaxWallClock: 30 * time.Second,
		DefaultMemoryBytes: 64 << 20, MaxMemoryBytes: 256 << 20,
		MaxInputBytes: 1 << 20, MaxOutputBytes: 1 << 20, MaxScriptBytes: 1 << 20, MaxRequestBytes: 4 << 20,
	}
}

// newInproc starts the server; everything is closed when the test ends.
func newInproc(t testing.TB, cfg inprocConfig) *inproc {
	t.Helper()
	ctx := context.Background()
	logs := &servicetest.Logs{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if cfg.maxConcurrent == 0 {
		cfg.maxConcurrent = 1
	}
	if cfg.cpuBudget == 0 {
		cfg.cpuBudget = 100000
	}
	if cfg.poolSize == 0 {
		cfg.poolSize = 2
	}
	if cfg.grace == 0 {
		cfg.grace = 500 * time.Millisecond
	}
	if cfg.requestTimeout == 0 {
		cfg.requestTimeout = 60 * time.Second
	}
	if cfg.limits == (handler.Limits{}) {
		cfg.limits = defaultLimits()
	}
	switch cfg.cacheBytes {
	case 0:
		cfg.cacheBytes = 64 << 20
	case -1:
		cfg.cacheBytes = 0
	}
	if cfg.store == nil {
		st, err := contentstore.NewMemStore(contentstore.Options{MaxScriptBytes: cfg.limits.MaxScriptBytes, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		cfg.store = st
	}
	cache := contentstore.NewCache(cfg.store, cfg.cacheBytes, log)
	var scripts effect.ScriptReader = cache
	if cfg.wrapScripts != nil {
		scripts = cfg.wrapScripts(scripts)
	}
	engine, err := quickjs.New(ctx,
		quickjs.WithMaxMemoryBytes(cfg.limits.MaxMemoryBytes),
		quickjs.WithCPUBudget(cfg.cpuBudget),
		quickjs.WithPoolSize(cfg.poolSize),
		quickjs.WithHardKill(quickjs.HardKillWatchdog, cfg.grace),
		quickjs.WithProcessKill(false),
		quickjs.WithLogger(log),
		quickjs.WithCompilationCache(cacheDir),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	var backend handler.LogBackend = engine
	if cfg.wrapBackend != nil {
		backend = cfg.wrapBackend(engine)
	}
	eff, err := handler.NewEffect(scripts, backend, cfg.limits, effect.Options{BackendGrace: worker.CallerGrace(cfg.grace), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h, err := handler.New(handler.Config{
		Backend: backend, Scripts: scripts, Effect: eff,
		Limits: cfg.limits, MaxConcurrent: cfg.maxConcurrent,
		RequestTimeout: cfg.requestTimeout, HardKillGrace: worker.CallerGrace(cfg.grace),
		Engine:     handler.EngineInfo{Name: quickjs.EngineName, Version: quickjs.EngineVersion, WasmSHA256: quickjs.WasmSHA256()},
		Logger:     log,
		CacheStats: cache.Stats,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &inproc{
		url: "http://" + ln.Addr().String(), store: cfg.store, engine: engine, logs: logs,
		http: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      cfg.requestTimeout + 10*time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}},
	}
	if tt, ok := t.(*testing.T); ok {
		s.t = tt
	}
	served := make(chan struct{})
	go func() { _ = s.http.Serve(ln); close(served) }()
	t.Cleanup(func() {
		s.client.CloseIdleConnections()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.http.Shutdown(sctx)
		<-served
		_ = engine.Close(sctx)
		_ = cache.Close()
	})
	return s
}

// put stores scripts in the server's store and returns their references.
func (s *inproc) put(t testing.TB, scripts ...string) []string {
	t.Helper()
	refs := make([]string, len(scripts))
	for i, sc := range scripts {
		ref, err := s.store.Put(context.Background(), []byte(sc))
		if err != nil {
			t.Fatal(err)
		}
		refs[i] = ref.String()
	}
	return refs
}

func (s *inproc) post(t testing.TB, path string, body any) response {
	t.Helper()
	r, err := do(context.Background(), s.client, http.MethodPost, s.url+path, body, nil)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return r
}
