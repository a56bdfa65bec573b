// Command load measures the service over HTTP on loopback: it starts the
// service's binary (`serve`) against a temporary script store, drives it with
// closed-loop clients, and writes one JSON summary (bench/cmd/report renders
// it). Every request loop is bounded in count and in time, and only
// 127.0.0.1 is ever addressed.
//
//	go build -o bench/out/bin/ . ./bench/cmd/load
//	bench/out/bin/load -bin bench/out/bin/sandbox-cloudrun -out bench/out/service
//
// With -baseline OLD it measures two binaries side by side in the one run
// (bench/compare.sh builds OLD from a git revision): every http cell runs
// for both, one right after the other, in an order that alternates from
// cell to cell and round to round; the cold starts alternate between them
// too; the memory phase runs for each in turn. service.json then holds the
// -bin binary's figures at the top level, labelled -label (default
// "after"), and the baseline's under "baseline", labelled -baseline-label
// (default "before"); each records its binary's `version` output.
//
// Memory is a server's whole process tree: the server and its descendants
// (the sandbox worker processes, found through
// /proc/PID/task/TID/children), each process's VmRSS and VmHWM
// (/proc/PID/status) and PSS (/proc/PID/smaps_rollup), and their totals.
// RSS counts pages shared by several processes (the binary's text) once per
// process; PSS divides them among the processes.
//
// Phases (-phases, default all three):
//
//	http    Two servers per binary, started once each and driven in
//	        interleaved rounds: "one at a time" (MAX_CONCURRENT_EVALUATIONS=1,
//	        PROCESS_KILL and POOL_SIZE at their defaults, one client: the
//	        Cloud Run shape) and "two at a time" (MAX_CONCURRENT_EVALUATIONS=2,
//	        PROCESS_KILL=false, two clients); a server none of the -match
//	        cells needs is not started. Workloads: POST /v1/evaluations of
//	        echo.js on a small input and of reshape.js on the 16 KiB MCP-like
//	        document, back to back; echo paced (a pause after each response,
//	        so the pool refills between requests); and GET /v1/capabilities,
//	        the floor of an HTTP exchange through the same middleware. Client
//	        latencies give throughput and p50/p99/p99.9; the service's own
//	        log line per evaluation (totalMs, fetchMs, evaluateMs) splits
//	        each request into HTTP and JSON, store fetch and evaluation.
//	cold    Process start (fork/exec) to the first successful evaluation,
//	        with and without the compilation cache baked by
//	        `sandbox-cloudrun compile-cache DIR` (one cache per binary),
//	        alternating, -cold runs of each; the memory of the process tree
//	        once the first evaluation is done and the pool has refilled.
//	memory  A fresh server: the tree's memory after start-up, then idle
//	        (after -idle-evals evaluations, settled), then -mem-evals
//	        evaluations (alternately echo and the 16 KiB reshape) with the
//	        tree's memory sampled every tenth of them.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/bench/benchhost"
	"github.com/loom-plugins/sandbox-cloudrun/bench/loadresult"
)

// The summary's types (bench/loadresult), by their short names.
type (
	Summary    = loadresult.Summary
	Cell       = loadresult.Cell
	ServerInfo = loadresult.ServerInfo
	ColdRun    = loadresult.ColdRun
	MemoryRun  = loadresult.MemoryRun
	MemPoint   = loadresult.MemPoint
	ProcMem    = loadresult.ProcMem
	TreeMem    = loadresult.TreeMem
)

// cellRun is a Cell with what its figures are computed from.
type cellRun struct {
	*Cell
	latencies []float64
	lines     []logLine
}

type logLine struct {
	Message    string  `json:"message"`
	Route      string  `json:"route"`
	Status     int     `json:"status"`
	TotalMs    float64 `json:"totalMs"`
	FetchMs    float64 `json:"fetchMs"`
	EvaluateMs float64 `json:"evaluateMs"`
	Outcome    string  `json:"outcome"`
	Took       string  `json:"took"`
}

