package contentstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

func TestMemStore(t *testing.T) {
	opts, _ := fastOpts(t)
	opts.MaxScriptBytes = 64
	s := openT(t, "mem:", opts)
	ctx := ctxT(t)

	in := []byte("export default () => 1;")
	ref, err := s.Put(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	in[0] = 'X' // the store kept its own copy
	got, err := s.Get(ctx, ref)
	if err != nil || string(got) != "export default () => 1;" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	got[0] = 'Y' // and hands out copies
	if again, _ := s.Get(ctx, ref); again[0] != 'e' {
		t.Errorf("a caller changed the stored bytes: %q", again)
	}
	if ref2, err := s.Put(ctx, []byte("export default () => 1;")); err != nil || ref2 != ref {
		t.Errorf("second Put = %s, %v", ref2, err)
	}
	if _, err := s.Get(ctx, contentref.RefOf([]byte("nope"))); !errors.Is(err, contentref.ErrNotFound) {
		t.Errorf("Get of a missing script = %v, want contentref.ErrNotFound", err)
	}
	if _, err := s.Put(ctx, bytes.Repeat([]byte("x"), 65)); !errors.Is(err, contentref.ErrTooLarge) {
		t.Errorf("Put over the limit = %v, want contentref.ErrTooLarge", err)
	}
	empty, err := s.Put(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, empty); err != nil || got == nil || len(got) != 0 {
		t.Errorf("Get of the empty script = %#v, %v; want a non-nil empty slice", got, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check: %v", err)
	}
	s.Close()
	if _, err := s.Get(ctx, ref); err == nil {
		t.Error("Get after Close succeeded")
	}
	if err := s.Check(ctx); err == nil {
		t.Error("Check after Close succeeded")
	}
}

func TestMemExists(t *testing.T) {
	s := memT(t)
	ctx := ctxT(t)
	ref := putT(t, s, script)
	if err := s.Exists(ctx, ref); err != nil {
		t.Errorf("Exists of a stored script = %v", err)
	}
	if err := s.Exists(ctx, contentref.RefOf([]byte("nope"))); !errors.Is(err, contentref.ErrNotFound) {
		t.Errorf("Exists of a missing script = %v, want contentref.ErrNotFound", err)
	}
	s.Close()
	if err := s.Exists(ctx, ref); err == nil {
		t.Error("Exists after Close succeeded")
	}
}
