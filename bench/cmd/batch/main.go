// Command batch measures what POST /v1/evaluations:batch saves over single
// requests: it starts the service's binary (`serve`, the service's defaults:
// one evaluation at a time, as the Terraform module deploys it) against a
// temporary script store on a loopback port, and for each workload (echo on
// its small input, reshape over the 16 KiB MCP-like document) runs, in one
// run and interleaved, the same number of evaluations as single
// POST /v1/evaluations requests one after another and as batches of 10, 100
// and 1,000 inputs one after another. Each such phase is timed by the
// client's clock and by the CPU the server's process tree (the server and
// its worker processes) used over it, read from /proc; a repetition runs
// every phase once, in an order that rotates from repetition to
// repetition, so that a slow spell of a shared machine falls on each.
//
//	go build -o bench/out/bin/ . ./bench/cmd/batch
//	bench/out/bin/batch -bin bench/out/bin/sandbox-cloudrun -out bench/out/batch -reps 5
//
// Every answer is checked: a single request's is 200 and ok; a batch's is
// 200 application/x-ndjson, one ok line per input in the inputs' order,
// then a summary counting every input ok, no problem and none not run. A
// phase with any other answer fails the run, so a broken route cannot make
// a fast figure. It writes OUT/batch.json (bench/cmd/cost -batch prices
// it) and prints the Markdown table docs/benchmarks.md shows.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/bench/batchresult"
	"github.com/loom-plugins/sandbox-cloudrun/bench/benchhost"
	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
)

// The result's types (bench/batchresult), by their short names.
type (
	Result  = batchresult.Result
	Measure = batchresult.Measure
)

