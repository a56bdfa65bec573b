package contentstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

func newDirT(t *testing.T, dir string, opts Options) *DirStore {
	t.Helper()
	s, err := NewDirStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDirFound(t *testing.T) {
	root := t.TempDir()
	opts, _ := fastOpts(t)
	s := openT(t, "file://"+root, opts)
	ctx := ctxT(t)
	ref, err := s.Put(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "sha256", ref.Hex())
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("the script is not at <root>/sha256/<hex>: %v", err)
	}
	if fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("a stored script should be read-only, mode %v", fi.Mode())
	}
	got, err := s.Get(ctx, ref)
	if err != nil || !bytes.Equal(got, script) {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check: %v", err)
	}
	// A plain path opens the same store.
	s2 := openT(t, root, opts)
	if got, err := s2.Get(ctx, ref); err != nil || !bytes.Equal(got, script) {
		t.Errorf("Get through a plain path = %q, %v", got, err)
	}
}

func TestDirMissing(t *testing.T) {
	opts, _ := fastOpts(t)
	ctx := ctxT(t)
	ref := contentref.RefOf(script)
	base := t.TempDir()

	absent := newDirT(t, filepath.Join(base, "absent"), opts)
	_, err := absent.Get(ctx, ref)
	if !errors.Is(err, contentref.ErrNotFound) || !strings.Contains(err.Error(), "store directory") || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Get from an absent directory = %v, want contentref.ErrNotFound saying the directory is missing", err)
	}
	if err := absent.Check(ctx); !errors.Is(err, contentref.ErrNotFound) {
		t.Errorf("Check of an absent directory = %v, want contentref.ErrNotFound", err)
	}

	empty := newDirT(t, t.TempDir(), opts)
	if _, err := empty.Get(ctx, ref); !errors.Is(err, contentref.ErrNotFound) || !strings.Contains(err.Error(), "no script stored") {
		t.Errorf("Get from an empty directory = %v, want contentref.ErrNotFound saying nothing is stored", err)
	}

	used := newDirT(t, t.TempDir(), opts)
	if _, err := used.Put(ctx, []byte("another")); err != nil {
		t.Fatal(err)
	}
	if _, err := used.Get(ctx, ref); !errors.Is(err, contentref.ErrNotFound) || !strings.Contains(err.Error(), "no such script") {
		t.Errorf("Get of a missing script = %v, want contentref.ErrNotFound", err)
	}
}

func TestDirTampered(t *testing.T) {
	opts, logs := fastOpts(t)
	s := newDirT(t, t.TempDir(), opts)
	ctx := ctxT(t)
	ref, err := s.Put(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	evil := []byte("export default () => { steal(); };\n")
	p := s.path(ref)
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, evil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, ref)
	if !errors.Is(err, contentref.ErrIntegrity) || got != nil {
		t.Fatalf("Get of a tampered file = %q, %v; want nil, contentref.ErrIntegrity", got, err)
	}
	for _, want := range []string{ref.String(), contentref.RefOf(evil).String()} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log should carry %s; log:\n%s", want, logs)
		}
	}
}

func TestDirOversizedRefusedUnread(t *testing.T) {
	opts, _ := fastOpts(t)
	opts.MaxScriptBytes = 1024
	s := newDirT(t, t.TempDir(), opts)
	ctx := ctxT(t)
	// A sparse 64 GiB file: reading it whole would take minutes and all the
	// memory there is, so a quick contentref.ErrTooLarge shows the size came
	// first.
	ref := contentref.RefOf([]byte("whatever"))
	if err := os.MkdirAll(s.objectDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(s.path(ref))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 30); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	f.Close()
	start := time.Now()
	_, err = s.Get(ctx, ref)
	if !errors.Is(err, contentref.ErrTooLarge) || !strings.Contains(err.Error(), "limit of 1024 bytes") || !strings.Contains(err.Error(), "68719476736 bytes") {
		t.Fatalf("Get = %v, want contentref.ErrTooLarge naming the size and the limit", err)
	}
	var tl *contentref.TooLargeError
	if !errors.As(err, &tl) || tl.Size != 64<<30 || tl.Limit != 1024 || tl.Object != s.path(ref) {
		t.Errorf("Get = %#v, want a *contentref.TooLargeError with the size, the limit and the path", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusing took %v", d)
	}
	if _, err := s.Put(ctx, make([]byte, 1025)); !errors.Is(err, contentref.ErrTooLarge) {
		t.Errorf("Put of 1025 bytes = %v, want contentref.ErrTooLarge", err)
	}
}

func TestDirCrashLeavesOnlyTempFile(t *testing.T) {
	opts, _ := fastOpts(t)
	s := newDirT(t, t.TempDir(), opts)
	ctx := ctxT(t)
	ref := contentref.RefOf(script)

	// What a Put killed before its rename leaves: a temporary file, made by
	// the store's own code, holding part of the script.
	w, err := s.files.Create(ctx, ref.ObjectName(""))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	w.Write(script[:len(script)/2])
	entries, err := os.ReadDir(s.objectDir())
	if err != nil || len(entries) != 1 {
		t.Fatalf("the store's directory holds %v, %v; want the temporary file", entries, err)
	}
	tmp := filepath.Join(s.objectDir(), entries[0].Name())

	if _, err := s.Get(ctx, ref); !errors.Is(err, contentref.ErrNotFound) {
		t.Fatalf("Get with only a temporary file = %v, want contentref.ErrNotFound", err)
	}
	// The temporary file's name is no reference.
	if _, err := contentref.ParseRef("sha256:" + filepath.Base(tmp)); err == nil {
		t.Errorf("temporary name %q parses as a reference", filepath.Base(tmp))
	}
	// A later Put completes the script despite the leftover.
	if _, err := s.Put(ctx, script); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, ref); err != nil || !bytes.Equal(got, script) {
		t.Fatalf("Get after the retry Put = %q, %v", got, err)
	}
}

