//go:build !cgo

package lockdown

// cMargin is 0 in a pure-Go build: the Go runtime's threads are its own,
// and RuntimeMargin covers them.
func cMargin() uint64 { return 0 }
