package conformance_test

import (
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance/conformancetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// TestConformancetestRun: under go test the kit's cases are subtests of the
// caller, named as the cases, each against a backend made inside it.
func TestConformancetestRun(t *testing.T) {
	var names []string
	conformancetest.Run(t, func(t *testing.T) spi.Backend {
		names = append(names, t.Name())
		return conformance.GoodFake()
	}, conformance.FastOptions())
	cases := conformance.Cases()
	if len(names) != len(cases) {
		t.Fatalf("%d subtests for %d cases", len(names), len(cases))
	}
	for i, c := range cases {
		if want := t.Name() + "/" + c.Name(); names[i] != want {
			t.Errorf("subtest %d is %s, want %s", i, names[i], want)
		}
	}
}
