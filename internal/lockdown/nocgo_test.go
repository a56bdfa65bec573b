//go:build !cgo

package lockdown_test

const cgoEnabled = false
