//go:build cgo

package lockdown_test

// cgoEnabled: threads are created by the C library (pthread_create), as in
// a race-detector build.
const cgoEnabled = true
