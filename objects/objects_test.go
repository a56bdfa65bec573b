package objects_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/gcsfake"
	"github.com/loom-plugins/sandbox-cloudrun/objects"
	"github.com/loom-plugins/sandbox-cloudrun/objects/gcsobjects"
)

const bucket = "objects-test"

// places are the two kinds of place, each opened by URL through the one
// Opener: a directory, and a prefix of the fake GCS server's bucket
// (reached by the real client through STORAGE_EMULATOR_HOST). hook, when
// set, serves a GCS request instead of the server and says so.
func places(t *testing.T, hook *atomic.Pointer[func(w http.ResponseWriter, r *http.Request, next http.Handler) bool]) map[string]func(t *testing.T, path string) objects.Place {
	t.Helper()
	gs := gcsfake.Start(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := hook.Load(); h != nil && (*h)(w, r, next) {
				return
			}
			next.ServeHTTP(w, r)
		})
	}, bucket)
	t.Setenv("STORAGE_EMULATOR_HOST", gs.Addr)
	var op gcsobjects.Opener
	t.Cleanup(func() { op.Close() })
	root := t.TempDir()
	open := func(t *testing.T, url string) objects.Place {
		t.Helper()
		u, err := objects.Parse(url)
		if err != nil {
			t.Fatal(err)
		}
		p, err := op.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	return map[string]func(t *testing.T, path string) objects.Place{
		"directory": func(t *testing.T, path string) objects.Place { return open(t, filepath.Join(root, path)) },
		"gcs":       func(t *testing.T, path string) objects.Place { return open(t, "gs://"+bucket+"/"+path) },
	}
}

