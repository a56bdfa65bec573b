package contentstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/objects"
)

// Store reads and writes scripts by their content address.
//
// Implementations are safe for concurrent use.
type Store interface {
	// Get returns the bytes stored under ref after checking that they hash
	// to it. The returned slice belongs to the caller.
	//
	// Errors wrap contentref's, for errors.Is: ErrNotFound when nothing is
	// stored under ref; ErrTooLarge when the object is over the maximum
	// script size (it is refused before it is read); ErrIntegrity when the
	// bytes do not hash to ref (the bytes are never returned);
	// ErrPermission when the store refuses access; ErrUnavailable when a
	// transient failure outlasted the retries or ctx's deadline. Anything
	// else is an unexpected failure.
	Get(ctx context.Context, ref contentref.Ref) ([]byte, error)

	// Exists reports whether a script is still stored under ref from what
	// the store knows of the object (its metadata, a stat), never reading
	// its bytes: nil when it is. Its errors are Get's: ErrNotFound when
	// nothing is stored under ref, ErrPermission, ErrUnavailable when a
	// transient failure outlasted the retries or ctx's deadline. A Cache
	// asks it before it runs bytes it holds again (see Cache).
	Exists(ctx context.Context, ref contentref.Ref) error

	// Put stores data under its own reference and returns it. It is
	// idempotent: an object already stored under the reference is not
	// rewritten and Put reports success. Data over the maximum script size
	// is refused with an error wrapping contentref.ErrTooLarge.
	Put(ctx context.Context, data []byte) (contentref.Ref, error)

	// Check reports whether the store is reachable and usable, for a
	// readiness probe. It reads no script.
	Check(ctx context.Context) error

	// Close releases the store's resources. The store must not be used
	// afterwards.
	Close() error
}

// Defaults applied by Options for zero fields.
const (
	// DefaultMaxScriptBytes is the default maximum script size, 1 MiB.
	DefaultMaxScriptBytes int64 = 1 << 20
	// DefaultRetryAttempts is the default number of attempts (first try
	// included) for a transient failure.
	DefaultRetryAttempts = 5
	// DefaultRetryInitialBackoff is the default pause before the first retry.
	DefaultRetryInitialBackoff = 100 * time.Millisecond
	// DefaultRetryMaxBackoff caps the pause between two attempts.
	DefaultRetryMaxBackoff = 3 * time.Second
	// DefaultAttemptTimeout bounds one attempt when the caller's deadline is
	// later (or absent), so that a stalled response is retried. A script is
	// at most DefaultMaxScriptBytes by default: 10 s carries it at under
	// 1 Mbit/s, and leaves room for several attempts inside a request
	// (Cloud Run's default timeout is 60 s) where 20 s left two.
	DefaultAttemptTimeout = 10 * time.Second

	// maxMaxScriptBytes bounds MaxScriptBytes: a script is held in memory
	// whole, so a larger setting is a configuration mistake.
	maxMaxScriptBytes int64 = 1 << 30
)

// Options configures a store. The zero value is usable: zero fields take
// the defaults above; negative values are an error.
type Options struct {
	// MaxScriptBytes is the largest script Get returns and Put accepts.
	MaxScriptBytes int64
	// Logger receives integrity failures and retries. Nil means
	// slog.Default().
	Logger *slog.Logger

	// RetryAttempts is the number of attempts (first try included) a GCS
	// call makes on transient failures: 5xx, 429, 408, timeouts, connection
	// resets, truncated bodies. All attempts stay inside the caller's
	// deadline. 1 disables retries.
	RetryAttempts int
	// RetryInitialBackoff is the pause before the first retry; each further
	// pause doubles, up to RetryMaxBackoff, with random jitter.
	RetryInitialBackoff time.Duration
	// RetryMaxBackoff caps one pause.
	RetryMaxBackoff time.Duration
	// AttemptTimeout bounds one attempt, so that a stalled response is cut
	// and retried even when the caller's deadline is far away.
	AttemptTimeout time.Duration
}

