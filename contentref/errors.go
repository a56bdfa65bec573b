package contentref

import (
	"errors"
	"fmt"
)

// Errors a script reader reports, tested with errors.Is: every store
// translates its failures to them, and the effect tells each way a script
// could not be read by them alone, knowing no store. The texts name the
// store layer, where they arise.
var (
	// ErrNotFound: no object under the reference (the effect's scriptMissing).
	ErrNotFound = errors.New("contentstore: script not found")
	// ErrIntegrity: the stored bytes do not hash to the reference.
	ErrIntegrity = errors.New("contentstore: script bytes do not match their reference")
	// ErrUnavailable: a transient failure outlasted the retries or the deadline.
	ErrUnavailable = errors.New("contentstore: store unavailable")
	// ErrTooLarge: the object is over the store's maximum script size.
	ErrTooLarge = errors.New("contentstore: script too large")
	// ErrPermission: the store refused access (credentials or IAM).
	ErrPermission = errors.New("contentstore: permission denied")
	// ErrPanicked: the store panicked during a Get, and what ran the read
	// (contentstore.Cache, on a goroutine of its own) recovered it, logged
	// it with its stack and returned this error, which never carries the
	// panic's value. It is a bug in the store, not a fault of the script or
	// a transient failure.
	ErrPanicked = errors.New("contentstore: the store panicked")
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
	// Limit is the store's maximum script size.
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
