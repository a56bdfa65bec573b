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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
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
	live       []*server
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
			cmd := exec.Command(t.bin, "put", filepath.Join(*workloads, name))
			cmd.Env = append(benchhost.BaseEnv(), "STORE_URL="+b.store)
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("%sput %s: %v: %s", t.tag(), name, err, out)
			}
			f := strings.Fields(string(out))
			if len(f) < 1 || !strings.HasPrefix(f[0], "sha256:") {
				return fmt.Errorf("%sput %s: unexpected output %q", t.tag(), name, out)
			}
			if prev, ok := b.refs[name]; ok && prev != f[0] {
				return fmt.Errorf("%sput %s: reference %s, another binary stored %s", t.tag(), name, f[0], prev)
			}
			b.refs[name] = f[0]
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

type server struct {
	name    string
	cmd     *exec.Cmd
	port    int
	logPath string
	logFile *os.File
	started time.Time
	exited  chan struct{}
}

func (s *server) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", s.port, path) }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start starts t's `serve` with the given extra environment.
func (b *bench) start(t *target, name string, env ...string) (*server, error) {
	name = t.name(name)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(*outDir, "server-"+name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(t.bin, "serve")
	cmd.Env = append(append(benchhost.BaseEnv(), "PORT="+strconv.Itoa(port), "STORE_URL="+b.store), env...)
	cmd.Stdout, cmd.Stderr = f, f
	s := &server{name: name, cmd: cmd, port: port, logPath: logPath, logFile: f, exited: make(chan struct{})}
	s.started = time.Now()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	b.live = append(b.live, s)
	return s, nil
}

// waitReady polls GET /readyz until it answers 200.
func (s *server) waitReady(c *http.Client, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("server %s exited; see %s", s.name, s.logPath)
		default:
		}
		resp, err := c.Get(s.url("/readyz"))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("server %s not ready within %v", s.name, limit)
}

// stop ends the server with SIGTERM (SIGKILL after 15 s).
func (b *bench) stop(s *server) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.logFile.Close()
	b.live = slices.DeleteFunc(b.live, func(x *server) bool { return x == s })
}

func (b *bench) killAll() {
	for _, s := range b.live {
		_ = s.cmd.Process.Kill()
	}
}

func newClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			DisableCompression:  true,
			IdleConnTimeout:     time.Minute,
		},
	}
}

// request is one exchange: a GET when body is nil, else a POST of body.
type request struct {
	path string
	body []byte
}

var errBusy = errors.New("429 busy")

// do sends one request and checks the answer: 200, and for an evaluation an
// ok outcome. It returns the latency.
func do(c *http.Client, url string, r request) (time.Duration, error) {
	var req *http.Request
	var err error
	if r.body == nil {
		req, err = http.NewRequest(http.MethodGet, url, nil)
	} else {
		req, err = http.NewRequest(http.MethodPost, url, bytes.NewReader(r.body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if err != nil {
		return 0, err
	}
	t := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(t)
	if err != nil {
		return 0, err
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return d, errBusy
	case resp.StatusCode != http.StatusOK:
		return d, fmt.Errorf("status %d: %.300s", resp.StatusCode, body)
	case r.body != nil && !bytes.HasPrefix(body, []byte(`{"ok":true`)):
		return d, fmt.Errorf("not ok: %.300s", body)
	}
	return d, nil
}

type batchResult struct {
	lat      []float64
	errors   int
	refused  int
	firstErr error
	seconds  float64
}

// batch runs n requests (or until max passes) from clients closed-loop
// clients; gap is a pause after each response.
func batch(c *http.Client, s *server, r request, clients, n int, gap, max time.Duration) batchResult {
	url := s.url(r.path)
	type res struct {
		lat     []float64
		errors  int
		refused int
		err     error
	}
	out := make(chan res, clients)
	next := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		next <- struct{}{}
	}
	close(next)
	deadline := time.Now().Add(max)
	t0 := time.Now()
	for k := 0; k < clients; k++ {
		go func() {
			var rr res
			for range next {
				if time.Now().After(deadline) {
					break
				}
				for attempt := 0; ; attempt++ {
					d, err := do(c, url, r)
					if errors.Is(err, errBusy) && attempt < 100 {
						rr.refused++
						time.Sleep(200 * time.Microsecond)
						continue
					}
					if err != nil {
						rr.errors++
						if rr.err == nil {
							rr.err = err
						}
					} else {
						rr.lat = append(rr.lat, float64(d.Nanoseconds())/1e6)
					}
					break
				}
				if gap > 0 {
					time.Sleep(gap)
				}
			}
			out <- rr
		}()
	}
	var br batchResult
	for k := 0; k < clients; k++ {
		rr := <-out
		br.lat = append(br.lat, rr.lat...)
		br.errors += rr.errors
		br.refused += rr.refused
		if br.firstErr == nil {
			br.firstErr = rr.err
		}
	}
	br.seconds = time.Since(t0).Seconds()
	return br
}

// readLog returns the evaluation lines logged from offset on, and the new
// offset.
func readLog(path string, offset int64) ([]logLine, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, offset, err
	}
	// only whole lines
	end := bytes.LastIndexByte(data, '\n') + 1
	var lines []logLine
	sc := bufio.NewScanner(bytes.NewReader(data[:end]))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			lines = append(lines, l)
		}
	}
	return lines, offset + int64(end), nil
}