func main() {
	bin := flag.String("bin", "bench/out/bin/sandbox-cloudrun", "the service binary (go build -o DIR .)")
	out := flag.String("out", "bench/out/batch", "output directory (batch.json, the server's log)")
	dir := flag.String("workloads", "bench/workloads", "directory of the workload scripts")
	reps := flag.Int("reps", 5, "repetitions (each runs every phase once, in a rotating order)")
	echoEvals := flag.Int("echo-evals", 2000, "echo: evaluations per phase (rounded up to a multiple of the largest batch)")
	reshapeEvals := flag.Int("reshape-evals", 1000, "reshape-16KiB: evaluations per phase (rounded up likewise)")
	sizesFlag := flag.String("batches", "10,100,1000", "batch sizes, each measured beside single requests")
	concurrent := flag.Int("concurrent", 1, "the server's MAX_CONCURRENT_EVALUATIONS: a batch runs that many inputs at once, single requests one after another one at a time (1 is the module's, one per vCPU)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("batch: ")
	sizes, err := parseSizes(*sizesFlag)
	if err != nil {
		log.Fatal(err)
	}
	if *reps < 1 {
		log.Fatal("-reps must be at least 1")
	}
	if *concurrent < 1 {
		log.Fatal("-concurrent must be at least 1")
	}
	if err := run(*bin, *out, *dir, *reps, *concurrent, map[string]int{"echo": *echoEvals, "reshape-16KiB": *reshapeEvals}, sizes); err != nil {
		log.Fatal(err)
	}
}

// parseSizes reads -batches: sizes of at least 2, comma-separated.
func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("-batches: %q is not a batch size of at least 2", f)
		}
		if slices.Contains(sizes, n) {
			return nil, fmt.Errorf("-batches: %d twice", n)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// workload is a script stored by reference and its input.
type workload struct {
	name, script, input string
	evals               int
	ref                 string
	single              []byte
	batches             map[int][]byte
}

func run(bin, outDir, dir string, reps, concurrent int, evals map[string]int, sizes []int) error {
	start := time.Now()
	load0 := benchhost.LoadAvg()
	bin, err := filepath.Abs(bin)
	if err != nil {
		return fmt.Errorf("the binary's path: %w", err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("the output directory: %w", err)
	}
	version, err := exec.Command(bin, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", bin, err)
	}
	tmp, err := os.MkdirTemp("", "sandbox-batch-")
	if err != nil {
		return fmt.Errorf("a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	store := filepath.Join(tmp, "store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		return fmt.Errorf("the script store: %w", err)
	}
	largest := slices.Max(sizes)
	wls := []*workload{
		{name: "echo", script: "echo.js", input: `{"hello":"world","n":[1,2,3]}`, evals: evals["echo"]},
		{name: "reshape-16KiB", script: "reshape.js", input: mcpdoc.Document(16 << 10), evals: evals["reshape-16KiB"]},
	}
	for _, w := range wls {
		if w.ref, err = benchhost.Put(bin, store, filepath.Join(dir, w.script)); err != nil {
			return err
		}
		w.evals = roundUp(max(w.evals, 1), largest)
		w.single = []byte(fmt.Sprintf(`{"scriptRef":%q,"input":%s}`, w.ref, w.input))
		w.batches = map[int][]byte{}
		for _, n := range sizes {
			w.batches[n] = benchhost.BatchBody(w.ref, w.input, n)
		}
	}

	s, err := benchhost.StartServer(bin, filepath.Join(outDir, "server.log"),
		"STORE_URL="+store, "MAX_CONCURRENT_EVALUATIONS="+strconv.Itoa(concurrent))
	if err != nil {
		return err
	}
	defer s.Stop()
	c := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	if err := s.WaitReady(c); err != nil {
		return err
	}

	// the phases: per workload, single requests then each batch size
	type phase struct {
		w *workload
		m *Measure
	}
	var phases []phase
	res := &Result{Version: strings.Join(strings.Fields(string(version)), " "), Reps: reps, MaxConcurrent: concurrent}
	for _, w := range wls {
		for _, n := range append([]int{0}, sizes...) {
			m := &Measure{Workload: w.name, InputBytes: len(w.input), Batch: n, Evaluations: w.evals, Requests: w.evals}
			if n > 0 {
				m.Requests = w.evals / n
			}
			phases = append(phases, phase{w, m})
			res.Rows = append(res.Rows, m)
		}
		// warm-up: the connection, the script cache, the engine's pool
		for range 30 {
			if _, err := s.Single(c, w.single); err != nil {
				return fmt.Errorf("%s warm-up: %w", w.name, err)
			}
		}
		if _, err := s.Batch(c, w.batches[sizes[0]], sizes[0]); err != nil {
			return fmt.Errorf("%s warm-up: %w", w.name, err)
		}
	}
	pid := s.Cmd.Process.Pid
	for rep := 0; rep < reps; rep++ {
		for k := range phases {
			p := phases[(k+rep)%len(phases)]
			time.Sleep(100 * time.Millisecond) // the pool refills
			cpu0, err := benchhost.TreeCPU(pid)
			if err != nil {
				return err
			}
			t0 := time.Now()
			var lat []float64
			for range p.m.Requests {
				var d time.Duration
				if p.m.Batch == 0 {
					d, err = s.Single(c, p.w.single)
				} else {
					d, err = s.Batch(c, p.w.batches[p.m.Batch], p.m.Batch)
				}
				if err != nil {
					return fmt.Errorf("repetition %d, %s in %s: %w", rep+1, p.w.name, p.m.Name(), err)
				}
				lat = append(lat, ms(d))
			}
			wall := time.Since(t0)
			cpu1, err := benchhost.TreeCPU(pid)
			if err != nil {
				return err
			}
			eps := float64(p.m.Evaluations) / wall.Seconds()
			perEval := func(ticks int64) float64 {
				return float64(ticks) * 1000 / benchhost.ClockTick / float64(p.m.Evaluations)
			}
			cpuMs := perEval(cpu1.Server + cpu1.Workers - cpu0.Server - cpu0.Workers)
			serverMs := perEval(cpu1.Server - cpu0.Server)
			p.m.RepEvalsPerSec = append(p.m.RepEvalsPerSec, benchhost.Round3(eps))
			p.m.RepCPUMs = append(p.m.RepCPUMs, benchhost.Round3(cpuMs))
			p.m.RepServerCPUMs = append(p.m.RepServerCPUMs, benchhost.Round3(serverMs))
			p.m.RepRequestMs = append(p.m.RepRequestMs, benchhost.Round3(benchhost.Median(lat)))
			log.Printf("repetition %d %-13s %-17s %5d evaluations in %5d requests: %7.0f/s, CPU %.3f ms each (server %.3f), request p50 %.3f ms (load average %s)",
				rep+1, p.w.name, p.m.Name(), p.m.Evaluations, p.m.Requests, eps, cpuMs, serverMs, benchhost.Median(lat), benchhost.LoadAvg())
		}
	}
	for _, m := range res.Rows {
		m.EvalsPerSec, m.CPUMsPerEval, m.RequestMs = benchhost.Median(m.RepEvalsPerSec), benchhost.Median(m.RepCPUMs), benchhost.Median(m.RepRequestMs)
		m.ServerCPUMsPerEval = benchhost.Median(m.RepServerCPUMs)
	}
	res.LoadAvg = []string{load0, benchhost.LoadAvg()}
	res.Seconds = benchhost.Round3(time.Since(start).Seconds())
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("batch.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(outDir, "batch.json"), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("batch.json: %w", err)
	}
	table(os.Stdout, res)
	return nil
}

// table writes the Markdown table of the measures, each beside the single
// requests of its workload.
func table(w io.Writer, res *Result) {
	fmt.Fprintf(w, "%d repetitions; load average (1, 5, 15 min) %s at the start, %s at the end; %s\n\n", res.Reps, res.LoadAvg[0], res.LoadAvg[1], res.Version)
	fmt.Fprintln(w, "| workload | sent as | evaluations per repetition | requests | evaluations/s, median [per repetition] | × single | CPU per evaluation, server and workers (ms), median [per repetition] | × single | of which the server process (ms; the rest its workers) | request wall time, median (ms) |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	single := map[string]*Measure{}
	for _, m := range res.Rows {
		if m.Batch == 0 {
			single[m.Workload] = m
		}
	}
	for _, m := range res.Rows {
		s := single[m.Workload]
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.0f [%s] | %s | %.3f [%s] | %s | %.3f | %.3f |\n", m.Workload, m.Name(), m.Evaluations, m.Requests,
			m.EvalsPerSec, join(m.RepEvalsPerSec, "%.0f"), ratio(m.EvalsPerSec, s), m.CPUMsPerEval, join(m.RepCPUMs, "%.3f"),
			ratio2(m.CPUMsPerEval, s), m.ServerCPUMsPerEval, m.RequestMs)
	}
}

func ratio(x float64, s *Measure) string {
	if s == nil || s.EvalsPerSec == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", x/s.EvalsPerSec)
}

func ratio2(x float64, s *Measure) string {
	if s == nil || s.CPUMsPerEval == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", x/s.CPUMsPerEval)
}

func join(xs []float64, format string) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf(format, x))
	}
	return strings.Join(parts, ", ")
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
