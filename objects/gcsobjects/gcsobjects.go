// Package gcsobjects is the objects.Place of a GCS bucket prefix, and the
// one construction of the storage client, which the script store
// (contentstore/gcsstore) and the bulk verb share: its credentials' errors
// in an operator's terms, and the bound on its reader's reopen loop
// (LimitBodyRequests). It is apart from package objects so that a program
// that reads only directories links neither the GCS client library nor
// gRPC.
package gcsobjects

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/loom-plugins/sandbox-cloudrun/objects"
)

// CredentialsVariable names the file of Application Default Credentials
// when it is set.
const CredentialsVariable = "GOOGLE_APPLICATION_CREDENTIALS"

// NewClient creates a client from Application Default Credentials (the
// client library honours STORAGE_EMULATOR_HOST), with an error that says
// why not in an operator's terms.
func NewClient(ctx context.Context) (*storage.Client, error) {
	client, err := storage.NewClient(ctx)
	if err != nil {
		return nil, credentialsError(os.Getenv(CredentialsVariable), err)
	}
	return client, nil
}

// credentialsError says why the client could not be made in the terms of
// what an operator sets: the variable that names the credentials, what it
// must hold, and the cause at the bottom of the client library's chain (a
// file that cannot be read, text that is not a credentials file), without
// the library's own prefixes.
func credentialsError(file string, err error) error {
	cause := err
	for u := errors.Unwrap(cause); u != nil; u = errors.Unwrap(cause) {
		cause = u
	}
	var pe *fs.PathError
	if errors.As(err, &pe) { // the file named: what was done with it, and why it failed
		cause = fmt.Errorf("cannot %s it: %w", pe.Op, pe.Err)
	}
	if file != "" {
		return fmt.Errorf("%s=%s must name a readable Google credentials JSON file (a service account key, or the file gcloud auth application-default login writes), or be unset to use the metadata server's or gcloud's credentials: %w",
			CredentialsVariable, file, cause)
	}
	return fmt.Errorf("no Google credentials for the GCS client (on Cloud Run they come from the metadata server; elsewhere set %s to a credentials JSON file, or run gcloud auth application-default login): %w",
		CredentialsVariable, cause)
}

// errBodyRequests is the cause of a reader's context when the reader
// starts more requests for the object's bytes than it may.
var errBodyRequests = errors.New("gcsobjects: more requests for the object's bytes than allowed")

// LimitBodyRequests returns the context for a storage.Reader that lets it
// make n HTTP requests. The client library's reader reopens the object at
// the offset reached after any read error other than EOF, at once and in a
// loop without bound or pause (httpReader.Read); a bucket's retry policy
// governs each reopen request, not the loop. A body cut short on every
// read would make thousands of requests per second until the deadline.
// Here request n+1 (seen through net/http's client trace, which every
// request made with the context reports) cancels the context instead, so
// that the read fails and bodyCut reports true: the caller's own retry,
// with its bound and its backoff, decides whether to read again. done
// releases the context.
func LimitBodyRequests(ctx context.Context, n int) (rctx context.Context, bodyCut func() bool, done func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	var requests atomic.Int32
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) {
			if int(requests.Add(1)) > n {
				cancel(errBodyRequests)
			}
		},
	})
	return ctx,
		func() bool { return errors.Is(context.Cause(ctx), errBodyRequests) },
		func() { cancel(nil) }
}

// openRequests is how many requests one Open's reader may make: the
// first, and reopens at the byte reached after a cut, so that a long read
// resumes rather than fails, up to a bound.
const openRequests = 4

// Prefix is a bucket's prefix as an objects.Place, over a client it does
// not own.
type Prefix struct {
	bucketName string
	bucket     *storage.BucketHandle
	path       string // as written: a trailing "/" makes it a prefix only
}

var _ objects.Place = (*Prefix)(nil)

// New is the place u names (u.GCS()), over client, which the caller
// closes.
func New(client *storage.Client, u objects.URL) *Prefix {
	return &Prefix{bucketName: u.Bucket, bucket: client.Bucket(u.Bucket), path: u.Path}
}

