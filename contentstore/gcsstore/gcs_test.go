package gcsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/internal/gcsfake"
	"github.com/loom-plugins/sandbox-cloudrun/objects/gcsobjects"
)

// These tests run the real storage client, built by Open from
// STORAGE_EMULATOR_HOST, against the in-process emulator over HTTP. Faults
// are injected in front of the emulator, on the server side.

const testBucket = "scripts-test"

var script = []byte("export default (input) => ({ n: input.n + 1 });\n")

// gcsError writes a JSON API error response.
func writeGCSError(w http.ResponseWriter, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":"injected %d"}}`, code, code)
}

func TestGCSFound(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	s := openT(t, "gs://"+testBucket+"/team/a", opts)
	ctx := ctxT(t)

	// Written by the store and read back.
	ref, err := s.Put(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	if ref != contentref.RefOf(script) {
		t.Fatalf("Put returned %s, want %s", ref, contentref.RefOf(script))
	}
	got, err := s.Get(ctx, ref)
	if err != nil || !bytes.Equal(got, script) {
		t.Fatalf("Get = %q, %v; want the script", got, err)
	}

	// Written by someone else under the documented layout.
	other := []byte("export default () => 42;")
	f.putObject(testBucket, contentref.RefOf(other).ObjectName("team/a/"), other)
	got, err = s.Get(ctx, contentref.RefOf(other))
	if err != nil || !bytes.Equal(got, other) {
		t.Fatalf("Get of an object written directly = %q, %v", got, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func TestGCSMissing(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	s := openT(t, "gs://"+testBucket+"/p", opts)
	ctx := ctxT(t)
	if _, err := s.Put(ctx, []byte("another script")); err != nil {
		t.Fatal(err)
	}
	f.resetRequests()

	_, err := s.Get(ctx, contentref.RefOf(script))
	if !errors.Is(err, contentref.ErrNotFound) {
		t.Fatalf("Get of a missing script = %v, want contentref.ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "no such object") || !strings.Contains(err.Error(), contentref.RefOf(script).Hex()) {
		t.Errorf("error %q should name the object and say it is missing", err)
	}
	for _, r := range f.requests() {
		if r.media {
			t.Errorf("a missing script should need no media request, saw %s %s", r.method, r.path)
		}
	}
	if n := len(f.requests()); n > 2 {
		t.Errorf("a missing script is not transient, yet %d requests were made", n)
	}
}

func TestGCSBucketOrPrefixAbsent(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	f.putObject(testBucket, contentref.RefOf(script).ObjectName("elsewhere/"), script)
	opts, _ := fastOpts(t)
	ctx := ctxT(t)

	t.Run("bucket", func(t *testing.T) {
		s := openT(t, "gs://absent-bucket/p", opts)
		_, err := s.Get(ctx, contentref.RefOf(script))
		if !errors.Is(err, contentref.ErrNotFound) {
			t.Fatalf("Get = %v, want contentref.ErrNotFound", err)
		}
		if !strings.Contains(err.Error(), `bucket "absent-bucket" does not exist`) {
			t.Errorf("error %q should say the bucket is missing", err)
		}
		if err := s.Check(ctx); !errors.Is(err, contentref.ErrNotFound) || !strings.Contains(err.Error(), "absent-bucket") {
			t.Errorf("Check = %v, want contentref.ErrNotFound naming the bucket", err)
		}
	})
	t.Run("prefix", func(t *testing.T) {
		s := openT(t, "gs://"+testBucket+"/wrong-prefix", opts)
		_, err := s.Get(ctx, contentref.RefOf(script))
		if !errors.Is(err, contentref.ErrNotFound) {
			t.Fatalf("Get = %v, want contentref.ErrNotFound", err)
		}
		if !strings.Contains(err.Error(), "wrong-prefix/sha256/ at all") {
			t.Errorf("error %q should say nothing is under the prefix", err)
		}
		// An empty prefix is a reachable store: ready, just empty.
		if err := s.Check(ctx); err != nil {
			t.Errorf("Check = %v", err)
		}
	})
}

func TestGCSTampered(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, logs := fastOpts(t)
	s := openT(t, "gs://"+testBucket, opts)
	ctx := ctxT(t)
	ref, err := s.Put(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	evil := []byte("export default () => { steal(); };\n")
	f.putObject(testBucket, ref.ObjectName(""), evil)
	f.resetRequests()

	got, err := s.Get(ctx, ref)
	if !errors.Is(err, contentref.ErrIntegrity) {
		t.Fatalf("Get of a tampered object = %v, want contentref.ErrIntegrity", err)
	}
	if got != nil {
		t.Errorf("Get returned %q with the integrity error; bytes must never be returned", got)
	}
	for _, want := range []string{ref.String(), contentref.RefOf(evil).String()} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log should carry %s; log:\n%s", want, logs)
		}
	}
	if n, _ := f.mediaRequests(); n != 1 {
		t.Errorf("integrity failures are not transient: %d media requests, want 1", n)
	}
}

func TestGCSOversizedRefusedUnread(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	opts.MaxScriptBytes = 1024
	s := openT(t, "gs://"+testBucket, opts)
	ctx := ctxT(t)
	huge := bytes.Repeat([]byte("x"), 1<<20)
	ref := contentref.RefOf(huge)
	f.putObject(testBucket, ref.ObjectName(""), huge)
	f.resetRequests()

	_, err := s.Get(ctx, ref)
	if !errors.Is(err, contentref.ErrTooLarge) {
		t.Fatalf("Get = %v, want contentref.ErrTooLarge", err)
	}
	if tl := (*contentref.TooLargeError)(nil); !errors.As(err, &tl) || tl.Size != 1<<20 || tl.Limit != 1024 {
		t.Errorf("Get = %#v, want a *contentref.TooLargeError of 1048576 bytes over 1024", err)
	}
	for _, want := range []string{"limit of 1024 bytes", "1048576 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q should contain %q", err, want)
		}
	}
	if n, b := f.mediaRequests(); n != 0 || b != 0 {
		t.Errorf("the object was requested (%d media requests, %d body bytes sent); it must be refused from its metadata", n, b)
	}

	// Put refuses it before any request.
	f.resetRequests()
	if _, err := s.Put(ctx, huge); !errors.Is(err, contentref.ErrTooLarge) || !strings.Contains(err.Error(), "limit of 1024 bytes") {
		t.Errorf("Put of an oversized script = %v, want contentref.ErrTooLarge naming the limit", err)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("Put of an oversized script made %d requests", n)
	}
}

func TestGCSRetriesTransientFailures(t *testing.T) {
	for _, code := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusInternalServerError} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			f := newFakeGCS(t, testBucket)
			opts, logs := fastOpts(t)
			s := openT(t, "gs://"+testBucket, opts)
			ctx := ctxT(t)
			ref := contentref.RefOf(script)
			f.putObject(testBucket, ref.ObjectName(""), script)

			var failed atomic.Int32
			f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
				if failed.Add(1) <= 3 {
					writeGCSError(w, code)
					return true
				}
				return false
			})
			got, err := s.Get(ctx, ref)
			if err != nil || !bytes.Equal(got, script) {
				t.Fatalf("Get after 3 × %d = %q, %v; want the script", code, got, err)
			}
			if n := len(f.requests()); n != 5 {
				t.Errorf("%d requests, want 3 failures + metadata + media", n)
			}
			if c := strings.Count(logs.String(), "retrying"); c != 3 {
				t.Errorf("%d retries logged, want 3:\n%s", c, logs)
			}

			// Put retries the same way.
			failed.Store(0)
			if _, err := s.Put(ctx, []byte("a new script")); err != nil {
				t.Fatalf("Put after 3 × %d: %v", code, err)
			}
		})
	}
}

