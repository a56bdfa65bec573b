package contentstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/objects"
)

// DirStore keeps scripts in a local directory, as <dir>/sha256/<hex>: the
// embedded default for running on a laptop.
//
// Put writes the script whole, read-only, through objects.Dir: a crash
// leaves either the whole script under its name or nothing but a
// temporary file, whose name (a dot, the hex and digits) never reads as a
// reference.
type DirStore struct {
	root  string // absolute
	files *objects.Dir
	opts  Options
}

var _ Store = (*DirStore)(nil)

// NewDirStore returns a store rooted at dir. It does not touch the file
// system: Put creates the directory when needed, and Check reports whether
// it exists.
func NewDirStore(dir string, opts Options) (*DirStore, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errors.New("contentstore: NewDirStore: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("contentstore: store directory %q: %w", dir, err)
	}
	// read-only: a stored script is immutable
	return &DirStore{root: abs, files: objects.NewDir(abs, 0o444), opts: o}, nil
}

// String returns the store's URL.
func (s *DirStore) String() string { return "file://" + filepath.ToSlash(s.root) }

func (s *DirStore) objectDir() string { return filepath.Join(s.root, "sha256") }

func (s *DirStore) path(ref contentref.Ref) string {
	return filepath.Join(s.root, filepath.FromSlash(ref.ObjectName("")))
}

// Get implements Store. It checks the file's size before reading it.
func (s *DirStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	if err := CheckRef(ref); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := s.path(ref)
	// Stat before opening: opening a FIFO or device could block or stream
	// forever.
	fi, err := os.Stat(p)
	if err != nil {
		return nil, s.fsError(p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("contentstore: %s is not a regular file (%v)", p, fi.Mode().Type())
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, s.fsError(p, err)
	}
	defer f.Close()
	// Size of what was opened, in case the name was replaced since Stat.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("contentstore: %s: %w", p, err)
	}
	max := s.opts.MaxScriptBytes
	if fi.Size() > max {
		return nil, TooLarge(p, fi.Size(), max)
	}
	data, err := ReadVerified(f, ref, max, p, s.opts.Logger)
	if err != nil && !errors.Is(err, contentref.ErrIntegrity) && !errors.Is(err, contentref.ErrTooLarge) {
		return nil, fmt.Errorf("contentstore: reading %s: %w", p, err)
	}
	return data, err
}

// Exists implements Store with a stat of the script's file.
func (s *DirStore) Exists(ctx context.Context, ref contentref.Ref) error {
	if err := CheckRef(ref); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := s.path(ref)
	fi, err := os.Stat(p)
	if err != nil {
		return s.fsError(p, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("contentstore: %s is not a regular file (%v)", p, fi.Mode().Type())
	}
	return nil
}

// fsError maps an error about path p to the package's sentinels, saying for a
// missing script whether the store directory itself is missing.
func (s *DirStore) fsError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why := "no such script"
		if _, err := os.Stat(s.root); errors.Is(err, fs.ErrNotExist) {
			why = fmt.Sprintf("store directory %s does not exist", s.root)
		} else if _, err := os.Stat(s.objectDir()); errors.Is(err, fs.ErrNotExist) {
			why = fmt.Sprintf("no script stored in %s yet", s.root)
		}
		return NotFound(p, why)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", contentref.ErrPermission, err)
	default:
		return fmt.Errorf("contentstore: %w", err)
	}
}

// Put implements Store. An existing file is not rewritten.
func (s *DirStore) Put(ctx context.Context, data []byte) (contentref.Ref, error) {
	if err := CheckPutSize(data, s.opts.MaxScriptBytes); err != nil {
		return contentref.Ref{}, err
	}
	if err := ctx.Err(); err != nil {
		return contentref.Ref{}, err
	}
	ref := contentref.RefOf(data)
	if fi, err := os.Stat(s.path(ref)); err == nil && fi.Mode().IsRegular() {
		return ref, nil
	}
	// A concurrent Put of the same script renames identical bytes over
	// these; either way the name holds a whole script.
	w, err := s.files.Create(ctx, ref.ObjectName(""))
	if err != nil {
		return contentref.Ref{}, s.putError(err)
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		return contentref.Ref{}, s.putError(err)
	}
	if err := w.Commit(ctx); err != nil {
		return contentref.Ref{}, s.putError(err)
	}
	return ref, nil
}

func (s *DirStore) putError(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w: writing to %s: %w", contentref.ErrPermission, s.root, err)
	}
	return fmt.Errorf("contentstore: writing to %s: %w", s.root, err)
}

// Check implements Store: the directory must exist.
func (s *DirStore) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := os.Stat(s.root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return NotFound(s.String(), fmt.Sprintf("store directory %s does not exist", s.root))
	case err != nil:
		return s.fsError(s.root, err)
	case !fi.IsDir():
		return fmt.Errorf("contentstore: %s is not a directory", s.root)
	}
	return nil
}

// Close implements Store; a directory store holds no resources.
func (s *DirStore) Close() error { return nil }

func (s *DirStore) MaxScriptBytes() int64 { return s.opts.MaxScriptBytes }