// WithDefaults returns o with zero fields set to their defaults, or an error
// naming every invalid field.
func (o Options) WithDefaults() (Options, error) {
	var errs []error
	if o.MaxScriptBytes < 0 || o.MaxScriptBytes > maxMaxScriptBytes {
		errs = append(errs, fmt.Errorf("MaxScriptBytes %d is outside [0, %d]", o.MaxScriptBytes, maxMaxScriptBytes))
	}
	if o.RetryAttempts < 0 {
		errs = append(errs, fmt.Errorf("RetryAttempts %d is negative", o.RetryAttempts))
	}
	if o.RetryInitialBackoff < 0 {
		errs = append(errs, fmt.Errorf("RetryInitialBackoff %v is negative", o.RetryInitialBackoff))
	}
	if o.RetryMaxBackoff < 0 {
		errs = append(errs, fmt.Errorf("RetryMaxBackoff %v is negative", o.RetryMaxBackoff))
	}
	if o.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("AttemptTimeout %v is negative", o.AttemptTimeout))
	}
	if len(errs) > 0 {
		return o, fmt.Errorf("contentstore: invalid options: %w", errors.Join(errs...))
	}
	if o.MaxScriptBytes == 0 {
		o.MaxScriptBytes = DefaultMaxScriptBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RetryAttempts == 0 {
		o.RetryAttempts = DefaultRetryAttempts
	}
	if o.RetryInitialBackoff == 0 {
		o.RetryInitialBackoff = DefaultRetryInitialBackoff
	}
	if o.RetryMaxBackoff == 0 {
		o.RetryMaxBackoff = DefaultRetryMaxBackoff
	}
	if o.RetryMaxBackoff < o.RetryInitialBackoff {
		o.RetryMaxBackoff = o.RetryInitialBackoff
	}
	if o.AttemptTimeout == 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	return o, nil
}

// Open returns the store a URL names:
//
//   - file:///path, or a plain path such as ./scripts: a local directory;
//   - mem: a fresh in-memory store;
//   - gs://bucket or gs://bucket/prefix is checked and refused with
//     ErrUnsupportedStore: gcsstore.Open opens it (Google Cloud Storage).
//
// Open checks the URL, not the store: use Check for reachability.
func Open(ctx context.Context, rawURL string, opts Options) (Store, error) {
	loc, err := parseStoreURL(rawURL)
	if err != nil {
		return nil, err
	}
	switch loc.kind {
	case kindMem:
		return NewMemStore(opts)
	case kindDir:
		return NewDirStore(loc.path, opts)
	default:
		return nil, fmt.Errorf("%w: %s names a GCS bucket, which gcsstore.Open opens (this package links no GCS client)", ErrUnsupportedStore, rawURL)
	}
}

// ParseGSURL parses a gs://bucket/prefix URL as Open's parser does: the
// bucket, and the prefix "" or ending in "/". Another kind of URL is an
// error.
func ParseGSURL(rawURL string) (bucket, prefix string, err error) {
	loc, err := parseStoreURL(rawURL)
	if err != nil {
		return "", "", err
	}
	if loc.kind != kindGCS {
		return "", "", fmt.Errorf("contentstore: %q is not a gs:// URL", rawURL)
	}
	return loc.bucket, loc.prefix, nil
}

type storeKind int

const (
	kindMem storeKind = iota
	kindDir
	kindGCS
)

// storeURL is a parsed store URL.
type storeURL struct {
	kind   storeKind
	path   string // kindDir
	bucket string // kindGCS
	prefix string // kindGCS: "" or ending in "/"
}

// URLForms are the store URLs Open and gcsstore.Open accept, as a URLError
// that is about the form lists them.
const URLForms = "gs://bucket/prefix, file:///path, a directory path, or mem:"

// URLError is the refusal of a store URL: the URL, what is wrong with it,
// and, when the mistake is in its form rather than in one of its parts, the
// forms accepted (URLForms). A program that accepts more forms (a service's
// "none") can say Reason with its own list.
type URLError struct {
	URL, Reason string
	// Want is URLForms where the URL is of no accepted form; else "".
	Want string
}

func (e *URLError) Error() string {
	msg := "store URL " + contentref.QuoteBounded(e.URL) + ": " + e.Reason
	if e.Want != "" {
		msg += " (want " + e.Want + ")"
	}
	return msg
}

