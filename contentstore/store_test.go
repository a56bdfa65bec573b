package contentstore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

func TestParseStoreURL(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want storeURL
	}{
		{name: "bucket", in: "gs://my-bucket", want: storeURL{kind: kindGCS, bucket: "my-bucket"}},
		{name: "bucket slash", in: "gs://my-bucket/", want: storeURL{kind: kindGCS, bucket: "my-bucket"}},
		{name: "prefix", in: "gs://my-bucket/a/b", want: storeURL{kind: kindGCS, bucket: "my-bucket", prefix: "a/b/"}},
		{name: "prefix slash", in: "gs://my-bucket/a/b/", want: storeURL{kind: kindGCS, bucket: "my-bucket", prefix: "a/b/"}},
		{name: "dotted bucket", in: "gs://scripts.example.com/x", want: storeURL{kind: kindGCS, bucket: "scripts.example.com", prefix: "x/"}},
		{name: "scheme case", in: "GS://my-bucket", want: storeURL{kind: kindGCS, bucket: "my-bucket"}},
		{name: "file", in: "file:///var/lib/scripts", want: storeURL{kind: kindDir, path: "/var/lib/scripts"}},
		{name: "file localhost", in: "file://localhost/var/x/", want: storeURL{kind: kindDir, path: "/var/x"}},
		{name: "absolute path", in: "/var/lib/scripts/", want: storeURL{kind: kindDir, path: "/var/lib/scripts"}},
		{name: "relative path", in: "./scripts", want: storeURL{kind: kindDir, path: "scripts"}},
		{name: "bare name", in: "scripts", want: storeURL{kind: kindDir, path: "scripts"}},
		{name: "mem", in: "mem:", want: storeURL{kind: kindMem}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStoreURL(tt.in)
			if err != nil {
				t.Fatalf("parseStoreURL(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("parseStoreURL(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseStoreURLErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty"},
		{" gs://my-bucket", "white space"},
		{"gs://", "missing bucket"},
		{"gs:my-bucket", "written gs://bucket or gs://bucket/prefix"},
		{"gs://My-Bucket/x", `has 'M'`},
		{"gs://ab", "3 to 63 characters"},
		{"gs://-bucket", "start and end with a letter or digit"},
		{"gs://user@my-bucket", `has '@'`},
		{"gs://my-bucket:443/x", `has ':'`},
		{"gs://my-bucket/x?y=1", "no query"},
		{"gs://my-bucket/a//b", "empty path segment"},
		{"gs://my-bucket/a/../b", `".." segment`},
		{"gs://my-bucket/" + strings.Repeat("p", 1000), "too long"},
		{"file:relative/dir", "must be absolute"},
		{"file://server/share", `host "server"`},
		{"file:///x?y", "no query"},
		{"mem:extra", "takes no address"},
		{"s3://bucket/x", `unsupported scheme "s3"`},
		{"https://storage.example/x", `unsupported scheme "https"`},
		// a URL of no accepted form lists them all, plain paths included
		{"ftp://x", `unsupported scheme "ftp" (want gs://bucket/prefix, file:///path, a directory path, or mem:)`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseStoreURL(tt.in)
			if err == nil {
				t.Fatalf("parseStoreURL(%q) = %+v, want an error", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "store URL") {
				t.Errorf("parseStoreURL(%q) = %v; want it to say %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	if _, err := Open(ctx, "gs://my-bucket/p", Options{}); !errors.Is(err, ErrUnsupportedStore) || !strings.Contains(err.Error(), "gcsstore.Open") {
		t.Errorf("Open of a gs:// URL = %v, want ErrUnsupportedStore naming gcsstore.Open", err)
	}
	for url, check := range map[string]func(Store) bool{
		"file://" + dir: func(s Store) bool { d, ok := s.(*DirStore); return ok && d.root == dir },
		dir + "/sub":    func(s Store) bool { d, ok := s.(*DirStore); return ok && d.root == filepath.Join(dir, "sub") },
		"mem:":          func(s Store) bool { _, ok := s.(*MemStore); return ok },
	} {
		s, err := Open(ctx, url, Options{})
		if err != nil {
			t.Errorf("Open(%q): %v", url, err)
			continue
		}
		if !check(s) {
			t.Errorf("Open(%q) = %#v", url, s)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close of %q: %v", url, err)
		}
	}
	if _, err := Open(ctx, "mem:", Options{MaxScriptBytes: -1, RetryAttempts: -2}); err == nil ||
		!strings.Contains(err.Error(), "MaxScriptBytes") || !strings.Contains(err.Error(), "RetryAttempts") {
		t.Errorf("Open with bad options = %v, want every bad field named", err)
	}
}

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxScriptBytes != 1<<20 || o.Logger == nil || o.RetryAttempts != DefaultRetryAttempts ||
		o.RetryInitialBackoff != DefaultRetryInitialBackoff || o.RetryMaxBackoff != DefaultRetryMaxBackoff ||
		o.AttemptTimeout != DefaultAttemptTimeout {
		t.Errorf("defaults: %+v", o)
	}
}

func TestBackoffGrowsWithJitterAndCap(t *testing.T) {
	o := Options{RetryInitialBackoff: 100 * time.Millisecond, RetryMaxBackoff: time.Second}
	for n, full := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 60: time.Second} {
		seen := map[time.Duration]bool{}
		for range 50 {
			d := backoff(o, n)
			if d < full/2 || d > full {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, full/2, full)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("backoff(%d) has no jitter", n)
		}
	}
}

func TestRetryStaysInsideTheDeadline(t *testing.T) {
	opts, _ := fastOpts(t)
	opts.RetryInitialBackoff = time.Second
	opts.RetryMaxBackoff = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	calls := 0
	start := time.Now()
	err := Retry(ctx, opts, "op", func(context.Context) error {
		calls++
		return Transient(errors.New("flaky"))
	})
	if !errors.Is(err, contentref.ErrUnavailable) || !strings.Contains(err.Error(), "deadline leaves no time") {
		t.Fatalf("retry = %v", err)
	}
	if calls != 1 || time.Since(start) > 50*time.Millisecond {
		t.Errorf("%d calls in %v: a pause that would outlive the deadline must not be taken", calls, time.Since(start))
	}
	// A permanent error is returned at once, unwrapped.
	perm := errors.New("permanent")
	if err := Retry(t.Context(), opts, "op", func(context.Context) error { return perm }); err != perm {
		t.Errorf("retry of a permanent error = %v", err)
	}
}
