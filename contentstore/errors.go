package contentstore

import (
	"errors"
	"fmt"
)

// Errors every store translates its failures to, tested with errors.Is.
var (
	// ErrNotFound: no object under the reference (the effect's scriptMissing).
	ErrNotFound = errors.New("contentstore: script not found")
	// ErrIntegrity: the stored bytes do not hash to the reference.
	ErrIntegrity = errors.New("contentstore: script bytes do not match their reference")
	// ErrTooLarge: the object is over the store's maximum script size.
	ErrTooLarge = errors.New("contentstore: script too large")
	// ErrPermission: the store refused access (credentials or IAM).
	ErrPermission = errors.New("contentstore: permission denied")
	// ErrUnavailable: a transient failure outlasted the retries or the deadline.
	ErrUnavailable = errors.New("contentstore: store unavailable")
)

// errClosed is returned by a store used after Close.
var errClosed = errors.New("contentstore: store is closed")

// notFound wraps ErrNotFound with where the script was looked for and why it
// is missing, so that a missing bucket or directory reads differently from a
// missing script.
func notFound(loc, why string) error {
	return fmt.Errorf("%w: %s: %s", ErrNotFound, loc, why)
}
