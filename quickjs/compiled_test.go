package quickjs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

func runReport(t *testing.T, e *quickjs.Engine, req spi.RunRequest) spi.Report {
	t.Helper()
	rep, err := e.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run(%.60q): %v", req.Script, err)
	}
	return rep
}

func request(script, input string, l spi.Limits) spi.RunRequest {
	return spi.RunRequest{Request: spi.Request{Script: script, InputJSON: input, Limits: l}}
}

// helpers is a script of n small helper functions, then a result from its
// input: the shape of a model-written transformer.
func helpers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "function helper%d(o) { const v = o && o.n; return typeof v === 'number' ? v * %d + %d : null }\n", i, i%7+1, i)
	}
	b.WriteString("({ n: input.n, h: helper0(input) })")
	return b.String()
}

// A script compiles once: its first run compiles it and says so in its
// usage (a compile phase), the runs after it start from what that compile
// left (no compile phase), and every run answers as the first did, seeing
// nothing of the runs before it. The counts say the same.
func TestScriptCompilesOnce(t *testing.T) {
	e := newEngine(t)
	for _, script := range []string{
		`const seen = globalThis.x; globalThis.x = input; [seen === undefined, input]`,
		helpers(300) + `, [typeof globalThis.mark, globalThis.mark = input][0]`,
	} {
		before := e.CompiledScripts()
		var first spi.Outcome
		for i := range 6 {
			rep := runReport(t, e, request(script, fmt.Sprint(i), limits))
			if !rep.Outcome.OK {
				t.Fatalf("run %d: %s", i, describe(rep.Outcome))
			}
			if i == 0 {
				first = rep.Outcome
				if rep.Usage.Compile <= 0 {
					t.Errorf("the first run reports no compile: %+v", rep.Usage)
				}
			} else if rep.Usage.Compile != 0 {
				t.Errorf("run %d compiled again: %+v", i, rep.Usage)
			}
			if strings.Contains(string(rep.Outcome.Value), "false") || strings.Contains(string(rep.Outcome.Value), "string") {
				t.Fatalf("run %d saw an earlier run: %s (the first: %s)", i, rep.Outcome.Value, first.Value)
			}
		}
		after := e.CompiledScripts()
		if after.Misses-before.Misses != 1 || after.Hits-before.Hits != 5 {
			t.Errorf("six runs of one script: %+v after %+v, want one miss and five hits", after, before)
		}
	}
}

// A script whose compile fails answers the same SyntaxError on every run,
// its first and the ones that start from the failed compile's image, and
// an input that is not JSON, or too large, is answered before it, as the
// input is parsed before the script is compiled.
func TestFailedCompileAnswersTheSameEveryRun(t *testing.T) {
	e := newEngine(t)
	for _, tc := range []struct {
		script, message string
	}{
		{"1 +", "unexpected token in expression"},
		{"return input.a", "return not in a function: a script is global code"},
	} {
		for i := range 4 {
			out := eval(t, e, tc.script, `{"a":1}`, limits)
			if out.Kind != spi.KindThrew || out.Name == nil || *out.Name != "SyntaxError" || !strings.HasPrefix(out.Message, tc.message) {
				t.Fatalf("%s, run %d: %s", tc.script, i, describe(out))
			}
			bad := eval(t, e, tc.script, `{"a":`, limits)
			if bad.Kind != spi.KindInfrastructure || !strings.Contains(bad.Message, "input is not valid JSON") {
				t.Fatalf("%s on an invalid input, run %d: %s", tc.script, i, describe(bad))
			}
			big := eval(t, e, tc.script, `["`+strings.Repeat("x", 300<<10)+`"]`, spi.Limits{WallClock: limits.WallClock, MemoryBytes: quickjs.MinMemoryBytes})
			if big.Kind != spi.KindInputTooLarge {
				t.Fatalf("%s on an input too large, run %d: %s", tc.script, i, describe(big))
			}
		}
	}
}

