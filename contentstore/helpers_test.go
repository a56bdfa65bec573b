package contentstore

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

var script = []byte("export default (input) => ({ n: input.n + 1 });\n")

// fastOpts keeps retries quick in tests and logs to the returned buffer.
func fastOpts(t *testing.T) (Options, *syncBuffer) {
	t.Helper()
	var buf syncBuffer
	return Options{
		Logger:              slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RetryAttempts:       5,
		RetryInitialBackoff: time.Millisecond,
		RetryMaxBackoff:     5 * time.Millisecond,
		AttemptTimeout:      5 * time.Second,
	}, &buf
}

// syncBuffer is a bytes.Buffer safe for a logger used from several
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
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