func TestDirPutTwice(t *testing.T) {
	opts, _ := fastOpts(t)
	s := newDirT(t, t.TempDir(), opts)
	ctx := ctxT(t)
	ref1, err := s.Put(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(s.path(ref1))
	if err != nil {
		t.Fatal(err)
	}
	ref2, err := s.Put(ctx, script)
	if err != nil || ref1 != ref2 {
		t.Fatalf("second Put = %s, %v; want %s", ref2, err, ref1)
	}
	after, _ := os.Stat(s.path(ref1))
	if !os.SameFile(before, after) || !before.ModTime().Equal(after.ModTime()) {
		t.Errorf("the file was rewritten")
	}
	entries, err := os.ReadDir(s.objectDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != ref1.Hex() {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %q, want exactly the one script and no temporary file", names)
	}
}

func TestDirNotARegularFile(t *testing.T) {
	opts, _ := fastOpts(t)
	s := newDirT(t, t.TempDir(), opts)
	ref := contentref.RefOf(script)
	if err := os.MkdirAll(s.objectDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	// A FIFO would block an open; the store must not open it.
	if err := syscall.Mkfifo(s.path(ref), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Get(ctxT(t), ref); done <- err }()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, contentref.ErrNotFound) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Get of a FIFO = %v, want a not-a-regular-file error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Get of a FIFO blocked")
	}
}

func TestDirPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	opts, _ := fastOpts(t)
	s := newDirT(t, t.TempDir(), opts)
	ctx := ctxT(t)
	ref, err := s.Put(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.path(ref), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, ref); !errors.Is(err, contentref.ErrPermission) {
		t.Errorf("Get of an unreadable file = %v, want contentref.ErrPermission", err)
	}
}

// A store says whether it still holds a script from a stat of its file,
// with Get's errors: missing is ErrNotFound, something other than a file
// where the script should be is a failure of its own.
func TestDirExists(t *testing.T) {
	opts, _ := fastOpts(t)
	s := newDirT(t, t.TempDir(), opts)
	ctx := ctxT(t)
	ref := putT(t, s, script)
	if err := s.Exists(ctx, ref); err != nil {
		t.Fatalf("Exists of a stored script = %v", err)
	}
	if err := os.Remove(s.path(ref)); err != nil {
		t.Fatal(err)
	}
	if err := s.Exists(ctx, ref); !errors.Is(err, contentref.ErrNotFound) {
		t.Errorf("Exists of a deleted script = %v, want contentref.ErrNotFound", err)
	}
	if err := os.Mkdir(s.path(ref), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Exists(ctx, ref); err == nil || errors.Is(err, contentref.ErrNotFound) {
		t.Errorf("Exists of a directory under the script's name = %v, want a failure that is not ErrNotFound", err)
	}
	if err := s.Exists(ctx, contentref.Ref{}); !errors.Is(err, contentref.ErrInvalidRef) {
		t.Errorf("Exists(zero Ref) = %v, want contentref.ErrInvalidRef", err)
	}
	absent := newDirT(t, t.TempDir()+"/absent", opts)
	if err := absent.Exists(ctx, ref); !errors.Is(err, contentref.ErrNotFound) {
		t.Errorf("Exists in an absent directory = %v, want contentref.ErrNotFound", err)
	}
}
