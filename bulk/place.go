package bulk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
)

// A place is where a bulk run's inputs are read from or its results are
// written to: a GCS bucket and prefix, or a local directory (or file).
// Names are slash-separated, relative to the place.
type place interface {
	// inputs are the input objects the URL names, in name order, with
	// what pins each (a GCS generation), so that reading one again reads
	// the same bytes: the one object or file the URL names, or else every
	// object or file under it.
	inputs(ctx context.Context) ([]object, error)
	open(ctx context.Context, o object) (io.ReadCloser, error)
	// create begins writing name whole: nothing is visible under name
	// until commit, and abort (or a process that dies first) leaves what
	// was there before.
	create(ctx context.Context, name string) (pending, error)
	// remove deletes name; one that is not there is no error.
	remove(ctx context.Context, name string) error
	// url is name's URL, for messages and the manifest.
	url(name string) string
	close() error
}

// object is one input object: its name (a place's, or "" for the object
// the URL itself names) and its GCS generation (0 for a file).
type object struct {
	name       string
	generation int64
}

// pending is an object being written: Write buffers it, commit makes it
// visible whole under its name, replacing what was there, and abort
// discards it. After either, neither does anything.
type pending interface {
	io.Writer
	commit(ctx context.Context) error
	abort()
}

// openPlace opens the place rawURL names: gs://bucket/path, or a local
// path.
func openPlace(ctx context.Context, rawURL string) (place, error) {
	if rawURL == "" {
		return nil, inputError("no URL: want gs://bucket/path or a local path")
	}
	rest, isGCS := strings.CutPrefix(rawURL, "gs://")
	if !isGCS {
		if strings.Contains(rawURL, "://") {
			return nil, inputError("%s: unsupported URL: want gs://bucket/path or a local path", rawURL)
		}
		return &dirPlace{path: filepath.Clean(rawURL)}, nil
	}
	bucket, p, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, inputError("%s: no bucket: want gs://bucket/path", rawURL)
	}
	client, err := storage.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: the GCS client cannot be created (its credentials: on Cloud Run the metadata server's, elsewhere GOOGLE_APPLICATION_CREDENTIALS or gcloud's): %w", rawURL, err)
	}
	return &gcsPlace{client: client, bucketName: bucket, bucket: client.Bucket(bucket), path: p}, nil
}

// gcsPlace is gs://bucket/path.
type gcsPlace struct {
	client     *storage.Client
	bucketName string
	bucket     *storage.BucketHandle
	path       string
}

func (g *gcsPlace) close() error { return g.client.Close() }

// dir is the place's path as a prefix of names under it: "" or ending
// in "/".
func (g *gcsPlace) dir() string {
	if g.path == "" || strings.HasSuffix(g.path, "/") {
		return g.path
	}
	return g.path + "/"
}

func (g *gcsPlace) url(name string) string {
	if name == "" {
		return "gs://" + g.bucketName + "/" + g.path
	}
	return "gs://" + g.bucketName + "/" + g.dir() + name
}

func (g *gcsPlace) objectName(name string) string {
	if name == "" {
		return g.path
	}
	return g.dir() + name
}

func (g *gcsPlace) inputs(ctx context.Context) ([]object, error) {
	if g.path != "" && !strings.HasSuffix(g.path, "/") {
		attrs, err := g.bucket.Object(g.path).Attrs(ctx)
		switch {
		case err == nil:
			return []object{{name: "", generation: attrs.Generation}}, nil
		case !errors.Is(err, storage.ErrObjectNotExist):
			return nil, fmt.Errorf("%s: %w", g.url(""), err)
		}
	}
	var objs []object
	it := g.bucket.Objects(ctx, &storage.Query{Prefix: g.dir()})
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", g.url(""), err)
		}
		if strings.HasSuffix(attrs.Name, "/") {
			continue // a folder's placeholder, not an input
		}
		objs = append(objs, object{name: strings.TrimPrefix(attrs.Name, g.dir()), generation: attrs.Generation})
	}
	// the service lists in name order; sorted here so that no task can
	// order them otherwise
	slices.SortFunc(objs, func(a, b object) int { return strings.Compare(a.name, b.name) })
	return objs, nil
}

func (g *gcsPlace) open(ctx context.Context, o object) (io.ReadCloser, error) {
	h := g.bucket.Object(g.objectName(o.name))
	if o.generation != 0 {
		h = h.Generation(o.generation)
	}
	r, err := h.NewReader(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.url(o.name), err)
	}
	return r, nil
}

