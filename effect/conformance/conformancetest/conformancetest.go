// Package conformancetest runs the conformance kit (docs/spi.md, "The
// conformance kit") under go test: each case is a subtest. It is the kit's
// only link to the testing package, so that a program running the kit through
// conformance.Check does not link testing.
package conformancetest

import (
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

var _ conformance.T = (*testing.T)(nil)

// Run runs every case of the kit as a subtest of t, named as the case,
// each against a new backend from factory (called inside the subtest).
func Run(t *testing.T, factory func(t *testing.T) spi.Backend, opts conformance.Options) {
	t.Helper()
	if factory == nil {
		t.Fatal("conformance: nil factory")
	}
	for _, c := range conformance.Cases() {
		t.Run(c.Name(), func(t *testing.T) {
			c.Run(t.Context(), t, factory(t), opts)
		})
	}
}
