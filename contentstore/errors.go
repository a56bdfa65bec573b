package contentstore

import (
	"errors"
	"fmt"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

// Every store translates its failures to the errors of contentref
// (ErrNotFound, ErrIntegrity, ErrUnavailable, ErrTooLarge with a
// TooLargeError, ErrPermission; the Cache adds ErrPanicked), so that the
// effect, which knows no store, can tell them apart.

// ErrUnsupportedStore: Open was given a gs:// URL, which gcsstore.Open opens
// (this package links no GCS client).
var ErrUnsupportedStore = errors.New("contentstore: unsupported store")

// errClosed is returned by a store used after Close.
var errClosed = errors.New("contentstore: store is closed")

// NotFound wraps ErrNotFound with where the script was looked for and why it
// is missing, so that a missing bucket or directory reads differently from a
// missing script.
func NotFound(loc, why string) error {
	return fmt.Errorf("%w: %s: %s", contentref.ErrNotFound, loc, why)
}
