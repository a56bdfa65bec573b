package gcsstore

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/internal/gcsfake"
)

// fastOpts keeps retries quick in tests and logs to the returned buffer.
func fastOpts(t *testing.T) (contentstore.Options, *servicetest.Logs) {
	t.Helper()
	var buf servicetest.Logs
	return contentstore.Options{
		Logger:              slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RetryAttempts:       5,
		RetryInitialBackoff: time.Millisecond,
		RetryMaxBackoff:     5 * time.Millisecond,
		AttemptTimeout:      5 * time.Second,
	}, &buf
}

// fakeGCS is the in-process GCS emulator served over real HTTP, with a hook
// in front of it to inject failures and a log of the requests it saw. It
// sets STORAGE_EMULATOR_HOST for the test, so Open("gs://...") builds the
// real client against it exactly as it would against an emulator process.
type fakeGCS struct {
	srv *fakestorage.Server

	mu   sync.Mutex
	hook func(w http.ResponseWriter, r *http.Request, next http.Handler) bool
	reqs []recordedRequest
}

type recordedRequest struct {
	method, path, query string
	media               bool // a request for object bytes, not metadata
	bodyBytes           int64
}

func newFakeGCS(t *testing.T, buckets ...string) *fakeGCS {
	t.Helper()
	f := &fakeGCS{}
	gs := gcsfake.Start(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serve(w, r, next) })
	}, buckets...)
	f.srv = gs.Server
	t.Setenv("STORAGE_EMULATOR_HOST", gs.Addr)
	return f
}

// setHook installs h in front of the emulator; h returns true when it
// handled the request itself.
func (f *fakeGCS) setHook(h func(w http.ResponseWriter, r *http.Request, next http.Handler) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

func (f *fakeGCS) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	media := gcsfake.IsMedia(r)
	cw := &countingWriter{ResponseWriter: w}
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	if hook == nil || !hook(cw, r, next) {
		next.ServeHTTP(cw, r)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, recordedRequest{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, media: media, bodyBytes: cw.n})
	f.mu.Unlock()
}

func (f *fakeGCS) requests() []recordedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recordedRequest(nil), f.reqs...)
}

func (f *fakeGCS) mediaRequests() (n int, bytes int64) {
	for _, r := range f.requests() {
		if r.media {
			n++
			bytes += r.bodyBytes
		}
	}
	return n, bytes
}

func (f *fakeGCS) resetRequests() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = nil
}

// putObject writes an object directly in the emulator, bypassing the store.
func (f *fakeGCS) putObject(bucket, name string, content []byte) {
	f.srv.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: name},
		Content:     content,
	})
}

// countingWriter counts the response body bytes a handler wrote.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func openT(t *testing.T, url string, opts contentstore.Options) contentstore.Store {
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

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}