var (
	binPath       = flag.String("bin", "bench/out/bin/sandbox-cloudrun", "the service binary (go build -o DIR .)")
	baselinePath  = flag.String("baseline", "", "a second service binary to measure side by side with -bin (optional)")
	label         = flag.String("label", "", "the -bin binary's label in the output (default \"after\" with -baseline)")
	baselineLabel = flag.String("baseline-label", "before", "the -baseline binary's label")
	outDir        = flag.String("out", "bench/out/service", "output directory (service.json, server logs)")
	workloads     = flag.String("workloads", "bench/workloads", "workload scripts")
	inputs        = flag.String("inputs", "bench/out/inputs", "input documents (bench/cmd/gendocs)")
	phases        = flag.String("phases", "http,cold,memory", "phases to run")
	rounds        = flag.Int("rounds", 3, "http phase: rounds (each runs every cell once, in a rotating order)")
	scale         = flag.Float64("scale", 1, "multiplies the requests per batch and the evaluations of the memory phase")
	coldRuns      = flag.Int("cold", 7, "cold phase: starts with and without the cache, each (per binary)")
	memEvals      = flag.Int("mem-evals", 10000, "memory phase: evaluations")
	idleEvals     = flag.Int("idle-evals", 20, "memory phase: evaluations before the idle figure")
	batchMax      = flag.Duration("batch-max", 20*time.Second, "http phase: the longest one batch may run")
	match         = flag.String("match", "", "http phase: run only the cells whose \"configuration workload\" name matches this regular expression (paced cells are named \"… paced\")")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("load: ")
	start := time.Now()
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		log.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "sandbox-load-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	b := &bench{tmp: tmp}
	paths := []string{*binPath}
	labels := []string{*label}
	if *baselinePath != "" {
		paths = append(paths, *baselinePath)
		labels = append(labels, *baselineLabel)
		if labels[0] == "" {
			labels[0] = "after"
		}
		if labels[0] == labels[1] {
			log.Fatalf("-label and -baseline-label are both %q", labels[0])
		}
	}
	for i, p := range paths {
		bin, err := filepath.Abs(p)
		if err != nil {
			log.Fatal(err)
		}
		t := &target{label: labels[i], bin: bin, index: i}
		out, err := exec.Command(bin, "version").Output()
		if err != nil {
			log.Fatalf("%s version: %v", bin, err)
		}
		version := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; ")), " ")
		t.sum = &Summary{Label: t.label, Version: version, Binary: bin,
			Started: start.UTC().Format(time.RFC3339), Rounds: *rounds}
		b.targets = append(b.targets, t)
		if t.label != "" {
			log.Printf("%s: %s (%s)", t.label, bin, t.sum.Version)
		}
	}
	load0 := benchhost.LoadAvg()
	if err := b.prepare(); err != nil {
		log.Fatal(err)
	}
	want := map[string]bool{}
	for _, p := range strings.Split(*phases, ",") {
		want[strings.TrimSpace(p)] = true
	}
	run := func(name string, f func() error) {
		if !want[name] {
			return
		}
		t := time.Now()
		if err := f(); err != nil {
			b.killAll()
			log.Fatalf("%s: %v", name, err)
		}
		log.Printf("%s phase done in %.0f s (load average %s)", name, time.Since(t).Seconds(), benchhost.LoadAvg())
	}
	run("http", b.httpPhase)
	run("cold", b.coldPhase)
	run("memory", b.memoryPhase)
	sum := b.targets[0].sum
	for _, t := range b.targets {
		t.sum.Seconds = time.Since(start).Seconds()
		t.sum.LoadAvg = []string{load0, benchhost.LoadAvg()}
	}
	if len(b.targets) > 1 {
		sum.Baseline = b.targets[1].sum
	}
	out, _ := json.MarshalIndent(sum, "", "  ")
	if err := os.WriteFile(filepath.Join(*outDir, "service.json"), append(out, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
}

type bench struct {
	tmp, store string
	targets    []*target
	refs       map[string]string // script file → sha256:… reference
	bodies     map[string][]byte // workload → request body
	inputBytes map[string]int
	live       []*benchhost.Server
}

// target is one binary under measurement.
type target struct {
	label, bin string
	index      int
	sum        *Summary
}

// name prefixes a server's name (its log file) with the target's label
// when there is one.
func (t *target) name(s string) string {
	if t.label == "" {
		return s
	}
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, t.label)
	return clean + "-" + s
}

// tag is the target's label for log lines.
func (t *target) tag() string {
	if t.label == "" {
		return ""
	}
	return "[" + t.label + "] "
}

// prepare stores the workload scripts in a temporary store (through the
// binary's own put verb) and builds the request bodies.
func (b *bench) prepare() error {
	b.store = filepath.Join(b.tmp, "store")
	if err := os.MkdirAll(b.store, 0o755); err != nil {
		return err
	}
	b.refs = map[string]string{}
	// every binary stores the scripts (the same bytes, so the same
	// references: a binary that disagrees is refused)
	for _, t := range b.targets {
		for _, name := range []string{"echo.js", "reshape.js"} {
			ref, err := benchhost.Put(t.bin, b.store, filepath.Join(*workloads, name))
			if err != nil {
				return fmt.Errorf("%s%w", t.tag(), err)
			}
			if prev, ok := b.refs[name]; ok && prev != ref {
				return fmt.Errorf("%sput %s: reference %s, another binary stored %s", t.tag(), name, ref, prev)
			}
			b.refs[name] = ref
		}
	}
	b.bodies = map[string][]byte{}
	b.inputBytes = map[string]int{}
	for wl, spec := range map[string][2]string{
		"echo":          {"echo.js", "echo.json"},
		"reshape-16KiB": {"reshape.js", "mcp-16KiB.json"},
	} {
		in, err := os.ReadFile(filepath.Join(*inputs, spec[1]))
		if err != nil {
			return err
		}
		b.inputBytes[wl] = len(in)
		body := fmt.Sprintf(`{"scriptRef":%q,"input":%s}`, b.refs[spec[0]], bytes.TrimSpace(in))
		b.bodies[wl] = []byte(body)
	}
	return nil
}

// start starts t's `serve` against the store with the given extra
// environment, its log named for the server.
func (b *bench) start(t *target, name string, env ...string) (*benchhost.Server, error) {
	logPath := filepath.Join(*outDir, "server-"+t.name(name)+".log")
	s, err := benchhost.StartServer(t.bin, logPath, append([]string{"STORE_URL=" + b.store}, env...)...)
	if err != nil {
		return nil, err
	}
	b.live = append(b.live, s)
	return s, nil
}

// stop ends the server and forgets it.
func (b *bench) stop(s *benchhost.Server) {
	s.Stop()
	b.live = slices.DeleteFunc(b.live, func(x *benchhost.Server) bool { return x == s })
}

func (b *bench) killAll() {
	for _, s := range b.live {
		s.Kill()
	}
}
