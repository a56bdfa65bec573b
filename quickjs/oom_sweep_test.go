//go:build checkedengine

package quickjs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// sweepCase is a script the out-of-memory sweep runs with its allocations
// refused one by one.
type sweepCase struct {
	name string
	req  spi.Request
	// catches: the script catches exceptions (a try, a promise's catch),
	// so that once it has caught the out-of-memory error it may answer a
	// value of its own
	catches bool
}

// catchesErrors reports whether script can catch an exception, and so
// answer a value of its own after an allocation was refused.
func catchesErrors(script string) bool {
	return strings.Contains(script, "catch") || strings.Contains(script, "allSettled")
}

// upstreamCall is a line of a QuickJS test program that runs one of its
// tests: the programs end with one such line per test.
var upstreamCall = regexp.MustCompile(`(?m)^(test_[a-z0-9_]+)\(\);\s*$`)

// sweepCases are what the sweep runs: QuickJS's own test programs
// (testdata/upstream, run as TestUpstreamTests runs them), each split into
// one program per test it runs, so that a run reaches its test's
// allocations without first running every test before it; the
// conformance kit's scripts; and the committed corpus of FuzzBuiltinSizes.
func sweepCases(t *testing.T) []sweepCase {
	t.Helper()
	var cases []sweepCase
	for _, u := range upstreamTests {
		src := readUpstream(t, u.file)
		calls := upstreamCall.FindAllStringSubmatch(src, -1)
		if len(calls) == 0 {
			t.Fatalf("%s runs no test_...(); line", u.file)
		}
		body := upstreamCall.ReplaceAllString(src, "")
		for _, c := range calls {
			script := withPrelude(body+"\n"+c[1]+"();\n", u.stdOS) + epilogue(u.file, u.stdOS)
			cases = append(cases, sweepCase{
				name:    strings.TrimSuffix(u.file, ".js") + "/" + c[1],
				req:     spi.Request{Script: script, InputJSON: "null", Limits: upstreamLimits},
				catches: true, // the programs' own assertions catch, and rethrow
			})
		}
	}
	fx := conformance.JavaScriptFixtures()
	probeInput := `{"a":[1],"s":"x"}`
	for _, c := range []struct {
		name, script, input string
		memory              int64
	}{
		{"echo", fx.Echo, string(fx.RichInput), 64 << 20},
		{"throw", fx.Throw, "null", 64 << 20},
		{"syntax error", fx.SyntaxError, "null", 64 << 20},
		{"runaway loop", fx.RunawayLoop, "null", 64 << 20},
		{"native overrun", fx.NativeOverrun, "null", 64 << 20},
		{"allocation bomb", fx.AllocationBomb, "null", 32 << 20},
		{"rich value", fx.RichValue, string(fx.RichInput), 64 << 20},
		{"network probe", fx.NetworkProbe, probeInput, 64 << 20},
		{"escape probe", fx.EscapeProbe, probeInput, 64 << 20},
		{"import probe", fx.ImportProbe, probeInput, 64 << 20},
		{"stateful probe", fx.StatefulProbe, `{"run":1}`, 64 << 20},
		{"oversized throw", fx.OversizedThrow, "null", 128 << 20},
	} {
		cases = append(cases, sweepCase{
			name:    "conformance/" + c.name,
			req:     spi.Request{Script: c.script, InputJSON: c.input, Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: c.memory}},
			catches: catchesErrors(c.script),
		})
	}
	corpus, memory, err := quickjs.SizesCorpusForTests()
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(corpus))
	for n := range corpus {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cases = append(cases, sweepCase{
			name: "sizes/" + n,
			req:  spi.Request{Script: corpus[n], InputJSON: "null", Limits: spi.Limits{WallClock: 2 * time.Second, MemoryBytes: memory}},
			// every statement of a sizes script is in a try block
			catches: true,
		})
	}
	return cases
}

// sweepCPUBudget bounds the run that refuses nothing, in interrupt polls:
// about a second of the runaway loop.
const sweepCPUBudget = 20000

// refusalProblem says what is wrong with how a run whose nth allocation
// was refused ended, given how the run that refused nothing ended (base),
// or "" when it ended as it must: with the typed answer. That is the base
// run's own answer when nothing was refused (n past its allocations) or
// when the refusal changed nothing the script could see; else the memory
// limit (limit memory, or inputTooLarge when the refusal came while the
// input was read); and, for a script that catches exceptions, any value of
// its own (it may have caught the out-of-memory error). Never a trap, a
// damaged red zone, a write into a freed block, a double free, an
// infrastructure outcome, or another limit.
func refusalProblem(base, r quickjs.RefusedRun, c sweepCase) string {
	if r.Trap != nil {
		var hf *quickjs.HeapFault
		var exit *sys.ExitError
		switch {
		case errors.As(r.Trap, &hf) && strings.Contains(hf.Text, "written after it was freed"):
			return "a write into a freed block: " + hf.Text
		case errors.As(r.Trap, &hf) && strings.Contains(hf.Text, "used after it was freed"):
			return "a double free (or a realloc of a freed block): " + hf.Text
		case errors.As(r.Trap, &hf):
			return "a damaged zone: " + hf.Text
		case errors.As(r.Trap, &exit):
			return "the run did not end by its wall clock"
		}
		trap, _, _ := strings.Cut(r.Trap.Error(), "\n")
		return "a trap: " + trap
	}
	o := r.Outcome
	same := describe(o) == describe(base.Outcome)
	if r.Refused == 0 {
		if !same {
			return fmt.Sprintf("nothing was refused, and the answer is %s, not the run's own %s", describe(o), describe(base.Outcome))
		}
		return ""
	}
	switch {
	case same:
		return ""
	case o.Kind == spi.KindLimit && o.Limit == spi.LimitMemory:
		return ""
	case o.Kind == spi.KindInputTooLarge:
		return ""
	case o.OK && c.catches:
		return ""
	}
	return fmt.Sprintf("the answer is %s: neither the run's own %s nor the memory limit", describe(o), describe(base.Outcome))
}

