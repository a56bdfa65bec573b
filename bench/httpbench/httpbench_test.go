// Package httpbench profiles the service's request path in one process: the
// handler, effect, script cache and engine wired as serve.go wires them (the
// service's defaults: one evaluation at a time, the watchdog with the kernel
// kill timer, a pool of two, JSON logs), behind a real HTTP server on
// loopback, driven by a client in the same process. It exists for
// `go test -cpuprofile`, since the service itself has no pprof endpoint:
//
//	go test ./bench/httpbench -run '^$' -bench . -benchtime 3000x -cpuprofile /tmp/cpu.prof
//	go tool pprof -top /tmp/cpu.prof
package httpbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// service starts the wired handler on loopback and returns its URL and the
// references of echo.js and reshape.js.
func service(b *testing.B, opts ...quickjs.Option) (url string, refs map[string]string) {
	b.Helper()
	ctx := context.Background()
	st, err := contentstore.Open(ctx, b.TempDir(), contentstore.Options{MaxScriptBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	refs = map[string]string{}
	for _, name := range []string{"echo.js", "reshape.js"} {
		src, err := os.ReadFile("../workloads/" + name)
		if err != nil {
			b.Fatal(err)
		}
		ref, err := st.Put(ctx, src)
		if err != nil {
			b.Fatal(err)
		}
		refs[name] = ref.String()
	}
	log := telemetry.NewLogger(io.Discard, slog.LevelInfo, "")
	cache := contentstore.NewCache(st, 64<<20, log)
	grace := quickjs.DefaultHardKillGrace
	engine, err := quickjs.New(ctx, append([]quickjs.Option{
		quickjs.WithPoolSize(quickjs.DefaultPoolSize),
		quickjs.WithHardKill(quickjs.HardKillWatchdog, grace),
		quickjs.WithProcessKill(true),
		quickjs.WithLogger(log),
	}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = engine.Close(context.Background()) })
	if err := engine.Warm(ctx); err != nil {
		b.Fatal(err)
	}
	limits := handler.Limits{
		DefaultWallClock: 5 * time.Second, MaxWallClock: 30 * time.Second,
		DefaultMemoryBytes: 64 << 20, MaxMemoryBytes: 256 << 20,
		MaxInputBytes: 1 << 20, MaxOutputBytes: 1 << 20, MaxScriptBytes: 1 << 20, MaxRequestBytes: 4 << 20,
	}
	eff, err := handler.NewEffect(cache, engine, limits, effect.Options{BackendGrace: worker.CallerGrace(grace), Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	h, err := handler.New(handler.Config{
		Backend: engine, Scripts: cache, Effect: eff, Limits: limits, MaxConcurrent: 1,
		RequestTimeout: 60 * time.Second, HardKillGrace: worker.CallerGrace(grace),
		Engine: handler.EngineInfo{Name: quickjs.EngineName, Version: quickjs.EngineVersion, WasmSHA256: quickjs.WasmSHA256()},
		Logger: log, CacheStats: cache.Stats,
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL, refs
}

func post(b *testing.B, c *http.Client, url string, body []byte) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(out, []byte(`{"ok":true`)) {
		b.Fatalf("status %d: %.300s", resp.StatusCode, out)
	}
}

// BenchmarkEvaluations is POST /v1/evaluations back to back, one client.
func BenchmarkEvaluations(b *testing.B) {
	url, refs := service(b)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	for _, w := range []struct{ name, script, input string }{
		{"echo", "echo.js", `{"hello":"world","n":[1,2,3]}`},
		{"reshape-16KiB", "reshape.js", mcpdoc.Document(16 << 10)},
	} {
		body := []byte(fmt.Sprintf(`{"scriptRef":%q,"input":%s}`, refs[w.script], w.input))
		b.Run(w.name, func(b *testing.B) {
			for i := 0; i < 20; i++ {
				post(b, c, url+"/v1/evaluations", body)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				post(b, c, url+"/v1/evaluations", body)
			}
		})
	}
}
