// Command load measures the service over HTTP on loopback: it starts the
// service's binary (`serve`) against a temporary script store, drives it with
// closed-loop clients, and writes one JSON summary (bench/cmd/report renders
// it). Every request loop is bounded in count and in time, and only
// 127.0.0.1 is ever addressed.
//
//	go build -o bench/out/bin/ . ./bench/cmd/load
//	bench/out/bin/load -bin bench/out/bin/sandbox-cloudrun -out bench/out/service
//
// Phases (-phases, default all three):
//
//	http    Two servers, started once each and driven in interleaved rounds:
//	        "one at a time" (MAX_CONCURRENT_EVALUATIONS=1, PROCESS_KILL and
//	        POOL_SIZE at their defaults, one client: the Cloud Run shape) and
//	        "two at a time" (MAX_CONCURRENT_EVALUATIONS=2, PROCESS_KILL=false,
//	        two clients). Workloads: POST /v1/evaluations of echo.js on a
//	        small input and of reshape.js on the 16 KiB MCP-like document,
//	        back to back; echo paced (a pause after each response, so the
//	        pool refills between requests); and GET /v1/capabilities, the
//	        floor of an HTTP exchange through the same middleware. Client
//	        latencies give throughput and p50/p99/p99.9; the service's own
//	        log line per evaluation (totalMs, fetchMs, evaluateMs) splits
//	        each request into HTTP and JSON, store fetch and evaluation.
//	cold    Process start (fork/exec) to the first successful evaluation,
//	        with and without the compilation cache baked by
//	        `sandbox-cloudrun compile-cache DIR`, alternating, -cold runs of
//	        each; the resident set (VmRSS) once the first evaluation is done
//	        and the pool has refilled.
//	memory  A fresh server: VmRSS idle, then -mem-evals evaluations
//	        (alternately echo and the 16 KiB reshape) with VmRSS and VmHWM
//	        sampled every 1,000.
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
)

// Summary is the whole output, written as JSON to OUT/service.json.
type Summary struct {
	Binary          string       `json:"binary"`
	Started         string       `json:"started"`
	Rounds          int          `json:"rounds"`
	HTTP            []*Cell      `json:"http,omitempty"`
	Servers         []ServerInfo `json:"servers,omitempty"`
	CompileCacheMs  float64      `json:"compileCacheMs,omitempty"`
	Cold            []ColdRun    `json:"cold,omitempty"`
	Memory          *MemoryRun   `json:"memory,omitempty"`
	MemoryWithCache bool         `json:"memoryWithCache,omitempty"`
	Seconds         float64      `json:"seconds"`
}

// Cell is one configuration and workload of the http phase, over all rounds.
type Cell struct {
	Config        string    `json:"config"`
	MaxConcurrent int       `json:"maxConcurrent"`
	ProcessKill   bool      `json:"processKill"`
	Clients       int       `json:"clients"`
	Workload      string    `json:"workload"`
	GapMs         float64   `json:"gapMs,omitempty"`
	InputBytes    int       `json:"inputBytes"`
	Requests      int       `json:"requests"`
	Errors        int       `json:"errors"`
	Refused       int       `json:"refused"` // 429 busy, retried
	Seconds       float64   `json:"seconds"`
	RPS           float64   `json:"rps"`
	RoundRPS      []float64 `json:"roundRps"`
	RoundP50      []float64 `json:"roundP50"`
	P50           float64   `json:"p50"`
	P90           float64   `json:"p90"`
	P99           float64   `json:"p99"`
	P999          float64   `json:"p999"`
	Max           float64   `json:"max"`
	// From the service's log lines (evaluations only): medians.
	Logged      int     `json:"logged"`
	TotalP50    float64 `json:"totalP50"`
	FetchP50    float64 `json:"fetchP50"`
	EvaluateP50 float64 `json:"evaluateP50"`
	EvaluateP90 float64 `json:"evaluateP90"`
	HandlerP50  float64 `json:"handlerP50"` // median of totalMs - fetchMs - evaluateMs per line
	TotalP99    float64 `json:"totalP99"`

	latencies []float64
	lines     []logLine
}

// ServerInfo is a server of the http phase: its memory at the end.
type ServerInfo struct {
	Config  string `json:"config"`
	RSSIdle int64  `json:"rssIdleKiB"`
	RSSEnd  int64  `json:"rssEndKiB"`
	HWM     int64  `json:"hwmKiB"`
}

// ColdRun is one start of the process.
type ColdRun struct {
	Cache        bool    `json:"cache"`
	FirstEvalMs  float64 `json:"firstEvalMs"`
	ListenMs     float64 `json:"listenMs"`
	Attempts     int     `json:"attempts"`
	RSSIdleKiB   int64   `json:"rssIdleKiB"`
	WarmLoggedMs float64 `json:"warmLoggedMs"`
}