// Close implements objects.Place: the client is the caller's.
func (p *Prefix) Close() error { return nil }

// dir is the path as a prefix of names: "" or ending in "/".
func (p *Prefix) dir() string { return objects.URL{Bucket: p.bucketName, Path: p.path}.Prefix() }

// objectName is name's object name in the bucket.
func (p *Prefix) objectName(name string) string {
	if name == "" {
		return p.path
	}
	return p.dir() + name
}

// URL implements objects.Place.
func (p *Prefix) URL(name string) string {
	return "gs://" + p.bucketName + "/" + p.objectName(name)
}

// Stat implements objects.Place with a request for the object's metadata.
func (p *Prefix) Stat(ctx context.Context, name string) (objects.Object, error) {
	on := p.objectName(name)
	if on == "" || strings.HasSuffix(on, "/") { // the bucket, or a folder: no object
		return objects.Object{}, fmt.Errorf("%s names no object: %w", p.URL(name), fs.ErrNotExist)
	}
	attrs, err := p.bucket.Object(on).Attrs(ctx)
	if err != nil {
		return objects.Object{}, classify(p.URL(name), err)
	}
	return objects.Object{Name: name, Generation: attrs.Generation, Size: attrs.Size}, nil
}

// List implements objects.Place. A folder's placeholder (a name ending in
// "/") is no object.
func (p *Prefix) List(ctx context.Context) ([]objects.Object, error) {
	q := &storage.Query{Prefix: p.dir()}
	if err := q.SetAttrSelection([]string{"Name", "Generation", "Size"}); err != nil {
		return nil, err
	}
	var objs []objects.Object
	it := p.bucket.Objects(ctx, q)
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, classify("listing "+p.URL(""), err)
		}
		if strings.HasSuffix(attrs.Name, "/") {
			continue
		}
		objs = append(objs, objects.Object{Name: strings.TrimPrefix(attrs.Name, p.dir()), Generation: attrs.Generation, Size: attrs.Size})
	}
	objects.SortByName(objs)
	return objs, nil
}

// Open implements objects.Place: the reader reads that generation only, and
// resumes after a cut at most openRequests-1 times.
func (p *Prefix) Open(ctx context.Context, o objects.Object) (io.ReadCloser, error) {
	url := p.URL(o.Name)
	h := p.bucket.Object(p.objectName(o.Name))
	if o.Generation != 0 {
		h = h.Generation(o.Generation)
	}
	rctx, bodyCut, done := LimitBodyRequests(ctx, openRequests)
	r, err := h.NewReader(rctx)
	if err != nil {
		done()
		return nil, openError(url, o, err)
	}
	return &reader{r: r, o: o, url: url, bodyCut: bodyCut, done: done}, nil
}

// openError is the error of reading o: ErrChanged for a generation no
// longer there.
func openError(url string, o objects.Object, err error) error {
	err = classify(url, err)
	if o.Generation != 0 && errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s generation %d: %w (replaced or deleted: %w)", url, o.Generation, objects.ErrChanged, err)
	}
	return err
}

// reader reads one generation of an object.
type reader struct {
	r       *storage.Reader
	o       objects.Object
	url     string
	bodyCut func() bool
	done    func()
}

func (r *reader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	switch {
	case err == nil || errors.Is(err, io.EOF):
		return n, err
	case r.bodyCut():
		return n, fmt.Errorf("reading %s: its body was cut short %d times: %w", r.url, openRequests, err)
	default:
		return n, fmt.Errorf("reading %s: %w", r.url, openError(r.url, r.o, err))
	}
}

func (r *reader) Close() error {
	err := r.r.Close()
	r.done()
	return err
}

