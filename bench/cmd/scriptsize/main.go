// Command scriptsize measures what a script's size costs a run: the
// model-written transformers of bench/workloads (transform-100B.js,
// -2KB.js, -20KB.js, -100KB.js) over the 16 KiB MCP-like document, through
// the service's binary over HTTP on loopback (POST /v1/evaluations by
// reference, one request after another over one keep-alive connection, the
// service's defaults), and through loom's reference in process
// (quickjs-emscripten on Node, bench/node/runner.mjs: a fresh runtime and
// context per run).
//
//	go build -o bench/out/bin/ . ./bench/cmd/scriptsize
//	bench/out/bin/scriptsize -bin bench/out/bin/sandbox-cloudrun [-baseline-bin B] -out bench/out/scriptsize
//
// For each script and each binary it runs four phases: a script's first
// run (single requests, each of a variant of the script never run before:
// the script with a comment of its own after it, which makes another
// sha256), its later runs (single requests of one script already run), and
// the same two in batches of -batch inputs (POST /v1/evaluations:batch: a
// batch of a new variant, whose first input compiles, and a batch of a
// script already run). Each phase is timed by the client's clock, per
// evaluation (a batch's wall time over its inputs), and by the CPU the
// server's process tree used over it; a repetition runs every phase once,
// the two binaries one right after the other, the one that goes first
// alternating. Every answer is checked: 200 and ok, a batch's every line
// ok. It writes OUT/scriptsize.json (bench/cmd/plot -scriptsize draws it)
// and prints the Markdown table docs/benchmarks.md shows.
package main

import (
	"bufio"
	"bytes"
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
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/bench/benchhost"
	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
)

// The scripts, smallest first, as bench/workloads names them.
var scripts = []string{"100B", "2KB", "20KB", "100KB"}

// Result is what scriptsize.json holds.
type Result struct {
	Version         string   `json:"version"`
	BaselineVersion string   `json:"baselineVersion,omitempty"`
	Reps            int      `json:"reps"`
	Batch           int      `json:"batch"`
	LoadAvg         []string `json:"loadAvg"`
	Seconds         float64  `json:"seconds"`
	Rows            []*Row   `json:"rows"`
}

// Row is one phase: a system, a script, first or later runs, single or
// batched; the figures are medians over the repetitions.
type Row struct {
	System      string `json:"system"` // "this", "baseline", "quickjs-emscripten"
	Script      string `json:"script"`
	ScriptBytes int    `json:"scriptBytes"`
	Runs        string `json:"runs"` // "first", "later"; "every" for the reference, which compiles every run
	Sent        string `json:"sent"` // "single", "batch", "in process"
	// MsPerEval is the client's wall time per evaluation (median of the
	// phase's requests, a batch's over its inputs); CPUMsPerEval the server
	// tree's CPU per evaluation; one figure per repetition.
	RepMsPerEval    []float64 `json:"repMsPerEval"`
	RepCPUMsPerEval []float64 `json:"repCpuMsPerEval,omitempty"`
	MsPerEval       float64   `json:"msPerEval"`
	CPUMsPerEval    float64   `json:"cpuMsPerEval,omitempty"`
}

func main() {
	bin := flag.String("bin", "bench/out/bin/sandbox-cloudrun", "the service binary (go build -o DIR .)")
	baseline := flag.String("baseline-bin", "", "a second service binary, measured beside it (the baseline)")
	out := flag.String("out", "bench/out/scriptsize", "output directory (scriptsize.json, the servers' logs)")
	dir := flag.String("workloads", "bench/workloads", "directory of the transform-*.js scripts")
	node := flag.String("node-runner", "bench/node/runner.mjs", "quickjs-emscripten's runner (node, bench/ after npm ci); '' leaves the reference out")
	reps := flag.Int("reps", 3, "repetitions")
	first := flag.Int("first", 10, "single first runs per phase (each a new variant of the script)")
	later := flag.Int("later", 60, "single later runs per phase")
	batch := flag.Int("batch", 100, "inputs per batch")
	batches := flag.Int("batches", 2, "batches per phase")
	nodeRuns := flag.Int("node-runs", 40, "the reference's timed runs per repetition")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("scriptsize: ")
	if *reps < 1 || *first < 1 || *later < 1 || *batch < 2 || *batches < 1 || *nodeRuns < 1 {
		log.Fatal("-reps, -first, -later, -batches and -node-runs must be at least 1, -batch at least 2")
	}
	c := config{bin: *bin, baseline: *baseline, out: *out, dir: *dir, node: *node, reps: *reps,
		first: *first, later: *later, batch: *batch, batches: *batches, nodeRuns: *nodeRuns}
	if err := c.run(); err != nil {
		log.Fatal(err)
	}
}

