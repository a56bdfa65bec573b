//go:build linux && arm64

package lockdown_test

// archProbes are the legacy calls that only amd64 has: none here.
func archProbes() []probe { return nil }
