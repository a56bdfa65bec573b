package reliability

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/internal/gcsfake"
)

// fakeGCS is the in-process GCS emulator (fake-gcs-server) on a loopback
// port, with a fault injector in front of it. The service under test reaches
// it with the real storage client through STORAGE_EMULATOR_HOST, exactly as
// contentstore's own tests do.
type fakeGCS struct {
	srv  *fakestorage.Server
	addr string // host:port, for STORAGE_EMULATOR_HOST

	mu       sync.Mutex
	faults   map[string]fault // by object hex digest
	counts   map[string]*objectCount
	everyReq fault // applies to every request when set (bucket-level faults)
}

// fault answers a request for an object instead of the emulator (returning
// true), or lets it through (false). c counts the object's requests so far,
// this one included; media is true for a request of the object's bytes (not
// its metadata).
type fault func(w http.ResponseWriter, r *http.Request, next http.Handler, c objectCount, media bool) bool

type objectCount struct{ metadata, media int }

func (c objectCount) total() int { return c.metadata + c.media }

func newFakeGCS(t *testing.T, buckets ...string) *fakeGCS {
	t.Helper()
	f := &fakeGCS{faults: map[string]fault{}, counts: map[string]*objectCount{}}
	gs := gcsfake.Start(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serve(w, r, next) })
	}, buckets...)
	f.srv, f.addr = gs.Server, gs.Addr
	return f
}

func (f *fakeGCS) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	media := gcsfake.IsMedia(r)
	f.mu.Lock()
	every := f.everyReq
	var flt fault
	var n objectCount
	for hex, fl := range f.faults {
		if strings.Contains(r.URL.Path, hex) {
			c := f.counts[hex]
			if c == nil {
				c = &objectCount{}
				f.counts[hex] = c
			}
			if media {
				c.media++
			} else {
				c.metadata++
			}
			n, flt = *c, fl
			break
		}
	}
	f.mu.Unlock()
	if every != nil && every(w, r, next, objectCount{}, media) {
		return
	}
	if flt != nil && flt(w, r, next, n, media) {
		return
	}
	next.ServeHTTP(w, r)
}

// put writes an object straight into the emulator (so it can differ from
// what its name says).
func (f *fakeGCS) put(bucket, prefix string, ref contentref.Ref, content []byte) {
	f.srv.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: ref.ObjectName(prefix)},
		Content:     content,
	})
}

// store puts script under its own reference and returns the reference.
func (f *fakeGCS) store(bucket, prefix, script string) contentref.Ref {
	ref := contentref.RefOf([]byte(script))
	f.put(bucket, prefix, ref, []byte(script))
	return ref
}

// inject sets the fault for one object and resets its request counts.
func (f *fakeGCS) inject(ref contentref.Ref, fl fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[ref.Hex()] = fl
	f.counts[ref.Hex()] = &objectCount{}
}

func (f *fakeGCS) count(ref contentref.Ref) objectCount {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.counts[ref.Hex()]; c != nil {
		return *c
	}
	return objectCount{}
}

func (f *fakeGCS) setEvery(fl fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.everyReq = fl
}

// writeGCSError writes a JSON API error response.
func writeGCSError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"errors":[{"message":%q}]}}`, code, msg, msg)
}

// The faults.

// failFirst answers the first n requests of the object with code.
func failFirst(n, code int) fault {
	return func(w http.ResponseWriter, _ *http.Request, _ http.Handler, c objectCount, _ bool) bool {
		if c.total() <= n {
			writeGCSError(w, code, "injected")
			return true
		}
		return false
	}
}

// failAlways answers every request of the object with code.
func failAlways(code int, msg string) fault {
	return func(w http.ResponseWriter, _ *http.Request, _ http.Handler, _ objectCount, _ bool) bool {
		writeGCSError(w, code, msg)
		return true
	}
}

// resetFirst drops the connection of the object's first request unanswered.
func resetFirst(w http.ResponseWriter, _ *http.Request, _ http.Handler, c objectCount, _ bool) bool {
	if c.total() > 1 {
		return false
	}
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
	return true
}

// truncate serves the real media response cut in the middle of its body
// (the full Content-Length promised, half the bytes sent, the connection
// then dropped), for the object's first n media requests (n < 0: every
// one).
func truncate(n int) fault {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler, c objectCount, media bool) bool {
		if !media || n >= 0 && c.media > n {
			return false
		}
		gcsfake.WriteHalf(w, r, next)
		return true
	}
}

// stall serves the media response's headers and half its body, then sends
// nothing more until the client gives up.
func stall(w http.ResponseWriter, r *http.Request, next http.Handler, _ objectCount, media bool) bool {
	if !media {
		return false
	}
	gcsfake.WriteHalf(w, r, next)
	_ = http.NewResponseController(w).Flush()
	<-r.Context().Done()
	return true
}

// garbage answers the metadata request with a 200 that is not JSON.
func garbage(w http.ResponseWriter, _ *http.Request, _ http.Handler, _ objectCount, media bool) bool {
	if media {
		return false
	}
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(200)
	fmt.Fprint(w, "<html>the corporate proxy says hello</html>")
	return true
}