func (g *gcsPlace) create(ctx context.Context, name string) (pending, error) {
	// The upload has a context of its own: one that ends with ctx would
	// abort it, and the shard's lines are committed after ctx ends (the
	// inputs not run are lines too). abort and a commit past its grace
	// cancel it.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := g.bucket.Object(g.objectName(name)).NewWriter(wctx)
	w.ContentType = "application/x-ndjson"
	if strings.HasSuffix(name, ".json") {
		w.ContentType = "application/json"
	}
	return &gcsPending{w: w, cancel: cancel, url: g.url(name)}, nil
}

func (g *gcsPlace) remove(ctx context.Context, name string) error {
	err := g.bucket.Object(g.objectName(name)).Delete(ctx)
	if err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("deleting %s: %w", g.url(name), err)
	}
	return nil
}

// gcsPending is an object being uploaded: GCS makes it visible only when
// the upload ends (Close), whole, replacing the object of its name; an
// upload cancelled before leaves that object as it was.
type gcsPending struct {
	w      *storage.Writer
	cancel context.CancelFunc
	url    string
	done   bool
}

func (p *gcsPending) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err != nil {
		return n, fmt.Errorf("writing %s: %w", p.url, err)
	}
	return n, nil
}

func (p *gcsPending) commit(ctx context.Context) error {
	if p.done {
		return nil
	}
	p.done = true
	defer p.cancel()
	stop := context.AfterFunc(ctx, p.cancel) // ctx bounds the commit
	defer stop()
	if err := p.w.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", p.url, err)
	}
	return nil
}

func (p *gcsPending) abort() {
	if !p.done {
		p.done = true
		p.cancel()
		_ = p.w.Close() // cancelled: the upload ends without an object
	}
}

// dirPlace is a local directory, or for inputs a file.
type dirPlace struct{ path string }

func (d *dirPlace) close() error { return nil }

func (d *dirPlace) url(name string) string {
	if name == "" {
		return d.path
	}
	return filepath.Join(d.path, filepath.FromSlash(name))
}

func (d *dirPlace) inputs(context.Context) ([]object, error) {
	fi, err := os.Stat(d.path)
	if err != nil {
		return nil, err // names the path
	}
	if !fi.IsDir() {
		return []object{{name: ""}}, nil
	}
	var objs []object
	err = filepath.WalkDir(d.path, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			rel, err := filepath.Rel(d.path, p)
			if err != nil {
				return err
			}
			objs = append(objs, object{name: filepath.ToSlash(rel)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// in the order of the slash-separated names, as GCS lists a prefix:
	// a/b comes after a.txt, which WalkDir visits after it
	slices.SortFunc(objs, func(a, b object) int { return strings.Compare(a.name, b.name) })
	return objs, nil
}

func (d *dirPlace) open(_ context.Context, o object) (io.ReadCloser, error) {
	return os.Open(d.url(o.name))
}

func (d *dirPlace) create(_ context.Context, name string) (pending, error) {
	final := d.url(name)
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return nil, err
	}
	// beside the final name, so that the rename is within one file system
	f, err := os.CreateTemp(filepath.Dir(final), "."+filepath.Base(final)+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &filePending{f: f, bw: bufio.NewWriterSize(f, 1<<20), final: final}, nil
}

func (d *dirPlace) remove(_ context.Context, name string) error {
	if err := os.Remove(d.url(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// filePending is a file written under a temporary name and renamed over
// its final one when whole: a reader sees the old file or the new, never
// a part.
type filePending struct {
	f     *os.File
	bw    *bufio.Writer
	final string
	done  bool
}

func (p *filePending) Write(b []byte) (int, error) { return p.bw.Write(b) }

func (p *filePending) commit(context.Context) error {
	if p.done {
		return nil
	}
	p.done = true
	err := p.bw.Flush()
	if err == nil {
		err = p.f.Sync()
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(p.f.Name(), p.final)
	}
	if err != nil {
		os.Remove(p.f.Name())
		return fmt.Errorf("writing %s: %w", p.final, err)
	}
	return nil
}

func (p *filePending) abort() {
	if !p.done {
		p.done = true
		p.f.Close()
		os.Remove(p.f.Name())
	}
}

// inside reports whether the results place is within the inputs place
// when that is a prefix or a directory (objs, its listing, is more than
// the one object the URL names): the tasks that ran later would read the
// shards of those that ran before as inputs.
func inside(inputs, results place, objs []object) bool {
	if len(objs) == 1 && objs[0].name == "" {
		return false
	}
	switch in := inputs.(type) {
	case *gcsPlace:
		r, ok := results.(*gcsPlace)
		return ok && r.bucketName == in.bucketName && strings.HasPrefix(r.dir(), in.dir())
	case *dirPlace:
		r, ok := results.(*dirPlace)
		if !ok {
			return false
		}
		ia, err1 := filepath.Abs(in.path)
		ra, err2 := filepath.Abs(r.path)
		if err1 != nil || err2 != nil {
			return false
		}
		rel, err := filepath.Rel(ia, ra)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	return false
}