func write(t *testing.T, p objects.Place, name string, data []byte) {
	t.Helper()
	w, err := p.Create(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// read is what Open gives for o, or its error.
func read(p objects.Place, o objects.Object) ([]byte, error) {
	return readCtx(context.Background(), p, o)
}

func readCtx(ctx context.Context, p objects.Place, o objects.Object) ([]byte, error) {
	r, err := p.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// current is the object name holds now, read whole.
func current(t *testing.T, p objects.Place, name string) string {
	t.Helper()
	b, err := read(p, objects.Object{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A place lists its objects, at any depth, in the order of their names'
// bytes (as GCS lists a prefix), each with a generation and its size, as
// Stat finds it; a directory or a folder is no object.
func TestPlaceListsInNameOrder(t *testing.T) {
	var hook atomic.Pointer[func(http.ResponseWriter, *http.Request, http.Handler) bool]
	for kind, open := range places(t, &hook) {
		t.Run(kind, func(t *testing.T) {
			p := open(t, "list")
			for _, name := range []string{"b", "a/b", "a.txt", "a/a"} {
				write(t, p, name, []byte("<"+name+">"))
			}
			objs, err := p.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, o := range objs {
				names = append(names, o.Name)
				if o.Generation == 0 || o.Size != int64(len(o.Name)+2) {
					t.Errorf("%s listed as %+v", o.Name, o)
				}
				if s, err := p.Stat(context.Background(), o.Name); err != nil || s != o {
					t.Errorf("Stat(%s) = %+v, %v; listed %+v", o.Name, s, err, o)
				}
			}
			if got := strings.Join(names, " "); got != "a.txt a/a a/b b" {
				t.Errorf("listed %q, want a.txt a/a a/b b", got)
			}
			for _, name := range []string{"a", "absent"} {
				if _, err := p.Stat(context.Background(), name); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), p.URL(name)) {
					t.Errorf("Stat(%s) = %v, want fs.ErrNotExist naming %s", name, err, p.URL(name))
				}
			}
			// the place's URL may name an object itself: the object ""
			one := open(t, "list/a.txt")
			if o, err := one.Stat(context.Background(), ""); err != nil || o.Size != 7 || current(t, one, "") != "<a.txt>" {
				t.Errorf("the object the URL names: %+v, %v", o, err)
			}
			if objs, err := open(t, "list/nothing/").List(context.Background()); kind == "gcs" && (err != nil || len(objs) != 0) {
				t.Errorf("an empty prefix lists %v, %v; want nothing", objs, err)
			} else if kind == "directory" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a directory not there lists %v, %v; want fs.ErrNotExist", objs, err)
			}
		})
	}
}

// Open reads the generation it is given, or fails with ErrChanged: an
// object replaced, or deleted, since it was listed is never read as if it
// were the one listed.
func TestPlaceOpensAtAGeneration(t *testing.T) {
	var hook atomic.Pointer[func(http.ResponseWriter, *http.Request, http.Handler) bool]
	for kind, open := range places(t, &hook) {
		t.Run(kind, func(t *testing.T) {
			p := open(t, "gen/")
			write(t, p, "x", []byte("first"))
			first, err := p.Stat(context.Background(), "x")
			if err != nil {
				t.Fatal(err)
			}
			if b, err := read(p, first); err != nil || string(b) != "first" {
				t.Fatalf("read %q, %v", b, err)
			}
			write(t, p, "x", []byte("again")) // the same size
			if b, err := read(p, first); !errors.Is(err, objects.ErrChanged) {
				t.Errorf("the first generation, replaced, read %q, %v; want ErrChanged", b, err)
			}
			second, err := p.Stat(context.Background(), "x")
			if err != nil || second.Generation == first.Generation {
				t.Fatalf("after a rewrite Stat = %+v, %v (first %+v)", second, err, first)
			}
			if b, err := read(p, second); err != nil || string(b) != "again" {
				t.Errorf("the second generation read %q, %v", b, err)
			}
			if err := p.Delete(context.Background(), "x"); err != nil {
				t.Fatal(err)
			}
			if b, err := read(p, second); !errors.Is(err, objects.ErrChanged) {
				t.Errorf("a deleted generation read %q, %v; want ErrChanged", b, err)
			}
			if b, err := read(p, objects.Object{Name: "x"}); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a deleted object read %q, %v; want fs.ErrNotExist", b, err)
			}
			if err := p.Delete(context.Background(), "x"); err != nil {
				t.Errorf("deleting what is not there: %v", err)
			}
		})
	}
}

// An object being written is never seen under its name until it is
// whole: before Commit the old object stands, Abort leaves it (and, in a
// directory, no temporary file), Commit replaces it.
func TestPlaceWritesWhole(t *testing.T) {
	var hook atomic.Pointer[func(http.ResponseWriter, *http.Request, http.Handler) bool]
	for kind, open := range places(t, &hook) {
		t.Run(kind, func(t *testing.T) {
			p := open(t, "whole")
			write(t, p, "shard.ndjson", []byte("old\n"))
			before, err := p.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			big := bytes.Repeat([]byte("new\n"), 1<<18) // past any buffer: some of it is sent
			w, err := p.Create(context.Background(), "shard.ndjson")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(big); err != nil {
				t.Fatal(err)
			}
			if got := current(t, p, "shard.ndjson"); got != "old\n" {
				t.Fatalf("while the new object is written, its name holds %d bytes, not the old object", len(got))
			}
			w.Abort()
			if got := current(t, p, "shard.ndjson"); got != "old\n" {
				t.Fatalf("after Abort, %d bytes, not the old object", len(got))
			}
			if after, err := p.List(context.Background()); err != nil || fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("after Abort the place lists %v (%v), before %v", after, err, before)
			}
			if kind == "directory" {
				if entries, _ := os.ReadDir(p.URL("")); len(entries) != 1 {
					t.Errorf("after Abort the directory holds %v", entries)
				}
			}

			w, err = p.Create(context.Background(), "shard.ndjson")
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			if _, err := w.Write(big); err != nil {
				t.Fatal(err)
			}
			if got := current(t, p, "shard.ndjson"); got != "old\n" {
				t.Fatalf("before Commit, %d bytes, not the old object", len(got))
			}
			if err := w.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			w.Abort() // after Commit: nothing
			if got := current(t, p, "shard.ndjson"); got != string(big) {
				t.Fatalf("after Commit, %d bytes, want the new %d", len(got), len(big))
			}
			if kind == "directory" {
				if entries, _ := os.ReadDir(p.URL("")); len(entries) != 1 {
					t.Errorf("after Commit the directory holds %v", entries)
				}
			}
		})
	}
}

// A name is a path under the place: one that would leave it is refused.
func TestDirRefusesNamesOutside(t *testing.T) {
	d := objects.NewDir(t.TempDir(), 0)
	for _, name := range []string{"../x", "/etc/passwd", "a/../../x"} {
		if w, err := d.Create(context.Background(), name); err == nil {
			w.Abort()
			t.Errorf("Create(%q) accepted", name)
		}
		if _, err := d.Stat(context.Background(), name); err == nil || !strings.Contains(err.Error(), "not a path under it") {
			t.Errorf("Stat(%q) = %v", name, err)
		}
	}
}

// A body cut short is read on from where it was cut, a few times; a body
// cut on every read fails after a bounded number of requests, where the
// client library's reader would request it again without end.
func TestGCSReadsABodyCutShortBoundedly(t *testing.T) {
	var hook atomic.Pointer[func(http.ResponseWriter, *http.Request, http.Handler) bool]
	p := places(t, &hook)["gcs"](t, "cut/")
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<12)
	write(t, p, "x", data)
	o, err := p.Stat(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	var media, cuts atomic.Int32
	cutAt := func(limit int32) {
		h := func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
			if !gcsfake.IsMedia(r) {
				return false
			}
			media.Add(1)
			if cuts.Add(1) > limit {
				return false
			}
			gcsfake.WriteHalf(w, r, next)
			return true
		}
		media.Store(0)
		cuts.Store(0)
		hook.Store(&h)
	}
	cutAt(1)
	if b, err := read(p, o); err != nil || !bytes.Equal(b, data) {
		t.Errorf("a body cut once: %d bytes, %v; want the object", len(b), err)
	}
	if n := media.Load(); n != 2 {
		t.Errorf("a body cut once took %d requests, want 2: the cut one and the rest", n)
	}
	cutAt(1 << 30)
	// a bound for a reader that would request it again without end: the
	// requests it makes in the time are counted
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := readCtx(ctx, p, o)
	if err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("a body cut every time: %d bytes, %v; want an error saying it was cut short", len(b), err)
	}
	// the request the guard cancels may be on a kept-alive connection
	// before the cancellation is seen
	if n := media.Load(); n < 4 || n > 5 {
		t.Errorf("a body cut every time: %d requests, want 4 (and at most the one cancelled)", n)
	}
	hook.Store(nil)
}