func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func scaled(n int) int { return max(1, int(math.Round(float64(n)*(*scale)))) }

func (b *bench) httpPhase() error {
	type config struct {
		name          string
		maxConcurrent int
		processKill   bool
		clients       int
		env           []string
	}
	configs := []config{
		{"one at a time", 1, true, 1, []string{"MAX_CONCURRENT_EVALUATIONS=1"}},
		{"two at a time", 2, false, 2, []string{"MAX_CONCURRENT_EVALUATIONS=2", "PROCESS_KILL=false"}},
	}
	type cellSpec struct {
		cfg      config
		workload string
		req      request
		n        int
		gap      time.Duration
	}
	var specs []cellSpec
	for _, cf := range configs {
		if cf.clients == 1 {
			specs = append(specs, cellSpec{cf, "capabilities (HTTP floor)", request{path: "/v1/capabilities"}, scaled(2000), 0})
		}
		specs = append(specs,
			cellSpec{cf, "echo", request{"/v1/evaluations", b.bodies["echo"]}, scaled(3000), 0},
			cellSpec{cf, "reshape-16KiB", request{"/v1/evaluations", b.bodies["reshape-16KiB"]}, scaled(1500), 0},
		)
		if cf.clients == 1 {
			specs = append(specs,
				cellSpec{cf, "echo", request{"/v1/evaluations", b.bodies["echo"]}, scaled(600), 3 * time.Millisecond},
				cellSpec{cf, "capabilities (HTTP floor)", request{path: "/v1/capabilities"}, scaled(600), 3 * time.Millisecond})
		}
	}
	if *match != "" {
		re, err := regexp.Compile(*match)
		if err != nil {
			return err
		}
		specs = slices.DeleteFunc(specs, func(sp cellSpec) bool {
			name := sp.cfg.name + " " + sp.workload
			if sp.gap > 0 {
				name += " paced"
			}
			return !re.MatchString(name)
		})
	}
	if len(specs) == 0 {
		return fmt.Errorf("no cell matches -match %q", *match)
	}

	c := newClient(4)
	// one server per binary and configuration that some cell needs
	type key struct {
		target *target
		config string
	}
	servers := map[key]*server{}
	for i, cf := range configs {
		if !slices.ContainsFunc(specs, func(sp cellSpec) bool { return sp.cfg.name == cf.name }) {
			continue
		}
		for _, t := range b.targets {
			s, err := b.start(t, fmt.Sprintf("http%d", i+1), cf.env...)
			if err != nil {
				return err
			}
			if err := s.waitReady(c, time.Minute); err != nil {
				return err
			}
			servers[key{t, cf.name}] = s
		}
	}
	time.Sleep(500 * time.Millisecond)
	idle := map[key]*TreeMem{}
	for k, s := range servers {
		idle[k] = procTree(s.cmd.Process.Pid)
	}

	newCells := func() []*cellRun {
		cells := make([]*cellRun, len(specs))
		for i, sp := range specs {
			wl := strings.Fields(sp.workload)[0]
			cells[i] = &cellRun{Cell: &Cell{Config: sp.cfg.name, MaxConcurrent: sp.cfg.maxConcurrent, ProcessKill: sp.cfg.processKill,
				Clients: sp.cfg.clients, Workload: sp.workload, GapMs: float64(sp.gap.Microseconds()) / 1000, InputBytes: b.inputBytes[wl]}}
		}
		return cells
	}
	cells := map[*target][]*cellRun{}
	for _, t := range b.targets {
		cells[t] = newCells()
	}
	// The order of the cells rotates from round to round (by 3 cells, or
	// by 1 when 3 would bring every round back to the same order); each
	// cell runs for every binary, one right after the other, the binary
	// that goes first alternating from cell to cell and round to round.
	step := 3
	if len(specs)%3 == 0 {
		step = 1
	}
	nt := len(b.targets)
	for round := 0; round < *rounds; round++ {
		for k := range specs {
			i := (k + round*step) % len(specs)
			sp := specs[i]
			for j := 0; j < nt; j++ {
				t := b.targets[(j+round+k)%nt]
				cell := cells[t][i]
				s := servers[key{t, sp.cfg.name}]
				// warm-up: connections, the script cache, the pool
				if br := batch(c, s, sp.req, sp.cfg.clients, 30, sp.gap, 10*time.Second); br.firstErr != nil {
					return fmt.Errorf("%s%s %s warm-up: %v", t.tag(), sp.cfg.name, sp.workload, br.firstErr)
				}
				time.Sleep(30 * time.Millisecond)
				off := logSize(s.logPath)
				br := batch(c, s, sp.req, sp.cfg.clients, sp.n, sp.gap, *batchMax)
				time.Sleep(50 * time.Millisecond)
				lines, _, err := readLog(s.logPath, off)
				if err != nil {
					return err
				}
				if br.errors > 0 {
					log.Printf("%s%s %s: %d errors, first: %v", t.tag(), sp.cfg.name, sp.workload, br.errors, br.firstErr)
				}
				cell.latencies = append(cell.latencies, br.lat...)
				cell.Errors += br.errors
				cell.Refused += br.refused
				cell.Seconds += br.seconds
				rps := float64(len(br.lat)) / br.seconds
				cell.RoundRPS = append(cell.RoundRPS, round3(rps))
				cell.RoundP50 = append(cell.RoundP50, round3(quantile(br.lat, 0.5)))
				for _, l := range lines {
					if l.Message == "evaluation" {
						cell.lines = append(cell.lines, l)
					}
				}
				log.Printf("round %d %s%-13s %-26s gap %v: %d requests, %.0f/s, p50 %.3f ms", round+1, t.tag(), sp.cfg.name, sp.workload, sp.gap, len(br.lat), rps, quantile(br.lat, 0.5))
			}
		}
	}
	for k, s := range servers {
		rss, hwm, _ := procStatus(s.cmd.Process.Pid)
		end := procTree(s.cmd.Process.Pid)
		var idleRSS int64
		if tr := idle[k]; tr != nil && len(tr.Procs) > 0 {
			idleRSS = tr.Procs[0].RSSKiB
		}
		k.target.sum.Servers = append(k.target.sum.Servers, ServerInfo{Config: k.config, RSSIdle: idleRSS, RSSEnd: rss, HWM: hwm,
			TreeIdle: idle[k], TreeEnd: end})
		b.stop(s)
	}
	// raw latencies, one line per cell
	f, err := os.Create(filepath.Join(*outDir, "latencies.jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	for _, t := range b.targets {
		sort.Slice(t.sum.Servers, func(i, j int) bool { return t.sum.Servers[i].Config < t.sum.Servers[j].Config })
		t.sum.HTTP = nil
		for _, cell := range cells[t] {
			cell.finish()
			t.sum.HTTP = append(t.sum.HTTP, cell.Cell)
		}
		for _, cell := range cells[t] {
			rec := map[string]any{"config": cell.Config, "workload": cell.Workload, "gapMs": cell.GapMs, "ms": cell.latencies}
			if t.label != "" {
				rec["binary"] = t.label
			}
			line, _ := json.Marshal(rec)
			f.Write(append(line, '\n'))
		}
	}
	return nil
}

func (cell *cellRun) finish() {
	l := cell.latencies
	cell.Requests = len(l)
	if cell.Seconds > 0 {
		cell.RPS = round3(float64(len(l)) / cell.Seconds)
	}
	cell.P50, cell.P90 = round3(quantile(l, 0.5)), round3(quantile(l, 0.9))
	cell.P99, cell.P999 = round3(quantile(l, 0.99)), round3(quantile(l, 0.999))
	if len(l) > 0 {
		cell.Max = round3(slices.Max(l))
	}
	cell.Logged = len(cell.lines)
	var total, fetch, eval, handler []float64
	for _, x := range cell.lines {
		total = append(total, x.TotalMs)
		fetch = append(fetch, x.FetchMs)
		eval = append(eval, x.EvaluateMs)
		handler = append(handler, x.TotalMs-x.FetchMs-x.EvaluateMs)
	}
	cell.TotalP50, cell.TotalP99 = round3(quantile(total, 0.5)), round3(quantile(total, 0.99))
	cell.FetchP50 = round3(quantile(fetch, 0.5))
	cell.EvaluateP50, cell.EvaluateP90 = round3(quantile(eval, 0.5)), round3(quantile(eval, 0.9))
	cell.HandlerP50 = round3(quantile(handler, 0.5))
}

// quantile is the nearest-rank quantile (the median of an even count is the
// upper middle).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func (b *bench) coldPhase() error {
	for _, t := range b.targets {
		dir := b.cacheDir(t)
		start := time.Now()
		out, err := exec.Command(t.bin, "compile-cache", dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%scompile-cache: %v: %s", t.tag(), err, out)
		}
		t.sum.CompileCacheMs = round3(float64(time.Since(start).Microseconds()) / 1000)
	}
	c := newClient(1)
	nt := len(b.targets)
	for i := 0; i < 2**coldRuns; i++ {
		cache := i%2 == 0
		for j := 0; j < nt; j++ {
			t := b.targets[(j+i/2)%nt] // the binary that goes first alternates
			env := []string{}
			if cache {
				env = append(env, "COMPILATION_CACHE_DIR="+b.cacheDir(t))
			}
			run, err := b.coldStart(t, c, cache, env)
			if err != nil {
				return err
			}
			t.sum.Cold = append(t.sum.Cold, run)
			log.Printf("%scold start %d (cache %v): first evaluation after %.1f ms, listening after %.1f ms, idle RSS %d KiB (server), %d KiB RSS / %d KiB PSS (%d processes)",
				t.tag(), i/2+1, cache, run.FirstEvalMs, run.ListenMs, run.RSSIdleKiB, run.Tree.RSSKiB, run.Tree.PSSKiB, len(run.Tree.Procs))
			c.CloseIdleConnections()
		}
	}
	return nil
}

