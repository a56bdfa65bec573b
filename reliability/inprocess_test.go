package reliability

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/proctree"
	"github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// inprocConfig configures an in-process server; zero fields take the
// binary's defaults (service.Defaults).
type inprocConfig struct {
	store          contentstore.Store // default: a fresh memory store
	cacheBytes     int64              // SCRIPT_CACHE_BYTES; -1 disables, 0 is the default
	maxConcurrent  int
	cpuBudget      uint64 // default: inprocCPUBudget
	poolSize       int
	grace          time.Duration // HARD_KILL_GRACE
	requestTimeout time.Duration
	limits         *api.Limits // nil: the defaults
	// workers runs guests in the worker pool, as the binary does (this test
	// binary is its own worker), with the process kill armed in each worker;
	// otherwise the engine runs in this process, without it.
	workers bool
	// wrapScripts and wrapBackend put a test's misbehaviour between the
	// handler and the real store or engine.
	wrapScripts func(effect.ScriptReader) effect.ScriptReader
	wrapBackend func(spi.Reporter) spi.Reporter
}

// inprocCPUBudget is the in-process server's CPU budget: a tenth of the
// binary's, so that a runaway ends on its CPU budget in well under a second.
const inprocCPUBudget = 100000

// inproc is the service built by service.New, as the binary builds it, on a
// loopback port, with the engine in this process (service.InProcess; the
// process kill off, as it would end the test binary) or, with
// inprocConfig.workers, in the worker pool.
type inproc struct {
	t      *testing.T
	url    string
	store  contentstore.Store
	client *http.Client
	logs   *servicetest.Logs
}

func defaultLimits() api.Limits { return service.Defaults().Limits() }

// newInproc starts the server; everything is closed when the test ends.
func newInproc(t testing.TB, cfg inprocConfig) *inproc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &servicetest.Logs{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := service.Defaults()
	c.ProcessKill = cfg.workers // in this process it would end the test binary
	c.CompilationCacheDir = cacheDir
	c.CPUBudget = inprocCPUBudget
	if cfg.maxConcurrent != 0 {
		c.MaxConcurrentEvaluations = cfg.maxConcurrent
	}
	if cfg.cpuBudget != 0 {
		c.CPUBudget = cfg.cpuBudget
	}
	if cfg.poolSize != 0 {
		c.PoolSize = cfg.poolSize
	}
	if cfg.grace != 0 {
		c.HardKillGrace = cfg.grace
	}
	if cfg.requestTimeout != 0 {
		c.RequestTimeout = cfg.requestTimeout
	}
	if l := cfg.limits; l != nil {
		c.DefaultWallClock, c.MaxWallClock = l.DefaultWallClock, l.MaxWallClock
		c.DefaultMemoryBytes, c.MaxMemoryBytes = l.DefaultMemoryBytes, l.MaxMemoryBytes
		c.MaxInputBytes, c.MaxOutputBytes = l.MaxInputBytes, l.MaxOutputBytes
		c.MaxScriptBytes, c.MaxRequestBytes = l.MaxScriptBytes, l.MaxRequestBytes
	}
	switch cfg.cacheBytes {
	case 0:
	case -1:
		c.ScriptCacheBytes = 0
	default:
		c.ScriptCacheBytes = cfg.cacheBytes
	}
	if cfg.store == nil {
		st, err := contentstore.NewMemStore(contentstore.Options{MaxScriptBytes: c.MaxScriptBytes, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		cfg.store = st
	}
	opts := service.Options{Logger: log, Store: cfg.store, WrapScripts: cfg.wrapScripts, WrapBackend: cfg.wrapBackend}
	if !cfg.workers {
		opts.Backend = service.InProcess()
	}
	svc, err := service.New(ctx, c, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := svc.Warm(ctx); err != nil {
		cancel()
		svc.Close(ctx)
		t.Fatal(err)
	}
	if cfg.workers {
		// Warm returns with the first worker; the tests count goroutines
		// from a full pool
		want := c.MaxConcurrentEvaluations + c.WorkerSpares
		deadline := time.Now().Add(20 * time.Second)
		for len(proctree.Descendants(os.Getpid())) < want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := len(proctree.Descendants(os.Getpid())); n < want {
			cancel()
			svc.Close(ctx)
			t.Fatalf("%d workers started, want %d", n, want)
		}
		// and the last one's start-up (its hello and ready, then its
		// reader) is over: the goroutine count holds still
		for last, still := -1, 0; still < 10 && time.Now().Before(deadline); {
			if n := runtime.NumGoroutine(); n == last {
				still++
			} else {
				last, still = n, 0
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		svc.Close(ctx)
		t.Fatal(err)
	}
	s := &inproc{
		url: "http://" + ln.Addr().String(), store: cfg.store, logs: logs,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}},
	}
	if tt, ok := t.(*testing.T); ok {
		s.t = tt
	}
	served := make(chan struct{})
	go func() { _ = svc.Serve(ctx, ln); close(served) }()
	t.Cleanup(func() {
		s.client.CloseIdleConnections()
		cancel() // Serve drains, then closes the engine and the store
		<-served
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
