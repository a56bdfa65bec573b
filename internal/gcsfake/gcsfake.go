// Package gcsfake runs fake-gcs-server in process, on a loopback listener,
// behind a handler of the test's (to record or fault requests), for the tests
// of the content store and of the service over gs://.
package gcsfake

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// Server is a running emulator.
type Server struct {
	*fakestorage.Server
	// Addr is host:port, the value for STORAGE_EMULATOR_HOST.
	Addr string
}

// Start runs the emulator with the given buckets. front wraps the emulator's
// handler (nil: none). Everything is closed when the test ends.
func Start(t testing.TB, front func(next http.Handler) http.Handler, buckets ...string) *Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	addr := ts.Listener.Addr().String()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true,
		Scheme:     "http",
		// The client reads object bytes with the XML API at
		// http://<STORAGE_EMULATOR_HOST>/<bucket>/<object>; the emulator
		// serves that path for its public host.
		PublicHost: addr,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range buckets {
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	h := srv.HTTPHandler()
	if front != nil {
		h = front(h)
	}
	ts.Config.Handler = h
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		srv.Stop()
	})
	return &Server{Server: srv, Addr: addr}
}

// IsMedia reports whether r asks for an object's bytes rather than its
// metadata (the JSON API's alt=media, or the XML API's plain object path).
func IsMedia(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Query().Get("alt") == "media" ||
		!strings.HasPrefix(r.URL.Path, "/storage/") && !strings.HasPrefix(r.URL.Path, "/upload/") && !strings.HasPrefix(r.URL.Path, "/_internal/"))
}

// WriteHalf serves next's response to r with its headers and status (the
// whole Content-Length promised) but only the first half of its body, for
// the faults a test puts in front of the emulator: the caller then drops
// the connection (by returning) or holds it.
func WriteHalf(w http.ResponseWriter, r *http.Request, next http.Handler) {
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	body := rec.Body.Bytes()
	_, _ = w.Write(body[:len(body)/2])
}
