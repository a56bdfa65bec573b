package quickjs_test

import (
	"context"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance/conformancetest"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// The conformance kit over the engine, in each hard-kill configuration. With
// the Go watchdog alone the engine declares a soft wall clock, and the kit
// skips abort-mid-run, visibly; the two configurations that stop a run stuck
// in native code declare it hard and must pass it.
func TestConformance(t *testing.T) {
	configs := map[string][]quickjs.Option{
		"watchdog":     nil,
		"process kill": {quickjs.WithProcessKill(true), quickjs.WithHardKill(quickjs.HardKillWatchdog, 2*time.Second)},
		"context done": {quickjs.WithHardKill(quickjs.HardKillForTests, time.Second)},
	}
	for name, opts := range configs {
		t.Run(name, func(t *testing.T) {
			e, err := quickjs.New(context.Background(), quickjs.CachedForTests(opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close(context.Background()) })
			// the kit's deadlines are for runs: the engine's compilation,
			// tens of seconds under the race detector on a busy machine,
			// is done before, as the service does it before traffic
			if err := e.Warm(context.Background()); err != nil {
				t.Fatal(err)
			}
			conformancetest.Run(t, func(t *testing.T) spi.Backend { return e }, conformance.Options{})
		})
	}
}
