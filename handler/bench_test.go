package handler_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// constBackend answers every run with the value 1 at once, so that a
// request's time is the handler's and the effect's own.
type constBackend struct{}

func (constBackend) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard, Memory: true, CPU: true, FreshPerRun: true}
}

func (constBackend) Evaluate(context.Context, spi.Request) (spi.Outcome, error) {
	return spi.OK([]byte(`1`)), nil
}

func (b constBackend) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	out, err := b.Evaluate(ctx, req.Request)
	return spi.Report{Outcome: out}, err
}

// BenchmarkRequestPath is POST /v1/evaluations with a 16 KiB input through
// the handler and the effect, without the network or an engine: reading the
// body, its checks, the effect's, and the answer.
//
//	go test ./handler -run '^$' -bench RequestPath -benchtime 2000x -count 6
func BenchmarkRequestPath(b *testing.B) {
	mem, err := contentstore.NewMemStore(contentstore.Options{MaxScriptBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ref, err := mem.Put(context.Background(), []byte("input"))
	if err != nil {
		b.Fatal(err)
	}
	lim := api.Limits{
		DefaultWallClock: 5 * time.Second, MaxWallClock: 30 * time.Second,
		DefaultMemoryBytes: 64 << 20, MinMemoryBytes: 256 << 10, MaxMemoryBytes: 256 << 20,
		MaxInputBytes: 1 << 20, MaxOutputBytes: 1 << 20, MaxScriptBytes: 1 << 20, MaxRequestBytes: 16 << 20,
		MaxHeaderBytes: 32 << 10, MaxConcurrent: 1, RequestTimeout: time.Minute, MaxBatchItems: 1000,
	}
	eff, err := effect.New(mem, constBackend{}, effectOptions(lim, nil))
	if err != nil {
		b.Fatal(err)
	}
	h, err := handler.New(handler.Config{
		Effect: eff, Limits: lim,
		Engine: api.Engine{Name: "const", Version: "1", WasmSHA256: fmt.Sprintf("%064d", 0)},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(fmt.Sprintf(`{"scriptRef":%q,"input":%s}`, ref, mcpdoc.Document(16<<10)))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/evaluations", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %.300s", w.Code, w.Body)
		}
	}
}
