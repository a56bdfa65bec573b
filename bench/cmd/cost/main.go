// Command cost measures what one evaluation costs the service, workload by
// workload, from the usage every answer reports, and turns it into Cloud
// Run's billable units and a price per million evaluations for each billing
// setting (docs/cost.md):
//
//	go build -o bench/out/bin/ . ./bench/cmd/cost
//	bench/out/bin/cost -bin bench/out/bin/sandbox-cloudrun -n 300
//
// It starts the binary's serve (one evaluation at a time, as the Terraform
// module deploys it) on a loopback port, in the bench's base environment
// and with its log in -out, as every benchmark starts the server it
// measures (bench/benchhost), sends each workload of
// bench/workloads by value through the Go client, and reads, per
// evaluation, the client's wall time and the answer's usage: the engine's
// CPU time, the run's phases and the guest's peak heap. Then it starts the
// binary COLD times more and measures the time to its first answer, the
// part of a cold start this machine can show. Prices are flags, so that a
// reader can redo the arithmetic at the day's prices.
//
// With -batch FILE it measures nothing: it prices the figures
// bench/cmd/batch wrote (OUT/batch.json), single requests against batches
// of one script over many inputs. A batch is one billed request, holding
// the instance for the batch's wall time, its fee and its rounding up to
// 100 ms shared by its evaluations:
//
//	bench/out/bin/cost -batch bench/out/batch/batch.json
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/bench/batchresult"
	"github.com/loom-plugins/sandbox-cloudrun/bench/benchhost"
	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// workload is one script and its input.
type workload struct {
	name, script, input string
	memory              int64
}

// prices are Cloud Run's, in USD, for one region tier.
type prices struct {
	// request-based billing (cpu_always_allocated = false): while requests
	// are processed
	cpu, mem, perMillionRequests float64
	// idle minimum instances under request-based billing
	idleCPU, idleMem float64
	// instance-based billing (cpu_always_allocated = true): the instance's
	// whole life, no request fee
	alwaysCPU, alwaysMem float64
}

// The size of an instance of the Terraform module's defaults (its cpu and
// memory variables), which TestDefaultsAreTheModules holds to the module.
const (
	moduleVCPU   = 1
	moduleMemGiB = 1
)