// sweepPlan is which allocations the sweep refuses: every one (SANDBOX_OOM_SWEEP=all,
// the long run) or, by default, a sample of at most perCase per case,
// spread evenly over its allocations and offset by the case's number so
// that neighbouring cases differ.
func sweepPlan(t *testing.T) (all bool, perCase uint32) {
	switch v := os.Getenv("SANDBOX_OOM_SWEEP"); v {
	case "":
		return false, 12
	case "all":
		return true, 0
	default:
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			t.Fatalf("SANDBOX_OOM_SWEEP=%s: want all, or a number of refusals per case", v)
		}
		return false, uint32(n)
	}
}

// sweepPoints are the allocations to refuse of a run that makes total.
func sweepPoints(all bool, perCase, total uint32, offset int) []uint32 {
	var ns []uint32
	if all || total <= perCase {
		for n := uint32(1); n <= total; n++ {
			ns = append(ns, n)
		}
	} else {
		step := total / perCase
		for i := uint32(0); i < perCase; i++ {
			ns = append(ns, 1+i*step+uint32(offset)%step)
		}
	}
	return append(ns, total+1) // past the last: nothing is refused
}

// Every allocation of the engine's own tests, of the conformance kit's
// scripts and of the size corpus, refused in turn (once alone, and once
// with every allocation after it), ends the run with the typed answer
// (refusalProblem): QuickJS's out-of-memory paths, each reached on
// purpose. By default a sample of each case's allocations; the long run
// refuses every one (README.md).
func TestOutOfMemorySweep(t *testing.T) {
	if testing.Short() {
		t.Skip("the sweep runs each case many times")
	}
	all, perCase := sweepPlan(t)
	e := newEngine(t, quickjs.WithPoolSize(0), quickjs.WithMaxMemoryBytes(128<<20),
		quickjs.WithHardKill(quickjs.HardKillForTests, time.Second), quickjs.WithOnStuck(func(quickjs.StuckRun) {}))
	ctx := context.Background()
	start := time.Now()
	var runs, findings int
	for i, c := range sweepCases(t) {
		t.Run(c.name, func(t *testing.T) {
			baseStart := time.Now()
			base, err := e.RunRefusingForTests(ctx, c.req, 0, false, sweepCPUBudget)
			if err != nil {
				t.Fatal(err)
			}
			// a refused run may do more work than the base run (an error
			// and its backtrace, a script's own catch), and the machine may
			// be busy: only a run that goes on far longer has hung
			req := c.req
			req.Limits.WallClock = max(30*time.Second, 20*time.Since(baseStart))
			var exit *sys.ExitError
			if errors.As(base.Trap, &exit) || base.Outcome.Kind == spi.KindLimit && base.Outcome.Limit == spi.LimitWallClock {
				// a native loop over a huge length (the fuzz corpus has
				// some): a run that does not end in time has no answer to
				// hold the refused runs to
				t.Skipf("the run that refuses nothing does not end within %v", c.req.Limits.WallClock)
			}
			if p := refusalProblem(base, base, c); base.Trap != nil || p != "" {
				t.Fatalf("the run that refuses nothing: %s", p)
			}
			budget := max(4*base.Polls+100, 1000)
			if base.Outcome.Kind == spi.KindLimit && base.Outcome.Limit == spi.LimitCPU {
				budget = sweepCPUBudget
			}
			caseStart := time.Now()
			points := sweepPoints(all, perCase, base.Allocations, i)
			for _, fromOn := range []bool{false, true} {
				for _, n := range points {
					r, err := e.RunRefusingForTests(ctx, req, n, fromOn, budget)
					if err != nil {
						t.Fatal(err)
					}
					runs++
					if p := refusalProblem(base, r, c); p != "" {
						findings++
						mode := "alone"
						if fromOn {
							mode = "and every one after it"
						}
						t.Errorf("allocation %d of %d refused (%s): %s", n, base.Allocations, mode, p)
					}
				}
			}
			t.Logf("%d allocations; %d refused, twice each, in %v", base.Allocations, len(points)-1, time.Since(caseStart).Round(time.Millisecond))
		})
	}
	t.Logf("%d runs, %d findings, in %v", runs, findings, time.Since(start).Round(time.Second))
}