type config struct {
	bin, baseline, out, dir, node                string
	reps, first, later, batch, batches, nodeRuns int
}

// system is one binary's server and its scripts' references.
type system struct {
	name   string
	bin    string
	server *benchhost.Server
	// refs[script] is the script's reference; variants[script] the
	// references of variants never run, taken one by one
	refs     map[string]string
	variants map[string][]string
}

func (c *config) run() error {
	start := time.Now()
	load0 := benchhost.LoadAvg()
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return fmt.Errorf("the output directory: %w", err)
	}
	tmp, err := os.MkdirTemp("", "sandbox-scriptsize-")
	if err != nil {
		return fmt.Errorf("a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	doc := mcpdoc.Document(16 << 10)
	docFile := filepath.Join(tmp, "mcp-16KiB.json")
	if err := os.WriteFile(docFile, []byte(doc), 0o644); err != nil {
		return err
	}
	sources := map[string][]byte{}
	for _, s := range scripts {
		if sources[s], err = os.ReadFile(filepath.Join(c.dir, "transform-"+s+".js")); err != nil {
			return fmt.Errorf("the script: %w", err)
		}
	}
	res := &Result{Reps: c.reps, Batch: c.batch}
	var systems []*system
	for _, sb := range [][2]string{{"this", c.bin}, {"baseline", c.baseline}} {
		if sb[1] == "" {
			continue
		}
		sys, version, err := c.start(sb[0], sb[1], tmp, sources)
		if err != nil {
			return err
		}
		defer sys.server.Stop()
		if sb[0] == "this" {
			res.Version = version
		} else {
			res.BaselineVersion = version
		}
		systems = append(systems, sys)
	}
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	for _, sys := range systems {
		if err := sys.server.WaitReady(client); err != nil {
			return err
		}
	}

	rows := map[string]*Row{}
	row := func(system, script, runs, sent string) *Row {
		k := system + script + runs + sent
		if rows[k] == nil {
			rows[k] = &Row{System: system, Script: script, ScriptBytes: len(sources[script]), Runs: runs, Sent: sent}
			res.Rows = append(res.Rows, rows[k])
		}
		return rows[k]
	}
	for rep := range c.reps {
		for _, script := range scripts {
			for _, sent := range []string{"single", "batch"} {
				for _, runs := range []string{"first", "later"} {
					for k := range systems {
						sys := systems[(k+rep)%len(systems)]
						r := row(sys.name, script, runs, sent)
						ms, cpu, err := c.phase(client, sys, script, doc, runs, sent)
						if err != nil {
							return fmt.Errorf("repetition %d, %s, %s, %s runs, %s: %w", rep+1, sys.name, script, runs, sent, err)
						}
						r.RepMsPerEval = append(r.RepMsPerEval, benchhost.Round3(ms))
						r.RepCPUMsPerEval = append(r.RepCPUMsPerEval, benchhost.Round3(cpu))
						log.Printf("repetition %d %-8s %-5s %-5s runs %-6s: %.3f ms, CPU %.3f ms per evaluation (load average %s)",
							rep+1, sys.name, script, runs, sent, ms, cpu, benchhost.LoadAvg())
					}
				}
			}
			if c.node != "" {
				ms, err := c.reference(script, filepath.Join(c.dir, "transform-"+script+".js"), docFile, rep)
				if err != nil {
					return err
				}
				r := row("quickjs-emscripten", script, "every", "in process")
				r.RepMsPerEval = append(r.RepMsPerEval, benchhost.Round3(ms))
				log.Printf("repetition %d %s %-5s in process: %.3f ms", rep+1, r.System, script, ms)
			}
		}
	}
	for _, r := range res.Rows {
		r.MsPerEval = benchhost.Median(r.RepMsPerEval)
		if len(r.RepCPUMsPerEval) > 0 {
			r.CPUMsPerEval = benchhost.Median(r.RepCPUMsPerEval)
		}
	}
	res.LoadAvg = []string{load0, benchhost.LoadAvg()}
	res.Seconds = benchhost.Round3(time.Since(start).Seconds())
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.out, "scriptsize.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	table(os.Stdout, res)
	return nil
}

// start stores the scripts and their variants in a store of the binary's
// own and starts its server.
func (c *config) start(name, bin, tmp string, sources map[string][]byte) (*system, string, error) {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return nil, "", err
	}
	version, err := exec.Command(bin, "version").Output()
	if err != nil {
		return nil, "", fmt.Errorf("%s version: %w", bin, err)
	}
	store := filepath.Join(tmp, name, "store")
	files := filepath.Join(tmp, name, "scripts")
	for _, d := range []string{store, files} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, "", err
		}
	}
	sys := &system{name: name, bin: bin, refs: map[string]string{}, variants: map[string][]string{}}
	n := c.reps * (c.first + c.batches)
	var paths []string
	for _, s := range scripts {
		for i := 0; i <= n; i++ {
			text := sources[s]
			if i > 0 {
				text = fmt.Appendf(bytes.Clone(text), "\n// variant %d\n", i)
			}
			p := filepath.Join(files, fmt.Sprintf("%s-%d.js", s, i))
			if err := os.WriteFile(p, text, 0o644); err != nil {
				return nil, "", err
			}
			paths = append(paths, p)
		}
	}
	refs, err := putAll(bin, store, paths)
	if err != nil {
		return nil, "", err
	}
	for _, s := range scripts {
		for i := 0; i <= n; i++ {
			ref := refs[filepath.Join(files, fmt.Sprintf("%s-%d.js", s, i))]
			if i == 0 {
				sys.refs[s] = ref
			} else {
				sys.variants[s] = append(sys.variants[s], ref)
			}
		}
	}
	if sys.server, err = benchhost.StartServer(bin, filepath.Join(c.out, name+"-server.log"), "STORE_URL="+store); err != nil {
		return nil, "", err
	}
	return sys, strings.Join(strings.Fields(string(version)), " "), nil
}