// Each run gets Math.random's seed and the clock of its own, after the
// image is restored: a script's runs that start from its kept compile draw
// other numbers and read the time of their run, and a replayable run draws
// the numbers and reads the instant its seed and now give, the same on its
// first run and its later ones (the README's example, to the digit).
func TestRandomAndClockAreEachRunsOwn(t *testing.T) {
	e := newEngine(t)
	const script = `[Math.random(), Math.random(), Date.now()]`
	seen := map[string]int{}
	for i := range 8 {
		before := time.Now().UnixMilli()
		out := eval(t, e, script, "null", limits)
		var r1, r2 float64
		var now int64
		if _, err := fmt.Sscanf(string(out.Value), "[%g,%g,%d]", &r1, &r2, &now); err != nil || !out.OK {
			t.Fatalf("run %d: %s (%v)", i, describe(out), err)
		}
		if j, dup := seen[fmt.Sprint(r1, r2)]; dup {
			t.Fatalf("runs %d and %d drew the same numbers %s", j, i, out.Value)
		}
		seen[fmt.Sprint(r1, r2)] = i
		if now < before || now > time.Now().UnixMilli() {
			t.Fatalf("run %d read the clock at %d, not within its run (from %d)", i, now, before)
		}
	}
	replay := &spi.Replay{Seed: "flow-42/step-3", Now: time.Date(2026, 12, 2, 7, 16, 17, 0, time.UTC)}
	for i := range 3 {
		rep := runReport(t, e, spi.RunRequest{Request: spi.Request{Script: `[Math.random(), new Date().toISOString()]`, InputJSON: "null", Limits: limits}, Replay: replay})
		if got := string(rep.Outcome.Value); got != `[0.6223650622865728,"2026-12-02T07:16:17.000Z"]` {
			t.Fatalf("replayable run %d (compiled: %v): %s", i, rep.Usage.Compile > 0, describe(rep.Outcome))
		}
	}
}

// The compile counts towards the memory limit whatever limit it ran
// under: a script's outcome under a limit is the same whether its run
// compiles it or starts from a compile an earlier run made under another
// limit, and the same as with nothing kept at all. Limits stepped across
// the edge where the compile stops fitting show it, as does an input that
// grows until it does not fit.
func TestCompileCountsTowardsTheMemoryLimit(t *testing.T) {
	big := helpers(600)
	keeping := newEngine(t)
	none := newEngine(t, quickjs.WithCompiledScriptBytes(0))
	l := func(n int64) spi.Limits { return spi.Limits{WallClock: 10 * time.Second, MemoryBytes: n} }
	// compiled under the largest limit first, then run under smaller ones
	if out := eval(t, keeping, big, `{"n":1}`, l(64<<20)); !out.OK {
		t.Fatalf("under 64 MiB: %s", describe(out))
	}
	if out := eval(t, keeping, big, `{"n":1}`, l(quickjs.MinMemoryBytes)); out.Kind != spi.KindLimit || out.Limit != spi.LimitMemory {
		t.Fatalf("a compiled script bigger than the limit: %s", describe(out))
	}
	var kinds []string
	for n := int64(quickjs.MinMemoryBytes); n <= 4<<20; n += 128 << 10 {
		for _, input := range []string{`{"n":1}`, `{"n":1,"pad":"` + strings.Repeat("p", 200<<10) + `"}`} {
			got := eval(t, keeping, big, input, l(n))
			want := eval(t, none, big, input, l(n))
			if !sameOutcome(got, want) {
				t.Fatalf("under %d bytes: %s from the kept compile, %s compiling", n, describe(got), describe(want))
			}
			k := "ok"
			if !got.OK {
				k = string(got.Kind) + string(got.Limit)
			}
			kinds = append(kinds, k)
		}
	}
	joined := strings.Join(kinds, " ")
	if !strings.Contains(joined, "limitmemory") || !strings.Contains(joined, "inputTooLarge") || !strings.Contains(joined, "ok") {
		t.Fatalf("the limits did not cross the edges they were meant to: %s", joined)
	}
	if s := keeping.CompiledScripts(); s.Misses != 1 {
		t.Fatalf("the script compiled %d times", s.Misses)
	}
}
