//go:build !linux

package lockdown_test

import (
	"errors"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/internal/lockdown"
)

func TestUnsupported(t *testing.T) {
	if lockdown.Supported() {
		t.Fatal("Supported() on a system without the lock-down")
	}
	st, err := lockdown.Apply(lockdown.Options{})
	if !errors.Is(err, lockdown.ErrUnsupported) || st != (lockdown.Status{}) {
		t.Fatalf("Apply: %+v, %v; want nothing applied and ErrUnsupported", st, err)
	}
}