// putAll stores the files with the binary's put verb, which prints a
// "REF FILE" line for each, and returns their references by file.
func putAll(bin, store string, files []string) (map[string]string, error) {
	cmd := exec.Command(bin, append([]string{"put"}, files...)...)
	cmd.Env = append(benchhost.BaseEnv(), "STORE_URL="+store)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("put: %w", err)
	}
	refs := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && strings.HasPrefix(f[0], "sha256:") {
			refs[f[1]] = f[0]
		}
	}
	for _, f := range files {
		if refs[f] == "" {
			return nil, fmt.Errorf("put printed no reference for %s", f)
		}
	}
	return refs, nil
}

// phase runs one phase and returns its median wall time and its CPU per
// evaluation, in milliseconds.
func (c *config) phase(client *http.Client, sys *system, script, doc, runs, sent string) (ms, cpu float64, err error) {
	next := func() string {
		if runs == "later" {
			return sys.refs[script]
		}
		ref := sys.variants[script][0]
		sys.variants[script] = sys.variants[script][1:]
		return ref
	}
	inputs, requests := 1, c.later
	if runs == "first" {
		requests = c.first
	}
	if sent == "batch" {
		inputs, requests = c.batch, c.batches
	}
	if runs == "later" {
		// every worker has run the script before the phase
		for range 6 {
			if _, err := c.send(client, sys, sys.refs[script], doc, 1); err != nil {
				return 0, 0, fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	time.Sleep(100 * time.Millisecond) // the pool refills
	pid := sys.server.Cmd.Process.Pid
	cpu0, err := benchhost.TreeCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	var per []float64
	for range requests {
		d, err := c.send(client, sys, next(), doc, inputs)
		if err != nil {
			return 0, 0, err
		}
		per = append(per, float64(d.Nanoseconds())/1e6/float64(inputs))
	}
	cpu1, err := benchhost.TreeCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	ticks := cpu1.Server + cpu1.Workers - cpu0.Server - cpu0.Workers
	return benchhost.Median(per), float64(ticks) * 1000 / benchhost.ClockTick / float64(requests*inputs), nil
}

// send runs the script by reference on n copies of the document: a single
// request when n is 1, else a batch; every answer must be ok.
func (c *config) send(client *http.Client, sys *system, ref, doc string, n int) (time.Duration, error) {
	if n == 1 {
		return sys.server.Single(client, fmt.Appendf(nil, `{"scriptRef":%q,"input":%s}`, ref, doc))
	}
	return sys.server.Batch(client, benchhost.BatchBody(ref, doc, n), n)
}

// reference runs the script through quickjs-emscripten in process and
// returns its median time per run.
func (c *config) reference(script, file, docFile string, rep int) (float64, error) {
	cmd := exec.Command("node", c.node, "-workload", "transform-"+script, "-script", file, "-input", docFile,
		"-mem", "67108864", "-warmup", "3", "-runs", fmt.Sprint(c.nodeRuns), "-round", fmt.Sprint(rep))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("node %s: %w", c.node, err)
	}
	var ms []float64
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l struct {
			MS      float64 `json:"ms"`
			Outcome string  `json:"outcome"`
		}
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			return 0, fmt.Errorf("node's output: %w", err)
		}
		if l.Outcome != "ok" {
			return 0, fmt.Errorf("node: the %s script's outcome is %s", script, l.Outcome)
		}
		ms = append(ms, l.MS)
	}
	if len(ms) == 0 {
		return 0, fmt.Errorf("node printed no run")
	}
	return benchhost.Median(ms), nil
}

