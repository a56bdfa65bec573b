package quickjs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// trapMarker chooses the runs that an engine built with
// quickjs.WithTrapForTests breaks.
const trapMarker = "/* trap */"

func trapped(script string) bool { return strings.Contains(script, trapMarker) }

// A run whose guest traps answers infrastructure, never an outcome of the
// script, and its report says that it is an engine fault, with the trap's
// text. What is no fault of the engine (the script's value or exception, a
// limit, the wall clock met at the interrupt handler) reports none, and
// the run after a fault, a fresh instance, answers as ever.
func TestEngineFaultIsReported(t *testing.T) {
	e := newEngine(t, quickjs.WithTrapForTests(trapped), quickjs.WithPoolSize(1), quickjs.WithCPUBudget(20000))
	run := func(script string, l spi.Limits) spi.Report {
		t.Helper()
		rep, err := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: script, InputJSON: "null", Limits: l}})
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		return rep
	}
	for _, script := range []string{trapMarker + " 1 + 1", trapMarker + " for (;;) {}"} {
		rep := run(script, limits)
		if rep.Outcome.Kind != spi.KindInfrastructure || rep.Outcome.Message != "quickjs: engine failed: wasm error: unreachable" {
			t.Errorf("%s: %s, want infrastructure", script, describe(rep.Outcome))
		}
		if rep.EngineFault != "wasm error: unreachable" {
			t.Errorf("%s: the engine fault is %q, want the trap's text", script, rep.EngineFault)
		}
	}
	for _, tc := range []struct {
		script string
		limits spi.Limits
		want   string
	}{
		{"1 + 1", limits, `{ok:true value:2 kind:"" limit:"" name:<none> message:""}`},
		{`throw new Error("wasm error: unreachable")`, limits, `{ok:false value: kind:"threw" limit:"" name:"Error" message:"wasm error: unreachable"}`},
		{"for (;;) {}", spi.Limits{WallClock: 50 * time.Millisecond, MemoryBytes: 32 << 20}, `{ok:false value: kind:"limit" limit:"wallClock" name:<none> message:""}`},
		{"for (;;) {}", spi.Limits{WallClock: time.Minute, MemoryBytes: 32 << 20}, `{ok:false value: kind:"limit" limit:"cpu" name:<none> message:""}`},
		{`"x".repeat(1 << 20).split("")`, spi.Limits{WallClock: time.Minute, MemoryBytes: 1 << 20}, `{ok:false value: kind:"limit" limit:"memory" name:<none> message:""}`},
	} {
		rep := run(tc.script, tc.limits)
		if got := describe(rep.Outcome); got != tc.want || rep.EngineFault != "" {
			t.Errorf("%s: %s, engine fault %q; want %s and none", tc.script, got, rep.EngineFault, tc.want)
		}
	}
}
