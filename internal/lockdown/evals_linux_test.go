//go:build linux

package lockdown_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// The service's defaults, but for a CPU budget that a runaway spends in
// about a second.
const (
	testMaxMemory = quickjs.DefaultMaxMemoryBytes
	testCPUBudget = 100_000
)

// reservation is the address space one guest's linear memory reserves.
var reservation = quickjs.LinearMemoryBytes(testMaxMemory)

// nativeRunaway spends seconds inside one native builtin, out of reach of
// the interrupt handler: only the kill timer stops it.
const nativeRunaway = "new Array(3e6).fill(0.25).join().length"

type evalCase struct {
	name   string
	script string
	input  string
	limits spi.Limits
	logs   bool
	check  func(o spi.Outcome, logs string) bool
}

func limitHit(kind spi.LimitKind) func(spi.Outcome, string) bool {
	return func(o spi.Outcome, _ string) bool { return o.Kind == spi.KindLimit && o.Limit == kind }
}

func value(want string) func(spi.Outcome, string) bool {
	return func(o spi.Outcome, _ string) bool { return o.OK && string(o.Value) == want }
}

var (
	big  = spi.Limits{WallClock: 2 * time.Minute, MemoryBytes: testMaxMemory}
	fast = spi.Limits{WallClock: 300 * time.Millisecond, MemoryBytes: 16 << 20}
)

// evalCases are the kinds of run a worker serves: each kind of result and
// each limit, with guests allocating to the largest memory limit.
var evalCases = []evalCase{
	{name: "sum", script: "input.reduce((a, b) => a + b, 0)", input: "[1,2,3]", limits: big, check: value("6")},
	{name: "random", script: "[Math.random(), Math.random()].every(x => x >= 0 && x < 1)", input: "null", limits: big, check: value("true")},
	{name: "console", script: `console.log("hello", 1); "done"`, input: "null", limits: big, logs: true,
		check: func(o spi.Outcome, logs string) bool {
			return o.OK && string(o.Value) == `"done"` && strings.Contains(logs, "hello 1")
		}},
	{name: "threw", script: `throw new TypeError("boom")`, input: "null", limits: big,
		check: func(o spi.Outcome, _ string) bool {
			return o.Kind == spi.KindThrew && o.Name != nil && *o.Name == "TypeError"
		}},
	{name: "array bomb", script: "const a = []; while (true) a.push(new Array(1000).fill(a.length))", input: "null", limits: big,
		check: limitHit(spi.LimitMemory)},
	{name: "buffer bomb", script: "const a = []; while (true) a.push(new Uint8Array(1 << 20).fill(1))", input: "null", limits: big,
		check: limitHit(spi.LimitMemory)},
	{name: "string bomb", script: `const a = []; while (true) a.push("z".repeat(1 << 20) + a.length)`, input: "null", limits: big,
		check: limitHit(spi.LimitMemory)},
	{name: "cpu runaway", script: "let i = 0; while (true) i++", input: "null", limits: big, check: limitHit(spi.LimitCPU)},
	// most of its time in a native builtin between polls, so that the CPU
	// budget, counted in polls, cannot run out first on any machine
	{name: "wall-clock runaway", script: `while (true) "w".repeat(1 << 16)`, input: "null", limits: fast, check: limitHit(spi.LimitWallClock)},
	{name: "large result", script: `"x".repeat(16 << 20)`, input: "null", limits: big,
		check: func(o spi.Outcome, _ string) bool { return o.OK && len(o.Value) == 16<<20+2 }},
	{name: "huge result", script: `"x".repeat(60 << 20)`, input: "null", limits: big,
		check: func(o spi.Outcome, _ string) bool { return o.OK && len(o.Value) == 60<<20+2 }},
	{name: "large array", script: "Array.from({length: 1e6}, (_, i) => i)", input: "null", limits: big,
		check: func(o spi.Outcome, _ string) bool { return o.OK && strings.HasSuffix(string(o.Value), ",999999]") }},
	{name: "large input", script: "input.length", input: `"` + strings.Repeat("y", 8<<20) + `"`, limits: big, check: value("8388608")},
}

func runEvals(e *quickjs.Engine) []evalResult {
	var res []evalResult
	for _, c := range evalCases {
		// on stderr, so that a child that dies shows where
		fmt.Fprintf(os.Stderr, "%s evaluating %q\n", time.Now().Format("15:04:05.000"), c.name)
		r, err := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: c.script, InputJSON: c.input, Limits: c.limits}, CaptureLogs: c.logs})
		got := fmt.Sprintf("ok:%v kind:%s limit:%s value:%.80s message:%.120s", r.Outcome.OK, r.Outcome.Kind, r.Outcome.Limit, r.Outcome.Value, r.Outcome.Message)
		if err != nil {
			got = "error: " + err.Error()
		}
		res = append(res, evalResult{Name: c.name, OK: err == nil && c.check(r.Outcome, r.Logs), Got: got})
	}
	return res
}