// MemoryRun is the memory phase.
type MemoryRun struct {
	Evaluations int        `json:"evaluations"`
	RSSIdleKiB  int64      `json:"rssIdleKiB"`
	HWMIdleKiB  int64      `json:"hwmIdleKiB"`
	Samples     []MemPoint `json:"samples"`
	Seconds     float64    `json:"seconds"`
	Errors      int        `json:"errors"`
}

// MemPoint is the memory after a number of evaluations.
type MemPoint struct {
	After  int   `json:"after"`
	RSSKiB int64 `json:"rssKiB"`
	HWMKiB int64 `json:"hwmKiB"`
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
	binPath   = flag.String("bin", "bench/out/bin/sandbox-cloudrun", "the service binary (go build -o DIR .)")
	outDir    = flag.String("out", "bench/out/service", "output directory (service.json, server logs)")
	workloads = flag.String("workloads", "bench/workloads", "workload scripts")
	inputs    = flag.String("inputs", "bench/out/inputs", "input documents (bench/cmd/gendocs)")
	phases    = flag.String("phases", "http,cold,memory", "phases to run")
	rounds    = flag.Int("rounds", 3, "http phase: rounds (each runs every cell once, in a rotating order)")
	scale     = flag.Float64("scale", 1, "multiplies the requests per batch and the evaluations of the memory phase")
	coldRuns  = flag.Int("cold", 7, "cold phase: starts with and without the cache, each")
	memEvals  = flag.Int("mem-evals", 10000, "memory phase: evaluations")
	batchMax  = flag.Duration("batch-max", 20*time.Second, "http phase: the longest one batch may run")
	match     = flag.String("match", "", "http phase: run only the cells whose \"configuration workload\" name matches this regular expression (paced cells are named \"… paced\")")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("load: ")
	start := time.Now()
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		log.Fatal(err)
	}
	bin, err := filepath.Abs(*binPath)
	if err != nil {
		log.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "sandbox-load-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	b := &bench{bin: bin, tmp: tmp, sum: &Summary{Binary: bin, Started: start.UTC().Format(time.RFC3339), Rounds: *rounds}}
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
		log.Printf("%s phase done in %.0f s", name, time.Since(t).Seconds())
	}
	run("http", b.httpPhase)
	run("cold", b.coldPhase)
	run("memory", b.memoryPhase)
	b.sum.Seconds = time.Since(start).Seconds()
	out, _ := json.MarshalIndent(b.sum, "", "  ")
	if err := os.WriteFile(filepath.Join(*outDir, "service.json"), append(out, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
}

type bench struct {
	bin, tmp, store string
	refs            map[string]string // script file → sha256:… reference
	bodies          map[string][]byte // workload → request body
	inputBytes      map[string]int
	sum             *Summary
	live            []*server
}

// prepare stores the workload scripts in a temporary store (through the
// binary's own put verb) and builds the request bodies.
func (b *bench) prepare() error {
	b.store = filepath.Join(b.tmp, "store")
	if err := os.MkdirAll(b.store, 0o755); err != nil {
		return err
	}
	b.refs = map[string]string{}
	for _, name := range []string{"echo.js", "reshape.js"} {
		cmd := exec.Command(b.bin, "put", filepath.Join(*workloads, name))
		cmd.Env = append(baseEnv(), "STORE_URL="+b.store)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("put %s: %v: %s", name, err, out)
		}
		f := strings.Fields(string(out))
		if len(f) < 1 || !strings.HasPrefix(f[0], "sha256:") {
			return fmt.Errorf("put %s: unexpected output %q", name, out)
		}
		b.refs[name] = f[0]
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

// baseEnv is the environment a server starts with: none of the service's
// own variables from the caller's environment, so that only what a phase
// sets differs from the defaults.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GODEBUG":
			env = append(env, kv)
		}
	}
	return append(env, "LOG_LEVEL=info", "OTEL_EXPORTER=none")
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

