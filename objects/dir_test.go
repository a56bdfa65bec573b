package objects

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A commit syncs the directory that holds the file once the file is
// there under its name, so that the rename outlives a crash.
func TestDirCommitSyncsTheDirectory(t *testing.T) {
	root := t.TempDir()
	d := NewDir(root, 0)
	final := filepath.Join(root, "a", "b.json")
	var synced []string
	d.syncDir = func(dir string) error {
		if b, err := os.ReadFile(final); err != nil || string(b) != "whole" {
			t.Errorf("the directory synced before the rename: %q, %v", b, err)
		}
		synced = append(synced, dir)
		return syncDir(dir)
	}
	w, err := d.Create(context.Background(), "a/b.json")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.Write([]byte("whole")); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != filepath.Dir(final) {
		t.Errorf("synced %q, want %s once", synced, filepath.Dir(final))
	}
	fi, err := os.Stat(final)
	if err != nil || fi.Mode().Perm()&0o644 != fi.Mode().Perm() {
		t.Errorf("the file: %v, %v", fi, err)
	}
}
