// Package gcsstore is the script store in a Google Cloud Storage bucket. It
// is apart from contentstore so that a program using the directory, memory
// or cached stores (or the effect, or the client) links neither the GCS
// client library nor gRPC.
package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/objects/gcsobjects"
)

// GCSStore keeps scripts in a Google Cloud Storage bucket under
// <prefix>sha256/<hex>.
//
// The service account needs storage.objects.get and storage.objects.list
// (roles/storage.objectViewer) to read, and storage.objects.create
// (roles/storage.objectCreator) to Put. It never needs to delete or
// overwrite: Put uses a does-not-exist precondition.
//
// Retries are this store's own (see contentstore.Options), not the client library's, so
// that one policy covers the whole read (metadata, body and verification)
// and stays inside the caller's deadline.
type GCSStore struct {
	client     *storage.Client
	ownsClient bool
	bucketName string
	bucket     *storage.BucketHandle
	prefix     string
	opts       contentstore.Options
}

var _ contentstore.Store = (*GCSStore)(nil)

// Open opens the store a URL names: a gs:// URL here, any other through
// contentstore.Open.
func Open(ctx context.Context, rawURL string, opts contentstore.Options) (contentstore.Store, error) {
	bucket, prefix, err := contentstore.ParseGSURL(rawURL)
	if err != nil {
		return contentstore.Open(ctx, rawURL, opts) // not gs://
	}
	s, err := openGCS(ctx, bucket, prefix, opts)
	if err != nil {
		// not s: a nil *GCSStore in the interface would pass for a store
		return nil, err
	}
	return s, nil
}

// openGCS creates a client (gcsobjects.NewClient) and a store that owns
// it.
func openGCS(ctx context.Context, bucket, prefix string, opts contentstore.Options) (*GCSStore, error) {
	client, err := gcsobjects.NewClient(ctx)
	if err != nil {
		return nil, err
	}
	s, err := NewGCSStore(client, bucket, prefix, opts)
	if err != nil {
		client.Close()
		return nil, err
	}
	s.ownsClient = true
	return s, nil
}

// NewGCSStore returns a store over bucket with a caller-owned client; Close
// leaves the client open. prefix is "" or a path such as "scripts/" (a
// missing trailing slash is added).
func NewGCSStore(client *storage.Client, bucket, prefix string, opts contentstore.Options) (*GCSStore, error) {
	if client == nil {
		return nil, errors.New("gcsstore: NewGCSStore: nil client")
	}
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	u := "gs://" + bucket
	if prefix != "" {
		u += "/" + prefix
	}
	bucket, prefix, err = contentstore.ParseGSURL(u)
	if err != nil {
		return nil, err
	}
	return &GCSStore{
		client:     client,
		bucketName: bucket,
		// The client library's retries would nest inside ours and ignore
		// our backoff settings.
		bucket: client.Bucket(bucket).Retryer(storage.WithPolicy(storage.RetryNever)),
		prefix: prefix,
		opts:   o,
	}, nil
}

// String returns the store's URL.
func (s *GCSStore) String() string {
	return "gs://" + s.bucketName + "/" + s.prefix
}

func (s *GCSStore) loc(ref contentref.Ref) string {
	return "gs://" + s.bucketName + "/" + ref.ObjectName(s.prefix)
}

// Get implements Store. It reads the object's metadata first and refuses an
// object over the limit without requesting its body; it then reads that
// generation through a limit and verifies it.
func (s *GCSStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	if err := contentstore.CheckRef(ref); err != nil {
		return nil, err
	}
	var data []byte
	err := contentstore.Retry(ctx, s.opts, "get", func(ctx context.Context) error {
		d, err := s.getOnce(ctx, ref)
		data = d
		return err
	})
	if err != nil {
		return nil, err
	}
	return data, nil
}

