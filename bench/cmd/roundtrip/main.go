// Command roundtrip measures the worker round trip without HTTP: the same
// evaluation through the engine in this process (quickjs.Engine) and
// through a pool of worker processes (worker.Pool, one run at a time, one
// spare, as the service runs them), in alternating batches, with the
// service's engine defaults. The binary is its own worker (it answers the
// worker verb), so it measures the worker code it was built from.
//
//	go build -o bench/out/bin/ ./bench/cmd/roundtrip
//	bench/out/bin/sandbox-cloudrun compile-cache /tmp/cache
//	bench/out/bin/roundtrip -cache /tmp/cache -rounds 4 -n 2000 [-reshape] [-gap 3ms] [-lockdown off]
//
// Each batch prints its p50, p90 and p99 in microseconds; pool − engine is
// what the round trip to the worker adds to an evaluation.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

type backend interface {
	Evaluate(context.Context, spi.Request) (spi.Outcome, error)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == worker.Verb {
		os.Exit(worker.Main())
	}
	n := flag.Int("n", 2000, "timed evaluations per batch (after 30 untimed)")
	rounds := flag.Int("rounds", 3, "rounds: each runs one batch per backend, in an order that alternates")
	gap := flag.Duration("gap", 0, "pause after each evaluation (paced)")
	cache := flag.String("cache", "", "compilation cache directory (sandbox-cloudrun compile-cache DIR)")
	reshape := flag.Bool("reshape", false, "the 16 KiB reshape instead of echo")
	workloads := flag.String("workloads", "bench/workloads", "workload scripts")
	only := flag.String("only", "", "run only this backend: engine or pool")
	lockdown := flag.String("lockdown", "required", "the workers' WORKER_LOCKDOWN")
	cpuprofile := flag.String("cpuprofile", "", "CPU profile of this process (the server's side) over the first pool batch")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("roundtrip: ")
	ctx := context.Background()

	// the service's defaults
	eo := service.Defaults().EngineOptions()
	eo.CompilationCacheDir = *cache
	qo := eo.QuickJSOptions(slog.New(slog.DiscardHandler))
	engine, err := quickjs.New(ctx, qo...)
	check(err)
	check(engine.Warm(ctx))
	pool, err := worker.New(worker.Options{Engine: eo, Concurrent: 1, Spares: 1, Lockdown: worker.Lockdown(*lockdown)})
	check(err)
	check(pool.Warm(ctx))
	time.Sleep(time.Second) // the spare starts

	req := spi.Request{Limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 64 << 20}}
	name := "echo"
	if *reshape {
		name = "reshape-16KiB"
		b, err := os.ReadFile(filepath.Join(*workloads, "reshape.js"))
		check(err)
		req.Script, req.InputJSON = string(b), mcpdoc.Document(16<<10)
	} else {
		b, err := os.ReadFile(filepath.Join(*workloads, "echo.js"))
		check(err)
		req.Script, req.InputJSON = string(b), `{"hello":"world","n":[1,2,3]}`
	}
	backends := []struct {
		name string
		b    backend
	}{{"engine", engine}, {"pool", pool}}
	var prof *os.File
	if *cpuprofile != "" {
		prof, err = os.Create(*cpuprofile)
		check(err)
	}
	for r := 0; r < *rounds; r++ {
		for k := range backends {
			bk := backends[(k+r)%len(backends)]
			if *only != "" && bk.name != *only {
				continue
			}
			if bk.name == "pool" && prof != nil {
				check(pprof.StartCPUProfile(prof))
			}
			lat := make([]float64, 0, *n)
			for i := 0; i < *n+30; i++ {
				t := time.Now()
				out, err := bk.b.Evaluate(ctx, req)
				d := time.Since(t)
				if err != nil || !out.OK {
					log.Fatalf("%s: %v %v", bk.name, out, err)
				}
				if i >= 30 {
					lat = append(lat, float64(d.Nanoseconds())/1e3)
				}
				if *gap > 0 {
					time.Sleep(*gap)
				}
			}
			if bk.name == "pool" && prof != nil {
				pprof.StopCPUProfile()
				check(prof.Close())
				prof = nil
			}
			slices.Sort(lat)
			q := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
			fmt.Printf("round %d %-6s %s gap %v: p50 %.0f µs, p90 %.0f µs, p99 %.0f µs\n", r+1, bk.name, name, *gap, q(0.5), q(0.9), q(0.99))
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	check(pool.Close(cctx))
	check(engine.Close(cctx))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