// Create implements objects.Place: the object is uploaded, and GCS makes
// it seen only when the upload ends (Commit), whole, replacing the object
// of its name; an upload cancelled before (Abort) leaves that object as it
// was. The upload has a context of its own, not ctx, so that a caller may
// commit after ctx has ended (a bulk shard's lines are written after its
// SIGTERM); Commit's context bounds it.
func (p *Prefix) Create(ctx context.Context, name string) (objects.Writer, error) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := p.bucket.Object(p.objectName(name)).NewWriter(wctx)
	switch {
	case strings.HasSuffix(name, ".ndjson"):
		w.ContentType = "application/x-ndjson"
	case strings.HasSuffix(name, ".json"):
		w.ContentType = "application/json"
	}
	return &upload{w: w, cancel: cancel, url: p.URL(name)}, nil
}

// upload is an object being uploaded.
type upload struct {
	w      *storage.Writer
	cancel context.CancelFunc
	url    string
	done   bool
}

func (u *upload) Write(b []byte) (int, error) {
	n, err := u.w.Write(b)
	if err != nil {
		return n, classify("writing "+u.url, err)
	}
	return n, nil
}

func (u *upload) Commit(ctx context.Context) error {
	if u.done {
		return nil
	}
	u.done = true
	defer u.cancel()
	stop := context.AfterFunc(ctx, u.cancel) // ctx bounds the commit
	defer stop()
	if err := u.w.Close(); err != nil {
		return classify("writing "+u.url, err)
	}
	return nil
}

func (u *upload) Abort() {
	if !u.done {
		u.done = true
		u.cancel()
		_ = u.w.Close() // cancelled: the upload ends without an object
	}
}

// Delete implements objects.Place.
func (p *Prefix) Delete(ctx context.Context, name string) error {
	err := p.bucket.Object(p.objectName(name)).Delete(ctx)
	if err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return classify("deleting "+p.URL(name), err)
	}
	return nil
}

// classify names what failed and adds, for errors.Is, the fs error an
// objects.Place's caller tests: fs.ErrNotExist for an object or a bucket
// not there, fs.ErrPermission for a refusal (401, 403).
func classify(what string, err error) error {
	var kind error
	var gerr *googleapi.Error
	switch {
	case errors.Is(err, storage.ErrObjectNotExist), errors.Is(err, storage.ErrBucketNotExist):
		kind = fs.ErrNotExist
	case errors.As(err, &gerr) && gerr.Code == http.StatusNotFound:
		kind = fs.ErrNotExist
	case errors.As(err, &gerr) && (gerr.Code == http.StatusUnauthorized || gerr.Code == http.StatusForbidden):
		kind = fs.ErrPermission
	}
	return &classified{what: what, err: err, kind: kind}
}

// classified is an error with the fs error it counts as.
type classified struct {
	what      string
	err, kind error
}

func (e *classified) Error() string { return e.what + ": " + e.err.Error() }

func (e *classified) Unwrap() []error {
	if e.kind == nil {
		return []error{e.err}
	}
	return []error{e.err, e.kind}
}

// Opener opens the places URLs name: gs:// ones over one client, made
// when one first needs it, and local paths as objects.Dir with files of
// perm. Close closes the client.
type Opener struct {
	// Perm is the permission of the files a local place writes, less the
	// umask (0: 0o644).
	Perm fs.FileMode
	// Attempts, when positive, is how many times a request of a GCS
	// place is made before its error is returned, with the client
	// library's backoff between; 0 is the library's default, until the
	// context ends (a Cloud Run task's timeout).
	Attempts int

	mu     sync.Mutex
	client *storage.Client
}

// Open opens the place u names.
func (o *Opener) Open(ctx context.Context, u objects.URL) (objects.Place, error) {
	if !u.GCS() {
		return objects.NewDir(u.Path, o.Perm), nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.client == nil {
		client, err := NewClient(ctx)
		if err != nil {
			return nil, err
		}
		o.client = client
	}
	p := New(o.client, u)
	if o.Attempts > 0 {
		p.bucket = p.bucket.Retryer(storage.WithMaxAttempts(o.Attempts))
	}
	return p, nil
}

// Close closes the client, if one was made.
func (o *Opener) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.client == nil {
		return nil
	}
	err := o.client.Close()
	o.client = nil
	return err
}