func TestGCSGivesUpAsUnavailable(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	opts.RetryAttempts = 4
	s := openT(t, "gs://"+testBucket, opts)
	f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		writeGCSError(w, http.StatusServiceUnavailable)
		return true
	})
	_, err := s.Get(ctxT(t), contentref.RefOf(script))
	if !errors.Is(err, contentref.ErrUnavailable) || errors.Is(err, contentref.ErrNotFound) {
		t.Fatalf("Get = %v, want contentref.ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "after 4 attempt") || !strings.Contains(err.Error(), "503") {
		t.Errorf("error %q should give the attempts and the last failure", err)
	}
	if n := len(f.requests()); n != 4 {
		t.Errorf("%d requests, want exactly RetryAttempts=4", n)
	}
}

func TestGCSTruncatedBodyRetried(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	s := openT(t, "gs://"+testBucket, opts)
	ref := contentref.RefOf(script)
	f.putObject(testBucket, ref.ObjectName(""), script)

	var truncated atomic.Bool
	f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if r.URL.Query().Get("alt") == "json" || strings.HasPrefix(r.URL.Path, "/storage/") || truncated.Swap(true) {
			return false
		}
		// Serve the real response, cut in the middle of its body: the
		// server then drops the connection.
		gcsfake.WriteHalf(w, r, next)
		return true
	})
	got, err := s.Get(ctxT(t), ref)
	if err != nil || !bytes.Equal(got, script) {
		t.Fatalf("Get after a truncated body = %q, %v; want the script", got, err)
	}
	if !truncated.Load() {
		t.Fatal("the hook never truncated a response")
	}
	// The truncated request and the retry's. The client library's reader
	// reopens the object at once after the cut; the store cancels that
	// reopen when it asks for a connection (gcsobjects.LimitBodyRequests), but a kept-alive
	// connection can carry its request out before the cancellation is seen:
	// then the server sees it too, and the reader still gets no answer.
	if n, _ := f.mediaRequests(); n != 2 && n != 3 {
		t.Errorf("%d media requests, want the truncated one and its retry (and at most the reopen that was cancelled)", n)
	}
}

