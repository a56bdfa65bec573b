//go:build !linux

package lockdown

// Supported reports whether Apply exists here: it does only on Linux.
func Supported() bool { return false }

// Apply does nothing here and returns ErrUnsupported: the lock-down exists
// only on Linux.
func Apply(Options) (Status, error) { return Status{}, ErrUnsupported }
