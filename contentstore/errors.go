package contentstore

import "errors"

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