// A refusal is fs.ErrPermission, and a bucket that is not there
// fs.ErrNotExist, for a caller that tells a job's mistake from a moment's
// failure.
func TestGCSErrorsAreClassified(t *testing.T) {
	var hook atomic.Pointer[func(http.ResponseWriter, *http.Request, http.Handler) bool]
	open := places(t, &hook)["gcs"]
	p := open(t, "refused/")
	h := func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if strings.HasPrefix(r.URL.Path, "/upload/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"error":{"code":403,"message":"refused by the test"}}`)
			return true
		}
		return false
	}
	hook.Store(&h)
	w, err := p.Create(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	_, err = w.Write([]byte("x"))
	if err == nil {
		err = w.Commit(context.Background())
	}
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), p.URL("x")) {
		t.Errorf("an upload refused: %v, want fs.ErrPermission naming %s", err, p.URL("x"))
	}
	hook.Store(nil)
	if _, err := open(t, "").Stat(context.Background(), ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the bucket as an object: %v", err)
	}
	var op gcsobjects.Opener
	defer op.Close()
	absent, err := op.Open(context.Background(), objects.URL{Bucket: "absent-bucket", Path: "x/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := absent.List(context.Background()); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "gs://absent-bucket/x/") {
		t.Errorf("listing a bucket not there: %v, want fs.ErrNotExist naming it", err)
	}
}

// The client that bulk's places use is made as the script store's is: a
// credentials file that cannot be used is named, with why, in an
// operator's terms.
func TestOpenerNamesTheCredentials(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "") // the emulator needs no credentials
	file := filepath.Join(t.TempDir(), "absent.json")
	t.Setenv(gcsobjects.CredentialsVariable, file)
	var op gcsobjects.Opener
	defer op.Close()
	p, err := op.Open(context.Background(), objects.URL{Bucket: bucket, Path: "x/"})
	want := gcsobjects.CredentialsVariable + "=" + file + " must name a readable Google credentials JSON file"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "cannot open it: no such file or directory") {
		t.Errorf("Open = %v, %v; want %q… and why", p, err, want)
	}
	// a directory needs no client
	if _, err := op.Open(context.Background(), objects.URL{Path: t.TempDir()}); err != nil {
		t.Errorf("a directory: %v", err)
	}
}
