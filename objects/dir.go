package objects

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/renameio/v2"
)

// Dir is a local directory as a Place: its objects are its regular files,
// named by their slash-separated paths under it. Its URL may also name a
// file, the object "".
//
// A file is written whole with renameio: under a temporary name beside its
// final one (a dot, the final name and digits), synced, renamed over the
// final name, and then the directory is synced, so that a crash leaves
// either the whole new file under its name, with its name durable, or the
// old one and perhaps a temporary file. Leftover temporary files are not
// swept; they are harmless and can be deleted at any time.
type Dir struct {
	path string
	perm fs.FileMode
	// syncDir syncs a directory after a rename into it (a test watches it)
	syncDir func(dir string) error
}

var _ Place = (*Dir)(nil)

// NewDir is the directory, or file, at path. Files it writes have perm,
// less the umask (0: 0o644). It does not touch the file system: Create makes the
// directories a name needs.
func NewDir(path string, perm fs.FileMode) *Dir {
	if perm == 0 {
		perm = 0o644
	}
	return &Dir{path: filepath.Clean(path), perm: perm, syncDir: syncDir}
}

// Close implements Place: a directory holds nothing.
func (d *Dir) Close() error { return nil }

// URL implements Place: name's path.
func (d *Dir) URL(name string) string {
	if name == "" {
		return d.path
	}
	return filepath.Join(d.path, filepath.FromSlash(name))
}

// file is name's path, refusing a name that would leave the directory.
func (d *Dir) file(name string) (string, error) {
	if name != "" && !filepath.IsLocal(filepath.FromSlash(name)) {
		return "", fmt.Errorf("%s: object name %q is not a path under it", d.path, name)
	}
	return d.URL(name), nil
}

// object is the Object a file's information describes. Its generation is
// a digest of the file's inode and modification time: a file replaced by
// a rename is another inode, and one rewritten in place has another
// modification time (though a rewrite within the file system's timestamp
// granularity that keeps the size passes unseen).
func object(name string, fi fs.FileInfo) Object {
	h := fnv.New64a()
	var b [8]byte
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		binary.LittleEndian.PutUint64(b[:], uint64(st.Dev))
		h.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], uint64(st.Ino))
		h.Write(b[:])
	}
	binary.LittleEndian.PutUint64(b[:], uint64(fi.ModTime().UnixNano()))
	h.Write(b[:])
	gen := int64(h.Sum64())
	if gen == 0 { // 0 opens whatever is there
		gen = 1
	}
	return Object{Name: name, Generation: gen, Size: fi.Size()}
}

// Stat implements Place with a stat of the file.
func (d *Dir) Stat(_ context.Context, name string) (Object, error) {
	p, err := d.file(name)
	if err != nil {
		return Object{}, err
	}
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return Object{}, err // names the path
	case fi.IsDir():
		return Object{}, fmt.Errorf("%s is a directory, not a file: %w", p, fs.ErrNotExist)
	case !fi.Mode().IsRegular():
		return Object{}, fmt.Errorf("%s is not a regular file (%v)", p, fi.Mode().Type())
	}
	return object(name, fi), nil
}

// List implements Place: every regular file under the directory, at any
// depth.
func (d *Dir) List(context.Context) ([]Object, error) {
	fi, err := os.Stat(d.path)
	if err != nil {
		return nil, err // names the path
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", d.path)
	}
	var objs []Object
	err = filepath.WalkDir(d.path, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(d.path, p)
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		objs = append(objs, object(filepath.ToSlash(rel), fi))
		return nil
	})
	if err != nil {
		return nil, err
	}
	// WalkDir visits a/b before a.txt; GCS lists a.txt first
	SortByName(objs)
	return objs, nil
}

// Open implements Place. The file's generation is checked when it is
// opened and again at its end, so that a file rewritten in place while it
// is read is ErrChanged too.
func (d *Dir) Open(_ context.Context, o Object) (io.ReadCloser, error) {
	p, err := d.file(o.Name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && o.Generation != 0 {
			return nil, fmt.Errorf("%s: %w (it is no longer there)", p, ErrChanged)
		}
		return nil, err
	}
	r := &fileReader{f: f, o: o}
	if err := r.check(); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// fileReader reads a file, checking its generation at the end.
type fileReader struct {
	f *os.File
	o Object
}

func (r *fileReader) check() error {
	fi, err := r.f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%v)", r.f.Name(), fi.Mode().Type())
	}
	if now := object(r.o.Name, fi); r.o.Generation != 0 && (now.Generation != r.o.Generation || now.Size != r.o.Size) {
		return fmt.Errorf("%s: %w (now %d bytes, modified at %s; %d bytes when listed)", r.f.Name(), ErrChanged,
			fi.Size(), fi.ModTime().Format(time.RFC3339Nano), r.o.Size)
	}
	return nil
}

func (r *fileReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if errors.Is(err, io.EOF) {
		if cerr := r.check(); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

func (r *fileReader) Close() error { return r.f.Close() }

// Create implements Place: the file is written under a temporary name
// beside its final one, in the directories name needs.
func (d *Dir) Create(_ context.Context, name string) (Writer, error) {
	final, err := d.file(name)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// beside the final name, so that the rename is within one file system
	// and the directory synced is the one that holds it
	f, err := renameio.NewPendingFile(final, renameio.WithTempDir(dir), renameio.WithPermissions(d.perm))
	if err != nil {
		return nil, err
	}
	return &fileWriter{f: f, bw: bufio.NewWriterSize(f, 64<<10), final: final, syncDir: d.syncDir}, nil
}

// fileWriter is a file being written under its temporary name.
type fileWriter struct {
	f       *renameio.PendingFile
	bw      *bufio.Writer
	final   string
	syncDir func(string) error
	done    bool
}

func (w *fileWriter) Write(b []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("writing %s: %w", w.final, fs.ErrClosed)
	}
	n, err := w.bw.Write(b)
	if err != nil {
		return n, fmt.Errorf("writing %s: %w", w.final, err)
	}
	return n, nil
}

// Commit implements Writer: the file is flushed, synced and renamed over
// its final name, and then the directory is synced, so that the rename
// outlives a crash.
func (w *fileWriter) Commit(context.Context) error {
	if w.done {
		return nil
	}
	w.done = true
	err := w.bw.Flush()
	if err == nil {
		err = w.f.CloseAtomicallyReplace()
	}
	if err != nil {
		_ = w.f.Cleanup()
		return fmt.Errorf("writing %s: %w", w.final, err)
	}
	if err := w.syncDir(filepath.Dir(w.final)); err != nil {
		return fmt.Errorf("writing %s: the directory: %w", w.final, err)
	}
	return nil
}

// Abort implements Writer: the temporary file is removed.
func (w *fileWriter) Abort() {
	if !w.done {
		w.done = true
		_ = w.f.Cleanup()
	}
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Delete implements Place.
func (d *Dir) Delete(_ context.Context, name string) error {
	p, err := d.file(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