func (s *GCSStore) getOnce(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	loc := s.loc(ref)
	obj := s.bucket.Object(ref.ObjectName(s.prefix))
	attrs, err := obj.Attrs(ctx)
	if err != nil {
		if errors.Is(gcsError(err), contentref.ErrNotFound) {
			return nil, contentstore.NotFound(loc, s.whyMissing(ctx))
		}
		return nil, fmt.Errorf("reading the metadata of %s: %w", loc, gcsError(err))
	}
	max := s.opts.MaxScriptBytes
	if attrs.Size > max {
		return nil, contentstore.TooLarge(loc, attrs.Size, max)
	}
	// Read the generation whose size was checked, not whatever is there now,
	// with one request for its bytes: a body cut short is this attempt's
	// transient failure, and Retry's bound and backoff decide whether to
	// read again, where the client library's reader would reopen it without
	// either (gcsobjects.LimitBodyRequests).
	rctx, bodyCut, done := gcsobjects.LimitBodyRequests(ctx, 1)
	defer done()
	r, err := obj.Generation(attrs.Generation).NewReader(rctx)
	if err != nil {
		err = gcsError(err)
		if errors.Is(err, contentref.ErrNotFound) {
			// Replaced or deleted since the metadata read: start over.
			return nil, contentstore.Transient(fmt.Errorf("%s generation %d vanished while being read: %w", loc, attrs.Generation, err))
		}
		return nil, fmt.Errorf("opening %s: %w", loc, err)
	}
	defer r.Close()
	if r.Attrs.Size > max {
		return nil, contentstore.TooLarge(loc, r.Attrs.Size, max)
	}
	data, err := readVerifiedGCS(r, ref, max, loc, attrs.Size, s.opts.Logger)
	if err != nil {
		if bodyCut() {
			return nil, contentstore.Transient(fmt.Errorf("reading %s: the body was cut short and the reader would request it again: %w", loc, err))
		}
		return nil, err
	}
	return data, nil
}

// Exists implements contentstore.Store with a request for the object's
// metadata (and, when it is missing, the listing whyMissing makes), never
// one for its bytes, retried as Get is.
func (s *GCSStore) Exists(ctx context.Context, ref contentref.Ref) error {
	if err := contentstore.CheckRef(ref); err != nil {
		return err
	}
	loc := s.loc(ref)
	return contentstore.Retry(ctx, s.opts, "exists", func(ctx context.Context) error {
		_, err := s.bucket.Object(ref.ObjectName(s.prefix)).Attrs(ctx)
		if err == nil {
			return nil
		}
		if err = gcsError(err); errors.Is(err, contentref.ErrNotFound) {
			return contentstore.NotFound(loc, s.whyMissing(ctx))
		}
		return fmt.Errorf("reading the metadata of %s: %w", loc, err)
	})
}

// readVerifiedGCS is readVerified that also treats a body shorter than the
// object as a truncated (transient) read rather than as tampering.
func readVerifiedGCS(r *storage.Reader, ref contentref.Ref, max int64, loc string, size int64, log *slog.Logger) ([]byte, error) {
	data, err := contentstore.ReadVerified(&shortReadGuard{r: r, size: size, decompressed: r.Attrs.Decompressed}, ref, max, loc, log)
	if err != nil && !errors.Is(err, contentref.ErrIntegrity) && !errors.Is(err, contentref.ErrTooLarge) {
		return nil, fmt.Errorf("reading %s: %w", loc, gcsError(err))
	}
	return data, err
}

// shortReadGuard turns an early end of body into io.ErrUnexpectedEOF so that
// a truncated response is retried instead of failing verification.
type shortReadGuard struct {
	r            *storage.Reader
	size, n      int64
	decompressed bool // a transcoded body's length is not the object's size
}

func (g *shortReadGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.n += int64(n)
	if err != nil && errors.Is(err, io.EOF) && !g.decompressed && g.n < g.size {
		return n, fmt.Errorf("body ended after %d of %d bytes: %w", g.n, g.size, io.ErrUnexpectedEOF)
	}
	return n, err
}

// whyMissing tells a missing bucket and an empty prefix from a missing
// object. It lists at most one name (storage.objects.list, part of
// roles/storage.objectViewer) and falls back to a generic reason when that
// fails.
func (s *GCSStore) whyMissing(ctx context.Context) string {
	q := &storage.Query{Prefix: s.prefix + "sha256/"}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return "no such object"
	}
	it := s.bucket.Objects(ctx, q)
	it.PageInfo().MaxSize = 1
	_, err := it.Next()
	switch {
	case err == nil:
		return "no such object"
	case errors.Is(err, iterator.Done):
		return fmt.Sprintf("no object under gs://%s/%ssha256/ at all (is the prefix right?)", s.bucketName, s.prefix)
	case errors.Is(err, storage.ErrBucketNotExist), errors.Is(gcsError(err), contentref.ErrNotFound):
		return fmt.Sprintf("bucket %q does not exist", s.bucketName)
	default:
		return "no such object"
	}
}