// A body cut short on every read: the client library's reader would reopen
// the object at once and without bound; each attempt makes one request for
// the bytes, and the store gives up after RetryAttempts as unavailable.
func TestGCSTruncatedBodyEveryTimeBounded(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	opts.RetryAttempts = 4
	s := openT(t, "gs://"+testBucket, opts)
	ref := contentref.RefOf(script)
	f.putObject(testBucket, ref.ObjectName(""), script)
	f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if r.URL.Query().Get("alt") == "json" || strings.HasPrefix(r.URL.Path, "/storage/") {
			return false
		}
		gcsfake.WriteHalf(w, r, next)
		return true
	})
	start := time.Now()
	_, err := s.Get(ctxT(t), ref)
	if !errors.Is(err, contentref.ErrUnavailable) || !strings.Contains(err.Error(), "after 4 attempt") {
		t.Fatalf("Get = %v, want contentref.ErrUnavailable after 4 attempts", err)
	}
	// One per attempt; the reopen the guard cancels may still reach the
	// server on a kept-alive connection before the cancellation is seen
	// (as in TestGCSTruncatedBodyRetried), at most once per attempt.
	if n, _ := f.mediaRequests(); n < 4 || n > 8 {
		t.Errorf("%d media requests in %v, want one per attempt (4), and at most the cancelled reopen of each", n, time.Since(start))
	}
}

func TestGCSStalledResponseCutByDeadline(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	s := openT(t, "gs://"+testBucket, opts)
	ref := contentref.RefOf(script)
	f.putObject(testBucket, ref.ObjectName(""), script)
	f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		select {
		case <-r.Context().Done(): // the client gave up
		case <-time.After(10 * time.Second):
		}
		return true
	})

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Get(ctx, ref)
	elapsed := time.Since(start)
	if !errors.Is(err, contentref.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get = %v, want contentref.ErrUnavailable and context.DeadlineExceeded", err)
	}
	if elapsed > 2*time.Second {
		t.Errorf("Get took %v with a 300ms deadline", elapsed)
	}
}

func TestGCSStalledAttemptRetried(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	opts.AttemptTimeout = 200 * time.Millisecond
	s := openT(t, "gs://"+testBucket, opts)
	ref := contentref.RefOf(script)
	f.putObject(testBucket, ref.ObjectName(""), script)
	var stalled atomic.Bool
	f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if stalled.Swap(true) {
			return false
		}
		<-r.Context().Done()
		return true
	})
	got, err := s.Get(ctxT(t), ref)
	if err != nil || !bytes.Equal(got, script) {
		t.Fatalf("Get after one stalled attempt = %q, %v; want the script", got, err)
	}
}

func TestGCSPermissionDenied(t *testing.T) {
	for _, code := range []int{http.StatusForbidden, http.StatusUnauthorized} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			f := newFakeGCS(t, testBucket)
			opts, _ := fastOpts(t)
			s := openT(t, "gs://"+testBucket, opts)
			f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
				writeGCSError(w, code)
				return true
			})
			ctx := ctxT(t)
			_, err := s.Get(ctx, contentref.RefOf(script))
			if !errors.Is(err, contentref.ErrPermission) || errors.Is(err, contentref.ErrNotFound) || errors.Is(err, contentref.ErrUnavailable) {
				t.Fatalf("Get = %v, want only contentref.ErrPermission", err)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("permission denied was retried: %d requests", n)
			}
			if _, err := s.Put(ctx, script); !errors.Is(err, contentref.ErrPermission) {
				t.Errorf("Put = %v, want contentref.ErrPermission", err)
			}
			if err := s.Check(ctx); !errors.Is(err, contentref.ErrPermission) {
				t.Errorf("Check = %v, want contentref.ErrPermission", err)
			}
		})
	}
}