// coldStart starts a server and sends the echo evaluation until one succeeds.
func (b *bench) coldStart(t *target, c *http.Client, cache bool, env []string) (ColdRun, error) {
	run := ColdRun{Cache: cache}
	s, err := b.start(t, "cold", env...)
	if err != nil {
		return run, err
	}
	defer b.stop(s)
	r := request{"/v1/evaluations", b.bodies["echo"]}
	deadline := s.started.Add(30 * time.Second)
	// the port accepts connections (the listener is open)
	for {
		if time.Now().After(deadline) {
			return run, fmt.Errorf("not listening within 30 s; see %s", s.logPath)
		}
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), time.Second)
		if err == nil {
			run.ListenMs = round3(float64(time.Since(s.started).Microseconds()) / 1000)
			conn.Close()
			break
		}
		select {
		case <-s.exited:
			return run, fmt.Errorf("the server exited; see %s", s.logPath)
		default:
		}
		time.Sleep(500 * time.Microsecond)
	}
	// the first successful evaluation (the request waits for compilation)
	for {
		if time.Now().After(deadline) {
			return run, fmt.Errorf("no successful evaluation within 30 s; see %s", s.logPath)
		}
		run.Attempts++
		if _, err := do(c, s.url(r.path), r); err == nil {
			run.FirstEvalMs = round3(float64(time.Since(s.started).Microseconds()) / 1000)
			break
		}
		select {
		case <-s.exited:
			return run, fmt.Errorf("the server exited; see %s", s.logPath)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Second) // the pool refills
	run.RSSIdleKiB, _, _ = procStatus(s.cmd.Process.Pid)
	run.Tree = procTree(s.cmd.Process.Pid)
	lines, _, _ := readLog(s.logPath, 0)
	for _, l := range lines {
		if l.Message == "engine warm" {
			if d, err := time.ParseDuration(l.Took); err == nil {
				run.WarmLoggedMs = round3(float64(d.Microseconds()) / 1000)
			}
		}
	}
	return run, nil
}