// Put implements contentstore.Store with a does-not-exist precondition: an existing
// object (HTTP 412) means the script is already stored.
func (s *GCSStore) Put(ctx context.Context, data []byte) (contentref.Ref, error) {
	if err := contentstore.CheckPutSize(data, s.opts.MaxScriptBytes); err != nil {
		return contentref.Ref{}, err
	}
	ref := contentref.RefOf(data)
	loc := s.loc(ref)
	crc := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	err := contentstore.Retry(ctx, s.opts, "put", func(ctx context.Context) error {
		// Canceling ctx is how a failed upload is abandoned.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w := s.bucket.Object(ref.ObjectName(s.prefix)).
			If(storage.Conditions{DoesNotExist: true}).
			NewWriter(ctx)
		w.ChunkSize = 0 // one request: scripts are small
		w.ContentType = "text/javascript"
		w.CRC32C = crc
		w.SendCRC32C = true
		_, werr := w.Write(data)
		cerr := w.Close()
		err := cerr
		if err == nil {
			err = werr
		}
		if err == nil {
			return nil
		}
		var gerr *googleapi.Error
		if errors.As(err, &gerr) && gerr.Code == http.StatusPreconditionFailed {
			return nil // already stored: same bytes by construction
		}
		return fmt.Errorf("writing %s: %w", loc, gcsError(err))
	})
	if err != nil {
		return contentref.Ref{}, err
	}
	return ref, nil
}

// Check implements contentstore.Store: it lists at most one name under the prefix, which
// proves that the bucket exists and that the credentials can read it.
func (s *GCSStore) Check(ctx context.Context) error {
	q := &storage.Query{Prefix: s.prefix + "sha256/"}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return err
	}
	it := s.bucket.Objects(ctx, q)
	it.PageInfo().MaxSize = 1
	_, err := it.Next()
	if err == nil || errors.Is(err, iterator.Done) {
		return nil
	}
	if errors.Is(err, storage.ErrBucketNotExist) {
		return contentstore.NotFound(s.String(), fmt.Sprintf("bucket %q does not exist", s.bucketName))
	}
	err = gcsError(err)
	if contentstore.IsTransient(err) || ctx.Err() != nil {
		return fmt.Errorf("%w: checking %s: %w", contentref.ErrUnavailable, s, contentstore.UnwrapTransient(err))
	}
	return fmt.Errorf("checking %s: %w", s, err)
}

// Close implements contentstore.Store; it closes the client only if Open created it.
func (s *GCSStore) Close() error {
	if s.ownsClient {
		return s.client.Close()
	}
	return nil
}

func (s *GCSStore) MaxScriptBytes() int64 { return s.opts.MaxScriptBytes }

// gcsError maps a client library error to contentref's sentinels: 404 to
// ErrNotFound, 401 and 403 to ErrPermission, and failures worth retrying
// (408, 429, 5xx, timeouts, resets, truncated bodies) to a transient error.
// Other errors are returned as they are.
func gcsError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) {
		return fmt.Errorf("%w (%v)", contentref.ErrNotFound, err)
	}
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		switch {
		case gerr.Code == http.StatusNotFound:
			return fmt.Errorf("%w (%v)", contentref.ErrNotFound, err)
		case gerr.Code == http.StatusUnauthorized || gerr.Code == http.StatusForbidden:
			return fmt.Errorf("%w: %w", contentref.ErrPermission, err)
		case gerr.Code == http.StatusRequestTimeout || gerr.Code == http.StatusTooManyRequests || gerr.Code >= 500 && gerr.Code <= 599:
			return contentstore.Transient(err)
		default:
			return err
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// Whether this is worth retrying depends on whose context ended;
		// retry decides.
		return err
	}
	var nerr net.Error
	if storage.ShouldRetry(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &nerr) && nerr.Timeout() {
		return contentstore.Transient(err)
	}
	return err
}