func main() {
	bin := flag.String("bin", "bench/out/bin/sandbox-cloudrun", "the service binary")
	dir := flag.String("workloads", "bench/workloads", "directory of the workload scripts")
	n := flag.Int("n", 300, "evaluations per workload (after 20 of warm-up)")
	cold := flag.Int("cold", 7, "cold starts to the first answer")
	vcpu := flag.Float64("vcpu", moduleVCPU, "vCPUs of an instance (the module's cpu)")
	memGiB := flag.Float64("memory-gib", moduleMemGiB, "memory of an instance in GiB (the module's memory)")
	var p prices
	flag.Float64Var(&p.cpu, "price-cpu", 0.000024, "USD per vCPU-second, request-based billing")
	flag.Float64Var(&p.mem, "price-mem", 0.0000025, "USD per GiB-second, request-based billing")
	flag.Float64Var(&p.perMillionRequests, "price-requests", 0.40, "USD per million requests, request-based billing")
	flag.Float64Var(&p.idleCPU, "price-idle-cpu", 0.0000025, "USD per vCPU-second of an idle minimum instance, request-based billing")
	flag.Float64Var(&p.idleMem, "price-idle-mem", 0.0000025, "USD per GiB-second of an idle minimum instance, request-based billing")
	flag.Float64Var(&p.alwaysCPU, "price-always-cpu", 0.000018, "USD per vCPU-second, instance-based billing")
	flag.Float64Var(&p.alwaysMem, "price-always-mem", 0.000002, "USD per GiB-second, instance-based billing")
	out := flag.String("out", "bench/out/cost", "directory of the servers' logs")
	batchFile := flag.String("batch", "", "price the figures bench/cmd/batch wrote (OUT/batch.json) instead of measuring: single requests against batches")
	flag.Parse()

	if *batchFile != "" {
		res, err := readBatch(*batchFile)
		if err != nil {
			log.Fatal(err)
		}
		if err := batchReport(os.Stdout, res, *vcpu, *memGiB, p); err != nil {
			log.Fatal(err)
		}
		return
	}

	docs := map[string]string{"16KiB": mcpdoc.Document(16 << 10), "256KiB": mcpdoc.Document(256 << 10)}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(*dir, name))
		if err != nil {
			log.Fatal(err)
		}
		return string(b)
	}
	workloads := []workload{
		{"echo", read("echo.js"), `{"hello":"world","n":[1,2,3]}`, 64 << 20},
		{"reshape-16KiB", read("reshape.js"), docs["16KiB"], 64 << 20},
		{"reshape-256KiB", read("reshape.js"), docs["256KiB"], 64 << 20},
		{"fib25", read("fib.js"), "25", 64 << 20},
		{"allocation bomb (16 MiB)", read("alloc-bomb.js"), "null", 16 << 20},
	}

	ctx := context.Background()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	srv, err := start(*bin, filepath.Join(*out, "server.log"))
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.WaitReady(http.DefaultClient); err != nil {
		srv.Stop()
		log.Fatal(err)
	}
	c, err := client.Dial(ctx, srv.Base)
	if err != nil {
		srv.Stop()
		log.Fatal(err)
	}
	var rows []row
	for _, w := range workloads {
		r, err := measure(ctx, c, w, *n)
		if err != nil {
			srv.Stop()
			log.Fatalf("%s: %v", w.name, err)
		}
		rows = append(rows, r)
		log.Printf("%s: wall p50 %.3f ms, cpu p50 %.3f ms, peak heap p50 %d bytes", w.name, r.wall.p50, r.cpu.p50, int64(r.peak.p50))
	}
	srv.Stop()

	var starts []float64
	for range *cold {
		d, err := coldStart(ctx, *bin, filepath.Join(*out, "cold.log"))
		if err != nil {
			log.Fatal(err)
		}
		starts = append(starts, float64(d.Microseconds())/1000)
	}
	report(os.Stdout, rows, summarise(starts), *n, *vcpu, *memGiB, p)
}

// row is what one workload's evaluations measured, in milliseconds and
// bytes.
type row struct {
	name            string
	outcome         string
	wall, cpu, run  dist
	setup, peak     dist
	peakMax, memory float64
}

type dist struct{ p50, p95 float64 }

func summarise(xs []float64) dist {
	slices.Sort(xs)
	at := func(q float64) float64 { return xs[min(len(xs)-1, int(math.Ceil(q*float64(len(xs))))-1)] }
	return dist{at(0.5), at(0.95)}
}