func TestGCSPutTwice(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	s := openT(t, "gs://"+testBucket+"/p/", opts)
	ctx := ctxT(t)

	ref1, err := s.Put(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	name := ref1.ObjectName("p/")
	first, err := f.srv.GetObject(testBucket, name)
	if err != nil {
		t.Fatalf("the object is not at %s: %v", name, err)
	}
	ref2, err := s.Put(ctx, script)
	if err != nil {
		t.Fatalf("second Put: %v", err)
	}
	if ref1 != ref2 {
		t.Fatalf("refs differ: %s, %s", ref1, ref2)
	}
	objs, _, err := f.srv.ListObjects(testBucket, "", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("%d objects (all versions) after two Puts, want 1", len(objs))
	}
	second, _ := f.srv.GetObject(testBucket, name)
	if first.Generation != second.Generation {
		t.Errorf("the object was rewritten: generation %d → %d", first.Generation, second.Generation)
	}
	if !strings.Contains(f.requests()[0].query, "ifGenerationMatch=0") {
		t.Errorf("Put did not send a does-not-exist precondition: %+v", f.requests()[0])
	}
}

func TestGCSZeroRef(t *testing.T) {
	newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	s := openT(t, "gs://"+testBucket, opts)
	if _, err := s.Get(ctxT(t), contentref.Ref{}); !errors.Is(err, contentref.ErrInvalidRef) {
		t.Errorf("Get(zero contentref.Ref) = %v, want contentref.ErrInvalidRef", err)
	}
}

// The same over the real GCS client: one media request for 8 readers.
func TestCacheSingleFetchOverGCS(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	c := contentstore.NewCache(openT(t, "gs://"+testBucket, opts), contentstore.CacheOptions{MaxBytes: contentstore.DefaultCacheBytes, ConfirmAfter: contentstore.DefaultConfirmAfter})
	ref := contentref.RefOf(script)
	f.putObject(testBucket, ref.ObjectName(""), script)
	release := make(chan struct{})
	f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		<-release
		return false
	})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	var failures atomic.Int32
	for range 8 {
		wg.Go(func() {
			if got, err := c.Get(ctx, ref); err != nil || !bytes.Equal(got, script) {
				failures.Add(1)
			}
		})
	}
	waitFor(t, func() bool { _, m := c.Stats(); return m == 8 })
	close(release)
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d readers failed", failures.Load())
	}
	if n, _ := f.mediaRequests(); n != 1 {
		t.Errorf("%d media requests for 8 readers, want 1", n)
	}
}

// contentstore.PutFiles into the GCS emulator, the way the verb will run.
func TestPutFilesIntoGCS(t *testing.T) {
	newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	file := writeFileT(t, t.TempDir(), "s.js", script)
	want := contentref.RefOf(script).String() + "  " + file + "\n"
	for _, url := range []string{"gs://" + testBucket + "/cli"} {
		s := openT(t, url, opts)
		var out bytes.Buffer
		if err := contentstore.PutFiles(ctxT(t), s, []string{file}, nil, &out); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		if out.String() != want {
			t.Errorf("%s: output %q, want %q", url, out.String(), want)
		}
		if got, err := s.Get(ctxT(t), contentref.RefOf(script)); err != nil || !bytes.Equal(got, script) {
			t.Errorf("%s: Get = %q, %v", url, got, err)
		}
	}
}

