package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/bench/benchhost"
)

// The http phase (see the command's doc): the clients, one request and a
// closed loop of them, the service's own log lines read back, and each
// cell's figures.

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
func batch(c *http.Client, s *benchhost.Server, r request, clients, n int, gap, max time.Duration) batchResult {
	url := s.Base + r.path
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
	servers := map[key]*benchhost.Server{}
	for i, cf := range configs {
		if !slices.ContainsFunc(specs, func(sp cellSpec) bool { return sp.cfg.name == cf.name }) {
			continue
		}
		for _, t := range b.targets {
			s, err := b.start(t, fmt.Sprintf("http%d", i+1), cf.env...)
			if err != nil {
				return err
			}
			if err := s.WaitReady(c); err != nil {
				return err
			}
			servers[key{t, cf.name}] = s
		}
	}
	time.Sleep(500 * time.Millisecond)
	idle := map[key]*TreeMem{}
	for k, s := range servers {
		idle[k] = procTree(s.Cmd.Process.Pid)
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
				off := logSize(s.LogPath)
				br := batch(c, s, sp.req, sp.cfg.clients, sp.n, sp.gap, *batchMax)
				time.Sleep(50 * time.Millisecond)
				lines, _, err := readLog(s.LogPath, off)
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
		rss, hwm, _ := procStatus(s.Cmd.Process.Pid)
		end := procTree(s.Cmd.Process.Pid)
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