// cacheDir is the compilation cache the cold phase bakes with t's binary;
// the memory phase uses it too (the image's configuration, Dockerfile).
func (b *bench) cacheDir(t *target) string {
	return filepath.Join(b.tmp, fmt.Sprintf("wazero-cache-%d", t.index))
}

func (b *bench) memoryPhase() error {
	for _, t := range b.targets {
		if err := b.memoryRun(t); err != nil {
			return fmt.Errorf("%s%v", t.tag(), err)
		}
	}
	return nil
}

func (b *bench) memoryRun(t *target) error {
	c := newClient(1)
	var env []string
	if _, err := os.Stat(b.cacheDir(t)); err == nil {
		env = append(env, "COMPILATION_CACHE_DIR="+b.cacheDir(t))
		t.sum.MemoryWithCache = true
	}
	s, err := b.start(t, "memory", env...)
	if err != nil {
		return err
	}
	defer b.stop(s)
	if err := s.waitReady(c, time.Minute); err != nil {
		return err
	}
	time.Sleep(time.Second)
	m := &MemoryRun{Evaluations: scaled(*memEvals), IdleEvals: *idleEvals}
	pid := s.cmd.Process.Pid
	m.RSSIdleKiB, m.HWMIdleKiB, _ = procStatus(pid)
	m.Start = procTree(pid)
	reqs := []request{{"/v1/evaluations", b.bodies["echo"]}, {"/v1/evaluations", b.bodies["reshape-16KiB"]}}
	for i := 1; i <= m.IdleEvals; i++ {
		if _, err := do(c, s.url("/v1/evaluations"), reqs[i%2]); err != nil {
			return fmt.Errorf("memory phase, before idle: %v", err)
		}
	}
	m.Idle = settledTree(pid)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	every := max(1, m.Evaluations/10)
	for i := 1; i <= m.Evaluations; i++ {
		if ctx.Err() != nil {
			return fmt.Errorf("memory phase: out of time after %d evaluations", i-1)
		}
		if _, err := do(c, s.url("/v1/evaluations"), reqs[i%2]); err != nil {
			m.Errors++
			if m.Errors > 10 {
				return fmt.Errorf("memory phase: %v", err)
			}
		}
		if i%every == 0 {
			rss, hwm, _ := procStatus(pid)
			tr := procTree(pid)
			m.Samples = append(m.Samples, MemPoint{After: i, RSSKiB: rss, HWMKiB: hwm,
				Procs: len(tr.Procs), TreeRSSKiB: tr.RSSKiB, TreePSSKiB: tr.PSSKiB, TreeHWMKiB: tr.HWMKiB})
		}
	}
	m.Seconds = round3(time.Since(t0).Seconds())
	m.End = procTree(pid)
	t.sum.Memory = m
	log.Printf("%smemory: idle %d KiB RSS, %d KiB PSS over %d processes; %v", t.tag(), m.Idle.RSSKiB, m.Idle.PSSKiB, len(m.Idle.Procs), m.Samples)
	return nil
}
