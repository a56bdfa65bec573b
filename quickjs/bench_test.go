package quickjs_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// The workloads are shared with bench/ (native QuickJS and quickjs-emscripten
// on Node run the same files), so the figures compare like with like.
func workload(b *testing.B, name string) string {
	b.Helper()
	s, err := os.ReadFile("../bench/workloads/" + name)
	if err != nil {
		b.Fatal(err)
	}
	return string(s)
}

func benchEval(b *testing.B, e *quickjs.Engine, script, input string, l spi.Limits, want spi.OutcomeKind) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := e.Evaluate(ctx, spi.Request{Script: script, InputJSON: input, Limits: l})
		if err != nil {
			b.Fatal(err)
		}
		if (want == "" && !out.OK) || (want != "" && out.Kind != want) {
			b.Fatalf("unexpected outcome: %s", describe(out))
		}
	}
}

var benchLimits = spi.Limits{WallClock: 30 * time.Second, MemoryBytes: 64 << 20}

// BenchmarkEcho is the per-evaluation overhead: a fresh instance, a small
// input in, the value out.
func BenchmarkEcho(b *testing.B) {
	for _, pool := range []int{quickjs.DefaultPoolSize, 0} {
		b.Run(fmt.Sprintf("pool=%d", pool), func(b *testing.B) {
			e := newEngine(b, quickjs.WithPoolSize(pool))
			benchEval(b, e, workload(b, "echo.js"), `{"hello":"world","n":[1,2,3]}`, benchLimits, "")
		})
	}
}

// BenchmarkEchoLatency is the request-path cost of an evaluation when the pool
// has had time to refill between requests (the Cloud Run shape: one request
// at a time, with gaps): BenchmarkEcho/pool=0 is the CPU cost of a run
// including its instance, which the pool moves off the request path.
func BenchmarkEchoLatency(b *testing.B) {
	e := newEngine(b)
	ctx := context.Background()
	script := workload(b, "echo.js")
	l := benchLimits
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for e.Ready() < e.PoolSize() {
			time.Sleep(50 * time.Microsecond)
		}
		b.StartTimer()
		out, err := e.Evaluate(ctx, spi.Request{Script: script, InputJSON: `{"hello":"world","n":[1,2,3]}`, Limits: l})
		if err != nil || !out.OK {
			b.Fatal(describe(out), err)
		}
	}
}

// BenchmarkEchoDocument is the result path for a large ordinary value: the
// engine's text, its checks (depth, and whether it is already in the form
// JSON.stringify writes) and the outcome.
func BenchmarkEchoDocument(b *testing.B) {
	e := newEngine(b)
	script := workload(b, "echo.js")
	for _, size := range []int{16 << 10, 256 << 10} {
		doc := mcpdoc.Document(size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			benchEval(b, e, script, doc, benchLimits, "")
		})
	}
}

// BenchmarkDoubles is a result of 10,000 doubles of 16 and 17 digits, the
// numbers whose form the engine's check parses and formats again.
func BenchmarkDoubles(b *testing.B) {
	benchEval(b, newEngine(b), `Array.from({length: 10000}, (_, i) => i / 7)`, "null", benchLimits, "")
}

func BenchmarkReshape(b *testing.B) {
	e := newEngine(b)
	script := workload(b, "reshape.js")
	for _, size := range []int{1 << 10, 16 << 10, 256 << 10} {
		doc := mcpdoc.Document(size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			benchEval(b, e, script, doc, benchLimits, "")
		})
	}
}

func BenchmarkFib25(b *testing.B) {
	benchEval(b, newEngine(b), workload(b, "fib.js"), "25", benchLimits, "")
}

// BenchmarkFib25ContextDone is fib(25) under wazero's WithCloseOnContextDone,
// the in-process hard kill that the watchdog avoids paying for.
func BenchmarkFib25ContextDone(b *testing.B) {
	e := newEngine(b, quickjs.WithHardKill(quickjs.HardKillForTests, quickjs.DefaultHardKillGrace))
	benchEval(b, e, workload(b, "fib.js"), "25", benchLimits, "")
}

func BenchmarkReshape256KiBContextDone(b *testing.B) {
	e := newEngine(b, quickjs.WithHardKill(quickjs.HardKillForTests, quickjs.DefaultHardKillGrace))
	benchEval(b, e, workload(b, "reshape.js"), mcpdoc.Document(256<<10), benchLimits, "")
}

// BenchmarkMemoryKill16MiB is the time to reach limitExceeded memory at a
// 16 MiB limit.
func BenchmarkMemoryKill16MiB(b *testing.B) {
	benchEval(b, newEngine(b), workload(b, "alloc-bomb.js"), "null",
		spi.Limits{WallClock: 30 * time.Second, MemoryBytes: 16 << 20}, spi.KindLimit)
}

func BenchmarkStrings(b *testing.B) {
	benchEval(b, newEngine(b), workload(b, "strings.js"), "null", benchLimits, "")
}

func BenchmarkRegexp(b *testing.B) {
	benchEval(b, newEngine(b), workload(b, "regexp.js"), "null", benchLimits, "")
}