func measure(ctx context.Context, c *client.Client, w workload, n int) (row, error) {
	req := spi.RunRequest{Request: spi.Request{Script: w.script, InputJSON: w.input, Limits: spi.Limits{WallClock: 20 * time.Second, MemoryBytes: w.memory}}}
	var wall, cpu, run, setup, peak []float64
	r := row{name: w.name, memory: float64(w.memory)}
	for i := range n + 20 {
		start := time.Now()
		rep, err := c.Run(ctx, req)
		took := time.Since(start)
		if err != nil {
			return r, err
		}
		if o := rep.Outcome; o.Kind == spi.KindInfrastructure {
			return r, fmt.Errorf("infrastructure: %s", o.Message)
		}
		if i < 20 {
			continue // the pool warms, the connection is made
		}
		r.outcome = describe(rep.Outcome)
		u := rep.Usage
		wall = append(wall, ms(took))
		cpu = append(cpu, ms(u.CPU))
		run = append(run, ms(u.Run))
		setup = append(setup, ms(u.Setup))
		peak = append(peak, float64(u.PeakMemoryBytes))
		r.peakMax = max(r.peakMax, float64(u.PeakMemoryBytes))
	}
	r.wall, r.cpu, r.run, r.setup, r.peak = summarise(wall), summarise(cpu), summarise(run), summarise(setup), summarise(peak)
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func describe(o spi.Outcome) string {
	if o.OK {
		return "ok"
	}
	if o.Limit != "" {
		return string(o.Kind) + " " + string(o.Limit)
	}
	return string(o.Kind)
}

// report writes the Markdown tables docs/cost.md shows.
func report(w io.Writer, rows []row, cold dist, n int, vcpu, memGiB float64, p prices) {
	fmt.Fprintf(w, "Per evaluation, %d evaluations per workload, one at a time (median / p95):\n\n", n)
	fmt.Fprintln(w, "| workload | outcome | wall, client (ms) | engine CPU (ms) | run (ms) | set-up (ms) | peak guest heap (KiB) | of its memory limit |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | %.0f / %.0f | %.1f %% |\n", r.name, r.outcome,
			r.wall.p50, r.wall.p95, r.cpu.p50, r.cpu.p95, r.run.p50, r.run.p95, r.setup.p50, r.setup.p95, r.peak.p50/1024, r.peak.p95/1024, 100*r.peakMax/r.memory)
	}
	fmt.Fprintf(w, "\nCold start to the first answer (the binary started, the engine compiled from the baked cache, the first evaluation answered): median %.1f ms, p95 %.1f ms.\n\n", cold.p50, cold.p95)

	month := 30 * 24 * 3600.0
	fmt.Fprintf(w, "Price per million evaluations, an instance of %g vCPU and %g GiB, one evaluation at a time, before the free tier (USD):\n\n", vcpu, memGiB)
	fmt.Fprintln(w, "| workload | an evaluation per instance-second | request-based, sparse (each evaluation billed alone, rounded up to 100 ms) | request-based, busy (billed for the wall time) | instance-based, busy (cpu_always_allocated) |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|")
	for _, r := range rows {
		t := r.wall.p50 / 1000 // seconds an evaluation holds an instance
		b := perMillion(t, 1, vcpu, memGiB, p)
		fmt.Fprintf(w, "| %s | %.0f | %.2f | %.2f | %.2f |\n", r.name, 1/t, b.sparse, b.busy, b.always)
	}
	idleReq := month * (vcpu*p.idleCPU + memGiB*p.idleMem)
	idleAlways := month * (vcpu*p.alwaysCPU + memGiB*p.alwaysMem)
	fmt.Fprintf(w, "\nOne minimum instance kept for a 30-day month: %.2f USD idle under request-based billing, %.2f USD under instance-based billing (where it is the same instance that serves).\n", idleReq, idleAlways)
	fmt.Fprintf(w, "\nPrices used (USD, flags of this command): request-based %g per vCPU-s, %g per GiB-s, %g per million requests; idle minimum instance %g per vCPU-s, %g per GiB-s; instance-based %g per vCPU-s, %g per GiB-s.\n",
		p.cpu, p.mem, p.perMillionRequests, p.idleCPU, p.idleMem, p.alwaysCPU, p.alwaysMem)
}

// billing is a price per million evaluations (USD) under each setting.
type billing struct {
	// sparse: request-based, each request billed alone, its time rounded
	// up to 100 ms; busy: request-based, requests back to back, billed for
	// their wall time; always: instance-based (cpu_always_allocated), the
	// instance's seconds and no request fee.
	sparse, busy, always float64
}

// perMillion prices a million evaluations sent k to a request, each request
// holding an instance for seconds: a request is billed once, whatever
// number of evaluations it carries, for its whole duration.
func perMillion(seconds float64, k int, vcpu, memGiB float64, p prices) billing {
	requests := 1e6 / float64(k)
	rate := vcpu*p.cpu + memGiB*p.mem
	fee := p.perMillionRequests / 1e6
	return billing{
		sparse: requests * (billed(seconds)*rate + fee),
		busy:   requests * (seconds*rate + fee),
		always: requests * seconds * (vcpu*p.alwaysCPU + memGiB*p.alwaysMem),
	}
}

// billed is a request's time as request-based billing counts it alone: at
// least 100 ms, rounded up to the next 100 ms.
func billed(seconds float64) float64 {
	return math.Ceil(math.Max(seconds, 0.1)*10) / 10
}

// readBatch reads bench/cmd/batch's OUT/batch.json.
func readBatch(path string) (*batchresult.Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the batch figures: %w", err)
	}
	var res batchresult.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("the batch figures %s: %w", path, err)
	}
	if len(res.Rows) == 0 {
		return nil, fmt.Errorf("the batch figures %s: no rows", path)
	}
	return &res, nil
}