// start starts `serve` with the given extra environment.
func (b *bench) start(name string, env ...string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(*outDir, "server-"+name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.bin, "serve")
	cmd.Env = append(append(baseEnv(), "PORT="+strconv.Itoa(port), "STORE_URL="+b.store), env...)
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

// procStatus reads VmRSS and VmHWM (KiB) of a process.
func procStatus(pid int) (rss, hwm int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm, nil
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
	c := newClient(4)
	servers := map[string]*server{}
	for i, cf := range configs {
		s, err := b.start(fmt.Sprintf("http%d", i+1), cf.env...)
		if err != nil {
			return err
		}
		if err := s.waitReady(c, time.Minute); err != nil {
			return err
		}
		servers[cf.name] = s
	}
	time.Sleep(500 * time.Millisecond)
	idle := map[string]int64{}
	for name, s := range servers {
		idle[name], _, _ = procStatus(s.cmd.Process.Pid)
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
	cells := make([]*Cell, len(specs))
	for i, sp := range specs {
		wl := strings.Fields(sp.workload)[0]
		cells[i] = &Cell{Config: sp.cfg.name, MaxConcurrent: sp.cfg.maxConcurrent, ProcessKill: sp.cfg.processKill,
			Clients: sp.cfg.clients, Workload: sp.workload, GapMs: float64(sp.gap.Microseconds()) / 1000, InputBytes: b.inputBytes[wl]}
	}
	for round := 0; round < *rounds; round++ {
		for k := range specs {
			i := (k + round*3) % len(specs)
			sp, cell := specs[i], cells[i]
			s := servers[sp.cfg.name]
			// warm-up: connections, the script cache, the pool
			if br := batch(c, s, sp.req, sp.cfg.clients, 30, sp.gap, 10*time.Second); br.firstErr != nil {
				return fmt.Errorf("%s %s warm-up: %v", sp.cfg.name, sp.workload, br.firstErr)
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
				log.Printf("%s %s: %d errors, first: %v", sp.cfg.name, sp.workload, br.errors, br.firstErr)
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
			log.Printf("round %d %-13s %-26s gap %v: %d requests, %.0f/s, p50 %.3f ms", round+1, sp.cfg.name, sp.workload, sp.gap, len(br.lat), rps, quantile(br.lat, 0.5))
		}
	}
	for name, s := range servers {
		rss, hwm, _ := procStatus(s.cmd.Process.Pid)
		b.sum.Servers = append(b.sum.Servers, ServerInfo{Config: name, RSSIdle: idle[name], RSSEnd: rss, HWM: hwm})
		b.stop(s)
	}
	sort.Slice(b.sum.Servers, func(i, j int) bool { return b.sum.Servers[i].Config < b.sum.Servers[j].Config })
	for _, cell := range cells {
		cell.finish()
	}
	b.sum.HTTP = cells
	// raw latencies, one line per cell
	f, err := os.Create(filepath.Join(*outDir, "latencies.jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	for _, cell := range cells {
		line, _ := json.Marshal(map[string]any{"config": cell.Config, "workload": cell.Workload, "gapMs": cell.GapMs, "ms": cell.latencies})
		f.Write(append(line, '\n'))
	}
	return nil
}

func (cell *Cell) finish() {
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
	dir := b.cacheDir()
	t := time.Now()
	out, err := exec.Command(b.bin, "compile-cache", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("compile-cache: %v: %s", err, out)
	}
	b.sum.CompileCacheMs = round3(float64(time.Since(t).Microseconds()) / 1000)
	c := newClient(1)
	for i := 0; i < 2**coldRuns; i++ {
		cache := i%2 == 0
		env := []string{}
		if cache {
			env = append(env, "COMPILATION_CACHE_DIR="+dir)
		}
		run, err := b.coldStart(c, cache, env)
		if err != nil {
			return err
		}
		b.sum.Cold = append(b.sum.Cold, run)
		log.Printf("cold start %d (cache %v): first evaluation after %.1f ms, listening after %.1f ms, idle RSS %d KiB",
			i/2+1, cache, run.FirstEvalMs, run.ListenMs, run.RSSIdleKiB)
		c.CloseIdleConnections()
	}
	return nil
}

// coldStart starts a server and sends the echo evaluation until one succeeds.
func (b *bench) coldStart(c *http.Client, cache bool, env []string) (ColdRun, error) {
	run := ColdRun{Cache: cache}
	s, err := b.start("cold", env...)
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

// cacheDir is the compilation cache the cold phase bakes; the memory phase
// uses it too (the image's configuration, Dockerfile).
func (b *bench) cacheDir() string { return filepath.Join(b.tmp, "wazero-cache") }

func (b *bench) memoryPhase() error {
	c := newClient(1)
	var env []string
	if _, err := os.Stat(b.cacheDir()); err == nil {
		env = append(env, "COMPILATION_CACHE_DIR="+b.cacheDir())
		b.sum.MemoryWithCache = true
	}
	s, err := b.start("memory", env...)
	if err != nil {
		return err
	}
	defer b.stop(s)
	if err := s.waitReady(c, time.Minute); err != nil {
		return err
	}
	time.Sleep(time.Second)
	m := &MemoryRun{Evaluations: scaled(*memEvals)}
	pid := s.cmd.Process.Pid
	m.RSSIdleKiB, m.HWMIdleKiB, _ = procStatus(pid)
	reqs := []request{{"/v1/evaluations", b.bodies["echo"]}, {"/v1/evaluations", b.bodies["reshape-16KiB"]}}
	t := time.Now()
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
			m.Samples = append(m.Samples, MemPoint{After: i, RSSKiB: rss, HWMKiB: hwm})
		}
	}
	m.Seconds = round3(time.Since(t).Seconds())
	b.sum.Memory = m
	log.Printf("memory: idle %d KiB; %v", m.RSSIdleKiB, m.Samples)
	return nil
}
