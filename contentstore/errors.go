package contentstore

import (
	"errors"
	"fmt"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

// Errors every store translates its failures to, tested with errors.Is,
// beside contentref's ErrNotFound, ErrIntegrity and ErrUnavailable.
var (
	// ErrTooLarge: the object is over the store's maximum script size.
	ErrTooLarge = errors.New("contentstore: script too large")
	// ErrPermission: the store refused access (credentials or IAM).
	ErrPermission = errors.New("contentstore: permission denied")
	// ErrPanicked: the store a Cache wraps panicked during a Get. The Cache
	// recovers it (the read runs on the Cache's own goroutine, where nothing
	// else would), logs it with its stack, and hands this error to every
	// caller waiting for that read; the error never carries the panic's
	// value. It is a bug in the store, not a fault of the script or a
	// transient failure.
	ErrPanicked = errors.New("contentstore: the store panicked")
	// ErrUnsupportedStore: Open was given a gs:// URL, which gcsstore.Open
	// opens (this package links no GCS client).
	ErrUnsupportedStore = errors.New("contentstore: unsupported store")
)

// TooLargeError is the error of a Get refused because the object is over the
// store's maximum script size. It matches ErrTooLarge with errors.Is; get it
// with errors.As to learn which limit applied.
type TooLargeError struct {
	// Object names the object (a URL or a path).
	Object string
	// Size is the object's size in bytes, or -1 when it was found over
	// Limit by reading past it.
	Size int64
	// Limit is the store's maximum script size (Options.MaxScriptBytes).
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%v: %s is over the limit of %d bytes", ErrTooLarge, e.Object, e.Limit)
	}
	return fmt.Sprintf("%v: %s is %d bytes, over the limit of %d bytes", ErrTooLarge, e.Object, e.Size, e.Limit)
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// errClosed is returned by a store used after Close.
var errClosed = errors.New("contentstore: store is closed")

// NotFound wraps ErrNotFound with where the script was looked for and why it
// is missing, so that a missing bucket or directory reads differently from a
// missing script.
func NotFound(loc, why string) error {
	return fmt.Errorf("%w: %s: %s", contentref.ErrNotFound, loc, why)
}
