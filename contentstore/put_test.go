package contentstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

func writeFileT(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPutFiles(t *testing.T) {
	dir := t.TempDir()
	a := writeFileT(t, dir, "a.js", []byte("export default () => 'a';"))
	b := writeFileT(t, dir, "b.js", []byte("export default () => 'b';"))
	stdin := []byte("export default () => 'stdin';")
	s := memT(t)
	var out bytes.Buffer

	err := PutFiles(ctxT(t), s, []string{a, "-", b}, bytes.NewReader(stdin), &out)
	if err != nil {
		t.Fatal(err)
	}
	want := contentref.RefOf([]byte("export default () => 'a';")).String() + "  " + a + "\n" +
		contentref.RefOf(stdin).String() + "  -\n" +
		contentref.RefOf([]byte("export default () => 'b';")).String() + "  " + b + "\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		refText, _, _ := strings.Cut(line, "  ")
		ref, err := contentref.ParseRef(refText)
		if err != nil {
			t.Fatalf("printed reference %q: %v", refText, err)
		}
		if _, err := s.Get(ctxT(t), ref); err != nil {
			t.Errorf("printed %s but the store does not have it: %v", ref, err)
		}
	}
}

func TestPutFilesFailures(t *testing.T) {
	dir := t.TempDir()
	good := writeFileT(t, dir, "good.js", []byte("export default () => 1;"))
	big := writeFileT(t, dir, "big.js", bytes.Repeat([]byte("x"), 100))
	missing := filepath.Join(dir, "missing.js")
	opts, _ := fastOpts(t)
	opts.MaxScriptBytes = 64

	t.Run("a failed file prints nothing, the others are stored", func(t *testing.T) {
		s, _ := NewMemStore(opts)
		var out bytes.Buffer
		err := PutFiles(ctxT(t), s, []string{missing, good, big, dir}, strings.NewReader(""), &out)
		if err == nil {
			t.Fatal("PutFiles succeeded")
		}
		for _, want := range []string{missing, big, dir, "limit of 64 bytes", "is a directory"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q should mention %q", err, want)
			}
		}
		if !errors.Is(err, contentref.ErrTooLarge) || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error %q should wrap contentref.ErrTooLarge and os.ErrNotExist", err)
		}
		if _, err := s.Get(ctxT(t), contentref.RefOf(bytes.Repeat([]byte("x"), 100))); !errors.Is(err, contentref.ErrNotFound) {
			t.Errorf("the oversized file was stored: %v", err)
		}
		if want := contentref.RefOf([]byte("export default () => 1;")).String() + "  " + good + "\n"; out.String() != want {
			t.Errorf("output %q, want only the good file's line %q", out.String(), want)
		}
	})
	t.Run("oversized stdin", func(t *testing.T) {
		s, _ := NewMemStore(opts)
		var out bytes.Buffer
		err := PutFiles(ctxT(t), s, []string{"-"}, bytes.NewReader(bytes.Repeat([]byte("y"), 1000)), &out)
		if !errors.Is(err, contentref.ErrTooLarge) || out.Len() != 0 {
			t.Errorf("PutFiles = %v, output %q; want contentref.ErrTooLarge and no output", err, out.String())
		}
	})
	t.Run("stdin twice", func(t *testing.T) {
		s, _ := NewMemStore(opts)
		var out bytes.Buffer
		err := PutFiles(ctxT(t), s, []string{good, "-", "-"}, strings.NewReader("x"), &out)
		if err == nil || !strings.Contains(err.Error(), "more than once") || out.Len() != 0 {
			t.Errorf("PutFiles = %v, output %q; want a refusal before anything is stored", err, out.String())
		}
	})
	t.Run("no files", func(t *testing.T) {
		s, _ := NewMemStore(opts)
		if err := PutFiles(ctxT(t), s, nil, nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "no files") {
			t.Errorf("PutFiles() = %v", err)
		}
	})
	t.Run("store failure", func(t *testing.T) {
		s, _ := NewMemStore(opts)
		s.Close()
		var out bytes.Buffer
		if err := PutFiles(ctxT(t), s, []string{good}, nil, &out); err == nil || out.Len() != 0 {
			t.Errorf("PutFiles into a closed store = %v, output %q", err, out.String())
		}
	})
}

// PutFiles into a directory store, the way the verb will run (gcsstore
// runs it against the GCS emulator).
func TestPutFilesRealStores(t *testing.T) {
	opts, _ := fastOpts(t)
	file := writeFileT(t, t.TempDir(), "s.js", script)
	want := contentref.RefOf(script).String() + "  " + file + "\n"
	for _, url := range []string{filepath.Join(t.TempDir(), "store")} {
		s := openT(t, url, opts)
		var out bytes.Buffer
		if err := PutFiles(ctxT(t), s, []string{file}, nil, &out); err != nil {
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