// table writes the Markdown table: a row per script, a column per
// system's phase, then the goals' ratios.
func table(w io.Writer, res *Result) {
	fmt.Fprintf(w, "%d repetitions, batches of %d; load average (1, 5, 15 min) %s at the start, %s at the end; %s", res.Reps, res.Batch, res.LoadAvg[0], res.LoadAvg[1], res.Version)
	if res.BaselineVersion != "" {
		fmt.Fprintf(w, " against the baseline %s", res.BaselineVersion)
	}
	fmt.Fprint(w, "\n\n")
	type col struct{ system, runs, sent, head string }
	cols := []col{
		{"this", "first", "single", "this: first run, single"},
		{"this", "later", "single", "this: later runs, single"},
		{"this", "first", "batch", "this: first run, batched"},
		{"this", "later", "batch", "this: later runs, batched"},
		{"baseline", "later", "single", "baseline: single"},
		{"baseline", "later", "batch", "baseline: batched"},
		{"quickjs-emscripten", "every", "in process", "quickjs-emscripten, in process"},
	}
	find := func(system, script, runs, sent string) *Row {
		for _, r := range res.Rows {
			if r.System == system && r.Script == script && r.Runs == runs && r.Sent == sent {
				return r
			}
		}
		return nil
	}
	var heads []string
	for _, c := range cols {
		if find(c.system, scripts[0], c.runs, c.sent) != nil {
			heads = append(heads, c.head)
		}
	}
	fmt.Fprintf(w, "| script | bytes | %s |\n|---|--:|%s\n", strings.Join(heads, " | "), strings.Repeat("--:|", len(heads)))
	for _, s := range scripts {
		var cells []string
		bytes := 0
		for _, c := range cols {
			r := find(c.system, s, c.runs, c.sent)
			if r == nil {
				continue
			}
			bytes = r.ScriptBytes
			cell := fmt.Sprintf("%.3g", r.MsPerEval)
			if r.CPUMsPerEval > 0 {
				cell += fmt.Sprintf(" (CPU %.3g)", r.CPUMsPerEval)
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %s | %d | %s |\n", s, bytes, strings.Join(cells, " | "))
	}
	fmt.Fprintln(w, "\nMilliseconds per evaluation, the medians of the repetitions' medians (a batch's wall time over its inputs); CPU is the server's process tree's per evaluation.")
	if a, b := find("this", "100KB", "later", "single"), find("this", "100B", "later", "single"); a != nil && b != nil {
		fmt.Fprintf(w, "\n- 100 KB script's later runs against the 100 B script's, single: %.2f× (batched: %.2f×)\n", a.MsPerEval/b.MsPerEval,
			ratioOf(find("this", "100KB", "later", "batch"), find("this", "100B", "later", "batch")))
	}
	if a, q := find("this", "20KB", "later", "single"), find("quickjs-emscripten", "20KB", "every", "in process"); a != nil && q != nil {
		fmt.Fprintf(w, "- 20 KB transformer over HTTP against quickjs-emscripten in process: later runs %.2f×, first run %.2f×\n",
			a.MsPerEval/q.MsPerEval, ratioOf(find("this", "20KB", "first", "single"), q))
	}
}

func ratioOf(a, b *Row) float64 {
	if a == nil || b == nil || b.MsPerEval == 0 {
		return math.NaN()
	}
	return a.MsPerEval / b.MsPerEval
}
