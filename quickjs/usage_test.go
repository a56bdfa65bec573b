package quickjs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Every run reports what it used: the phases it reached, in order and
// adding up to no more than the run took, its CPU time, its CPU budget,
// and its peak heap against its memory limit, which a script that holds
// more memory makes larger.
func TestRunReportsUsage(t *testing.T) {
	e := newEngine(t, quickjs.WithCPUBudget(1_000_000))
	run := func(script string) (spi.Report, time.Duration) {
		t.Helper()
		start := time.Now()
		rep, err := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: script, InputJSON: `{"n":3}`, Limits: limits}})
		if err != nil {
			t.Fatal(err)
		}
		return rep, time.Since(start)
	}

	small, took := run("input.n + 1")
	u := small.Usage
	if !small.Outcome.OK || u.Setup <= 0 || u.Compile <= 0 || u.Run <= 0 || u.Serialise <= 0 || u.Setup+u.Compile+u.Run+u.Serialise > took {
		t.Errorf("an ok run: phases %v + %v + %v + %v, want each > 0 and together within the %v the run took", u.Setup, u.Compile, u.Run, u.Serialise, took)
	}
	// the script's next run starts from its compile
	if again, _ := run("input.n + 1"); again.Usage.Compile != 0 || again.Usage.Setup <= 0 || again.Usage.Run <= 0 {
		t.Errorf("a script's second run: %+v, want no compile", again.Usage)
	}
	if u.Fetch != 0 || u.Verify != 0 {
		t.Errorf("the engine reported the effect's steps: %+v", u)
	}
	if u.CPUBudget != 1_000_000 || u.MemoryLimitBytes != limits.MemoryBytes || u.PeakMemoryBytes <= 0 || u.PeakMemoryBytes > limits.MemoryBytes {
		t.Errorf("an ok run: budget %d, memory %d of %d", u.CPUBudget, u.PeakMemoryBytes, u.MemoryLimitBytes)
	}

	// 8 MiB held at once: the peak says so, and the loop's polls and CPU
	// time show
	big, _ := run("const a = []; for (let i = 0; i < 1e6; i++) a.push(i); a.length")
	if !big.Outcome.OK || big.Usage.PeakMemoryBytes < small.Usage.PeakMemoryBytes+8<<20 || big.Usage.PeakMemoryBytes > limits.MemoryBytes {
		t.Errorf("a million numbers: peak %d bytes, the small run's %d", big.Usage.PeakMemoryBytes, small.Usage.PeakMemoryBytes)
	}
	if big.Usage.CPUBudgetUsed <= small.Usage.CPUBudgetUsed || big.Usage.CPU <= 0 {
		t.Errorf("a million pushes: %d polls (the small run's %d), CPU %v", big.Usage.CPUBudgetUsed, small.Usage.CPUBudgetUsed, big.Usage.CPU)
	}

	// a throw ends the run before its result is serialised
	threw, _ := run("throw new Error('x')")
	if threw.Outcome.Kind != spi.KindThrew || threw.Usage.Run <= 0 || threw.Usage.Serialise != 0 {
		t.Errorf("a throw: %+v", threw.Usage)
	}
	// an input the engine cannot parse never reaches the script
	rep, err := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: "1", InputJSON: `{`, Limits: limits}})
	if err != nil || rep.Usage.Setup <= 0 || rep.Usage.Run != 0 || rep.Usage.Serialise != 0 {
		t.Errorf("an invalid input: %+v, %v", rep.Usage, err)
	}
}

// A return at the top level, the commonest mistake a model makes, is the
// parser's SyntaxError with a hint that says what a script's result is; a
// script that throws the same text itself gets its own message back.
func TestReturnAtTheTopLevelSaysWhy(t *testing.T) {
	e := newEngine(t)
	out := eval(t, e, "return input.a", `{"a":1}`, limits)
	if out.Kind != spi.KindThrew || out.Name == nil || *out.Name != "SyntaxError" ||
		!strings.HasPrefix(out.Message, "return not in a function: ") || !strings.Contains(out.Message, "not `return input.a`") {
		t.Errorf("return input.a: %s", describe(out))
	}
	own := eval(t, e, `throw new SyntaxError("return not in a function")`, "null", limits)
	if own.Message != "return not in a function" {
		t.Errorf("a script's own SyntaxError: %s", describe(own))
	}
	// any other syntax error is the parser's text alone
	if out := eval(t, e, "1 +", "null", limits); out.Name == nil || *out.Name != "SyntaxError" || strings.Contains(out.Message, "last expression") {
		t.Errorf("1 +: %s", describe(out))
	}
}