// CheckURL reports whether Open (or gcsstore.Open) accepts rawURL, with a
// *URLError that says why not. It opens nothing.
func CheckURL(rawURL string) error {
	_, err := parseStoreURL(rawURL)
	return err
}

// LocalDir is the directory a store URL names when it names a local one
// (file:///path or a plain path).
func LocalDir(rawURL string) (dir string, ok bool) {
	loc, err := parseStoreURL(rawURL)
	if err != nil || loc.kind != kindDir {
		return "", false
	}
	return loc.path, true
}

// parseStoreURL parses the URLs Open accepts, with a *URLError that says
// what is wrong and what is expected: mem:, and objects.Parse's forms with
// the store's own rule for a prefix's length.
func parseStoreURL(raw string) (storeURL, error) {
	if scheme, rest, ok := objects.SplitScheme(raw); ok && scheme == "mem" && strings.TrimSpace(raw) == raw {
		if rest != "" {
			return storeURL{}, &URLError{URL: raw, Reason: `the memory store takes no address: write "mem:"`}
		}
		return storeURL{kind: kindMem}, nil
	}
	u, err := objects.Parse(raw)
	if err != nil {
		var ue *objects.URLError
		if !errors.As(err, &ue) {
			return storeURL{}, &URLError{URL: raw, Reason: err.Error()}
		}
		e := &URLError{URL: raw, Reason: ue.Reason}
		if ue.Want != "" {
			e.Want = URLForms
		}
		return storeURL{}, e
	}
	if !u.GCS() {
		return storeURL{kind: kindDir, path: u.Path}, nil
	}
	prefix := u.Prefix()
	// GCS object names are at most 1024 bytes; ours add sha256/<hex>.
	if len(prefix)+len("sha256/")+64 > 1024 {
		return storeURL{}, &URLError{URL: raw, Reason: "the prefix is too long for a GCS object name (1024 bytes)"}
	}
	return storeURL{kind: kindGCS, bucket: u.Bucket, prefix: prefix}, nil
}

// maxSizer is implemented by the stores (this package's and gcsstore's) so
// that PutFiles can bound what it reads before handing it to Put.
type maxSizer interface {
	MaxScriptBytes() int64
}

// ReadVerified reads one script from r, whose size the caller has already
// checked against max: it reads at most max+1 bytes, refuses more than max,
// and returns the bytes only if they hash to ref. loc names the object in
// errors and logs.
func ReadVerified(r io.Reader, ref contentref.Ref, max int64, loc string, log *slog.Logger) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, TooLarge(loc, -1, max)
	}
	if err := verify(data, ref, loc, log); err != nil {
		return nil, err
	}
	return data, nil
}

// verify checks that data hashes to ref, logging both hashes when it does
// not.
func verify(data []byte, ref contentref.Ref, loc string, log *slog.Logger) error {
	if ref.Matches(data) {
		return nil
	}
	got := contentref.RefOf(data)
	log.Error("contentstore: script bytes do not match their reference",
		slog.String("object", loc),
		slog.String("want", ref.String()),
		slog.String("got", got.String()),
		slog.Int("bytes", len(data)))
	return fmt.Errorf("%w: %s holds %d bytes hashing to %s, not %s", contentref.ErrIntegrity, loc, len(data), got, ref)
}

// TooLarge is the error for an object over the limit; size < 0 means the
// size was found by reading past the limit.
func TooLarge(loc string, size, limit int64) error {
	if size < 0 {
		size = -1
	}
	return &contentref.TooLargeError{Object: loc, Size: size, Limit: limit}
}

// CheckRef refuses the zero Ref before any store is asked for it.
func CheckRef(ref contentref.Ref) error {
	if ref.IsZero() {
		return fmt.Errorf("%w: zero contentref.Ref", contentref.ErrInvalidRef)
	}
	return nil
}

// CheckPutSize refuses data over max before anything is written.
func CheckPutSize(data []byte, max int64) error {
	if int64(len(data)) > max {
		return fmt.Errorf("%w: script is %d bytes, over the limit of %d bytes", contentref.ErrTooLarge, len(data), max)
	}
	return nil
}
