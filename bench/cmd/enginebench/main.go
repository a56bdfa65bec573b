// Command enginebench runs one benchmark workload through this service's
// engine (package quickjs: QuickJS in WebAssembly on wazero), a fresh instance
// per evaluation, and prints one JSON line per timed run, the format
// bench/cmd/report reads.
//
//	go run ./bench/cmd/enginebench -workload fib25 -script bench/workloads/fib.js \
//	    -input bench/out/inputs/fib25.json -runs 20
//
// With the default pool (-pool 2) every timed run starts with the pool full
// (the wait is not timed, as in BenchmarkEchoLatency): the figure is the
// request-path latency of a server with gaps between requests. With -pool 0
// the instance (instantiation, QuickJS runtime and context) is built on the
// request path, inside the timed region. In both, the instance's teardown
// happens after the result is delivered and is not timed; the caller of
// Evaluate does not wait for it. -process-kill arms the per-run kernel kill
// timer, as the service does by default (bench/run.sh passes it).
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"runtime/pprof"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

func main() {
	var (
		engineName = flag.String("engine", "", "engine name in the results (default: engine or engine-pool0)")
		workload   = flag.String("workload", "", "workload name in the results")
		scriptPath = flag.String("script", "", "script file")
		inputPath  = flag.String("input", "", "input JSON file")
		mem        = flag.Int64("mem", 64<<20, "memory limit in bytes")
		warmup     = flag.Int("warmup", 3, "untimed runs first")
		runs       = flag.Int("runs", 10, "timed runs")
		round      = flag.Int("round", 0, "round number in the results")
		pool       = flag.Int("pool", quickjs.DefaultPoolSize, "pool size (0: instance built on the request path)")
		cacheDir   = flag.String("cache", "", "wazero compilation cache directory (speeds up start-up only)")
		cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the timed runs to this file")
		procKill   = flag.Bool("process-kill", false, "arm the per-run kernel kill timer (quickjs.WithProcessKill)")
	)
	flag.Parse()
	if *workload == "" || *scriptPath == "" || *inputPath == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *engineName == "" {
		*engineName = "engine"
		if *pool == 0 {
			*engineName = "engine-pool0"
		}
	}
	script, err := os.ReadFile(*scriptPath)
	if err != nil {
		log.Fatal(err)
	}
	input, err := os.ReadFile(*inputPath)
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	opts := []quickjs.Option{quickjs.WithPoolSize(*pool), quickjs.WithProcessKill(*procKill)}
	if *cacheDir != "" {
		opts = append(opts, quickjs.WithCompilationCache(*cacheDir))
	}
	e, err := quickjs.New(ctx, opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = e.Close(ctx) }()
	if err := e.Warm(ctx); err != nil {
		log.Fatal(err)
	}

	req := spi.Request{
		Script:    string(script),
		InputJSON: string(input),
		Limits:    spi.Limits{WallClock: 30 * time.Second, MemoryBytes: *mem},
	}
	out := os.Stdout
	for i := 0; i < *warmup+*runs; i++ {
		waitFull(e)
		if i == *warmup && *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err != nil {
				log.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				log.Fatal(err)
			}
			defer func() {
				pprof.StopCPUProfile()
				_ = f.Close()
			}()
		}
		start := time.Now()
		o, err := e.Evaluate(ctx, req)
		elapsed := time.Since(start)
		if err != nil {
			log.Fatal(err)
		}
		kind, text := normalise(o)
		if i < *warmup {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(text))
		fmt.Fprintf(out, `{"engine":%q,"workload":%q,"round":%d,"run":%d,"ms":%.6f,"outcome":%q,"bytes":%d,"digest":"%016x"}`+"\n",
			*engineName, *workload, *round, i-*warmup, float64(elapsed.Nanoseconds())/1e6, kind, len(text), h.Sum64())
	}
}

// waitFull waits, untimed, until the pool holds all its fresh instances, so
// that no refill competes with the timed run for the two cores.
func waitFull(e *quickjs.Engine) {
	for e.Ready() < e.PoolSize() {
		time.Sleep(50 * time.Microsecond)
	}
}

// normalise gives the outcome's kind and the text its digest is taken of, the
// same text the other runners hash: the value's JSON text, "limit:memory",
// or "threw:Name: message".
func normalise(o spi.Outcome) (kind, text string) {
	switch {
	case o.OK:
		return "ok", string(o.Value)
	case o.Kind == spi.KindLimit:
		k := "limit:" + string(o.Limit)
		return k, k
	case o.Kind == spi.KindThrew:
		name := ""
		if o.Name != nil {
			name = *o.Name
		}
		fmt.Fprintf(os.Stderr, "enginebench: the script threw %s: %s\n", name, o.Message)
		return "threw", "threw:" + name + ": " + o.Message
	default:
		fmt.Fprintf(os.Stderr, "enginebench: outcome %s: %s\n", o.Kind, o.Message)
		return "error", string(o.Kind) + ": " + o.Message
	}
}
