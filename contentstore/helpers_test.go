package contentstore

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
)

var script = []byte("export default (input) => ({ n: input.n + 1 });\n")

// fastOpts keeps retries quick in tests and logs to the returned buffer.
func fastOpts(t *testing.T) (Options, *servicetest.Logs) {
	t.Helper()
	var buf servicetest.Logs
	return Options{
		Logger:              slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RetryAttempts:       5,
		RetryInitialBackoff: time.Millisecond,
		RetryMaxBackoff:     5 * time.Millisecond,
		AttemptTimeout:      5 * time.Second,
	}, &buf
}

func openT(t *testing.T, url string, opts Options) Store {
	t.Helper()
	s, err := Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