// Open builds a store over a client of its own for a gs:// URL, and passes
// any other to contentstore.Open.
func TestOpen(t *testing.T) {
	// The emulator variable keeps the client from looking for credentials.
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1")
	s, err := Open(ctxT(t), "gs://my-bucket/p", contentstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if g, ok := s.(*GCSStore); !ok || g.bucketName != "my-bucket" || g.prefix != "p/" || !g.ownsClient {
		t.Errorf("Open(gs://my-bucket/p) = %#v", s)
	}
	m, err := Open(ctxT(t), "mem:", contentstore.Options{})
	if _, ok := m.(*contentstore.MemStore); err != nil || !ok {
		t.Errorf("Open(mem:) = %#v, %v", m, err)
	}
	if _, err := Open(ctxT(t), "gs://My-Bucket", contentstore.Options{}); err == nil {
		t.Error("a bad bucket name accepted")
	}
}

// Without credentials, Open fails with the client's own reason and no store:
// a nil *GCSStore inside the interface would pass the caller's nil check and
// panic in Close.
func TestOpenWithoutCredentials(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "absent.json"))
	s, err := Open(ctxT(t), "gs://my-bucket/p", contentstore.Options{})
	if s != nil {
		t.Errorf("Open returned a store (%#v) with its error", s)
	}
	if err == nil || !strings.Contains(err.Error(), "absent.json") {
		t.Errorf("Open: %v, want the credentials' reason", err)
	}
}

func writeFileT(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Exists asks for the object's metadata and never for its bytes; a missing
// object is ErrNotFound, a transient failure is retried as Get's is and,
// when it lasts, is ErrUnavailable; a refusal is ErrPermission, not retried.
func TestGCSExists(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	opts.RetryAttempts = 4
	s := openT(t, "gs://"+testBucket+"/team", opts)
	ctx := ctxT(t)
	ref, err := s.Put(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	f.resetRequests()
	if err := s.Exists(ctx, ref); err != nil {
		t.Fatalf("Exists of a stored script = %v", err)
	}
	if reqs := f.requests(); len(reqs) != 1 || reqs[0].media || !strings.Contains(reqs[0].path, ref.Hex()) {
		t.Errorf("Exists made %+v, want one request for the object's metadata", reqs)
	}

	f.resetRequests()
	missing := contentref.RefOf([]byte("never stored"))
	if err := s.Exists(ctx, missing); !errors.Is(err, contentref.ErrNotFound) || !strings.Contains(err.Error(), "no such object") {
		t.Errorf("Exists of a missing script = %v, want contentref.ErrNotFound", err)
	}
	if n, _ := f.mediaRequests(); n != 0 {
		t.Errorf("Exists of a missing script asked for bytes %d times", n)
	}

	var failures atomic.Int32
	f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if failures.Add(1) <= 2 {
			writeGCSError(w, http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	f.resetRequests()
	if err := s.Exists(ctx, ref); err != nil || len(f.requests()) != 3 {
		t.Errorf("Exists after 2 × 503 = %v in %d requests; want nil in 3", err, len(f.requests()))
	}

	f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		writeGCSError(w, http.StatusServiceUnavailable)
		return true
	})
	f.resetRequests()
	if err := s.Exists(ctx, ref); !errors.Is(err, contentref.ErrUnavailable) || errors.Is(err, contentref.ErrNotFound) || len(f.requests()) != 4 {
		t.Errorf("Exists from a store that keeps failing = %v in %d requests; want contentref.ErrUnavailable in 4", err, len(f.requests()))
	}

	f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		writeGCSError(w, http.StatusForbidden)
		return true
	})
	f.resetRequests()
	if err := s.Exists(ctx, ref); !errors.Is(err, contentref.ErrPermission) || len(f.requests()) != 1 {
		t.Errorf("Exists refused = %v in %d requests; want contentref.ErrPermission in 1", err, len(f.requests()))
	}
}

// A credentials file that cannot be used stops Open with an error in an
// operator's terms: the variable, its value, what it must hold and why this
// one does not, without the client library's prefixes.
func TestOpenNamesTheCredentialsVariable(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "") // the emulator needs no credentials
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "key.json")
	if err := os.WriteFile(notJSON, []byte("{bad"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, why := range map[string]string{
		filepath.Join(dir, "absent.json"): "cannot open it: no such file or directory",
		notJSON:                           "invalid character 'b'",
	} {
		t.Setenv(gcsobjects.CredentialsVariable, file)
		s, err := Open(context.Background(), "gs://scripts-bucket/p", contentstore.Options{})
		if err == nil {
			s.Close()
			t.Fatalf("%s=%s: opened", gcsobjects.CredentialsVariable, file)
		}
		msg := err.Error()
		want := "GOOGLE_APPLICATION_CREDENTIALS=" + file + " must name a readable Google credentials JSON file"
		if !strings.HasPrefix(msg, want) || !strings.Contains(msg, why) || strings.Contains(msg, "gcsstore") || strings.Contains(msg, "dialing") {
			t.Errorf("%s=%s: %q, want %q… and %q", gcsobjects.CredentialsVariable, file, msg, want, why)
		}
	}
}