// batchReport writes the table of prices per million evaluations sent as
// single requests and as batches, from bench/cmd/batch's medians: a batch
// is one billed request, holding the instance for the batch's wall time.
func batchReport(w io.Writer, res *batchresult.Result, vcpu, memGiB float64, p prices) error {
	single := map[string]billing{}
	for _, m := range res.Rows {
		if m.RequestMs <= 0 || m.EvalsPerSec <= 0 {
			return fmt.Errorf("%s %s: no measured time", m.Workload, m.Name())
		}
		if m.Batch == 0 {
			single[m.Workload] = perMillion(m.RequestMs/1000, 1, vcpu, memGiB, p)
		}
	}
	fmt.Fprintf(w, "Price per million evaluations, an instance of %g vCPU and %g GiB, one evaluation at a time, before the free tier (USD), from bench/cmd/batch's medians over %d repetitions (load average %s at the start, %s at the end):\n\n",
		vcpu, memGiB, res.Reps, res.LoadAvg[0], res.LoadAvg[len(res.LoadAvg)-1])
	fmt.Fprintln(w, "| workload | sent as | request's wall time (ms) | billed alone (ms) | evaluations per instance-second | request-based, sparse (each request billed alone, rounded up to 100 ms) | × single, sparse | request-based, busy (billed for the wall time) | instance-based, busy (cpu_always_allocated) |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|")
	for _, m := range res.Rows {
		s, ok := single[m.Workload]
		if !ok {
			return fmt.Errorf("%s: no single requests to set the batches beside", m.Workload)
		}
		k := max(m.Batch, 1)
		t := m.RequestMs / 1000
		b := perMillion(t, k, vcpu, memGiB, p)
		fmt.Fprintf(w, "| %s | %s | %.3f | %.0f | %.0f | %.4f | %.4f | %.4f | %.4f |\n", m.Workload, m.Name(), m.RequestMs, 1000*billed(t),
			float64(k)/t, b.sparse, b.sparse/s.sparse, b.busy, b.always)
	}
	fmt.Fprintf(w, "\nPrices used (USD, flags of this command): request-based %g per vCPU-s, %g per GiB-s, %g per million requests; instance-based %g per vCPU-s, %g per GiB-s.\n",
		p.cpu, p.mem, p.perMillionRequests, p.alwaysCPU, p.alwaysMem)
	return nil
}

// start runs serve as the module deploys it, without a store, with the
// compilation cache baked beside the binary (as the image bakes it), its
// output to logPath.
func start(bin, logPath string) (*benchhost.Server, error) {
	cache := filepath.Join(filepath.Dir(bin), "wazero-cache")
	if _, err := os.Stat(cache); err != nil {
		if out, err := exec.Command(bin, "compile-cache", cache).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("compile-cache: %v: %s", err, out)
		}
	}
	return benchhost.StartServer(bin, logPath, "STORE_URL=none", "MAX_CONCURRENT_EVALUATIONS=1",
		"COMPILATION_CACHE_DIR="+cache, "LOG_LEVEL=error")
}

// coldStart is the time from starting the binary to the first evaluation's
// answer.
func coldStart(ctx context.Context, bin, logPath string) (time.Duration, error) {
	begin := time.Now()
	s, err := start(bin, logPath)
	if err != nil {
		return 0, err
	}
	defer s.Stop()
	for {
		c, err := client.Dial(ctx, s.Base)
		if err == nil {
			rep, err := c.Run(ctx, spi.RunRequest{Request: spi.Request{Script: "1", InputJSON: "null", Limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 16 << 20}}})
			c.Close(ctx)
			if err == nil && rep.Outcome.OK {
				return time.Since(begin), nil
			}
		}
		if time.Since(begin) > 30*time.Second {
			return 0, fmt.Errorf("no answer within 30 s: %v", cmp.Or(err, fmt.Errorf("not ok")))
		}
		select {
		case <-s.Exited():
			return 0, fmt.Errorf("the server exited; see %s", s.LogPath)
		case <-time.After(2 * time.Millisecond):
		}
	}
}
