// Command report turns the results of bench/run.sh into Markdown: per
// workload the median and p90 of each engine and the ratios of this engine to
// native QuickJS and to quickjs-emscripten; optionally the hard-kill
// comparison from `go test -bench` output and a description of the machine.
//
//	go run ./bench/cmd/report -results bench/out/results.jsonl \
//	    -hardkill bench/out/hardkill.txt -meta bench/out/meta.txt
//
// An empty -results (-results "") leaves the engine table out: so
// bench/compare.sh renders the service of two builds side by side
// (-service) and their `go test -bench` output (-gobench
// before=FILE,after=FILE).
//
// Each line of the results file is one timed run:
//
//	{"engine":"native","workload":"fib25","round":1,"run":0,"ms":5.1,
//	 "outcome":"ok","bytes":5,"digest":"7451871d4e06c8ea"}
//
// digest is FNV-1a (64 bits) of the outcome's text (the value's JSON text,
// "limit:memory" or "threw:Name: message"). Every run of a workload must give
// the same digest on every engine, or the comparison is void and report
// exits with status 1 after printing.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Engine names as the runners write them, in column order. The baseline is
// the engine of another build (bench/run.sh with BASELINE=REV); its column
// and ratio appear when the results have it.
const (
	engineBaseline = "engine-baseline"
	engineWarm     = "engine"
	enginePool0    = "engine-pool0"
	native         = "native"
	emscripten     = "quickjs-emscripten"
	// engineOnV8 is this engine's own sandbox.wasm on Node's WebAssembly
	// (bench/node/sandbox-wasm.mjs): with it the gap to quickjs-emscripten
	// splits into the runtime's share and the build's (splitTable).
	engineOnV8 = "engine-on-v8"
)

type record struct {
	Engine   string  `json:"engine"`
	Workload string  `json:"workload"`
	Round    int     `json:"round"`
	Run      int     `json:"run"`
	MS       float64 `json:"ms"`
	Outcome  string  `json:"outcome"`
	Bytes    int     `json:"bytes"`
	Digest   string  `json:"digest"`
}

type cell struct {
	ms       []float64
	outcomes map[string]int // outcome/digest → runs
}

func main() {
	results := flag.String("results", "bench/out/results.jsonl", "results file (JSON lines)")
	hardkill := flag.String("hardkill", "", "output of the hard-kill `go test -bench` run (optional)")
	meta := flag.String("meta", "", "machine description, `key: value` lines (optional)")
	service := flag.String("service", "", "summary of bench/cmd/load (service.json, optional)")
	gobench := flag.String("gobench", "", "`LABEL=FILE,LABEL=FILE`: `go test -bench` output of two builds, compared benchmark by benchmark (optional)")
	flag.Parse()

	var workloads []string
	cells := map[string]map[string]*cell{}
	if *results != "" {
		f, err := os.Open(*results)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		workloads, cells, err = read(f)
		if err != nil {
			log.Fatalf("%s: %v", *results, err)
		}
	}

	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	if *meta != "" {
		m, err := os.ReadFile(*meta)
		if err != nil {
			log.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(m)), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				fmt.Fprintf(w, "- %s\n", line)
			}
		}
		fmt.Fprintln(w)
	}
	ok := true
	if *results != "" {
		ok = table(w, workloads, cells)
		if hasEngine(cells, engineOnV8) {
			fmt.Fprintln(w)
			splitTable(w, workloads, cells)
		}
	}
	if *gobench != "" {
		if err := goBenchCompare(w, *gobench); err != nil {
			log.Fatal(err)
		}
	}
	if *hardkill != "" {
		b, err := os.ReadFile(*hardkill)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintln(w)
		hardKillTable(w, string(b))
	}
	if *service != "" {
		fmt.Fprintln(w)
		if err := serviceTables(w, *service, cells); err != nil {
			log.Fatal(err)
		}
	}
	w.Flush()
	if !ok {
		fmt.Fprintln(os.Stderr, "report: the engines disagree on some outcome; the comparison is void")
		os.Exit(1)
	}
}

func read(r io.Reader) (workloads []string, cells map[string]map[string]*cell, err error) {
	cells = map[string]map[string]*cell{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return nil, nil, fmt.Errorf("line %d: %v", n, err)
		}
		if rec.Engine == "" || rec.Workload == "" || rec.MS < 0 || math.IsNaN(rec.MS) {
			return nil, nil, fmt.Errorf("line %d: incomplete record %s", n, line)
		}
		byEngine, seen := cells[rec.Workload]
		if !seen {
			byEngine = map[string]*cell{}
			cells[rec.Workload] = byEngine
			workloads = append(workloads, rec.Workload)
		}
		c := byEngine[rec.Engine]
		if c == nil {
			c = &cell{outcomes: map[string]int{}}
			byEngine[rec.Engine] = c
		}
		c.ms = append(c.ms, rec.MS)
		c.outcomes[rec.Outcome+"/"+rec.Digest]++
	}
	return workloads, cells, sc.Err()
}

// quantiles returns the median (the mean of the middle two for an even count)
// and the nearest-rank p90.
func quantiles(xs []float64) (median, p90 float64) {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		median = s[n/2]
	} else {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	p90 = s[int(math.Ceil(0.9*float64(n)))-1]
	return median, p90
}

// ms formats a duration in milliseconds with three significant digits or
// more.
func ms(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	default:
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	r := a / b
	if r >= 10 {
		return strconv.FormatFloat(r, 'f', 0, 64) + "×"
	}
	return strconv.FormatFloat(r, 'f', 2, 64) + "×"
}

func table(w io.Writer, workloads []string, cells map[string]map[string]*cell) bool {
	engines := []string{engineWarm, enginePool0, native, emscripten}
	ratios := [][2]string{{engineWarm, native}, {engineWarm, emscripten}, {enginePool0, native}, {enginePool0, emscripten}}
	head := "| workload | outcome | runs | this engine, pool warm | this engine, pool=0 | native QuickJS | quickjs-emscripten | warm / native | warm / q-e | pool=0 / native | pool=0 / q-e |"
	rule := "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	if hasEngine(cells, engineBaseline) {
		engines = append([]string{engineBaseline}, engines...)
		ratios = append([][2]string{{engineWarm, engineBaseline}}, ratios...)
		head = "| workload | outcome | runs | baseline engine, pool warm | this engine, pool warm | this engine, pool=0 | native QuickJS | quickjs-emscripten | warm / baseline | warm / native | warm / q-e | pool=0 / native | pool=0 / q-e |"
		rule = "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	agree := true
	for _, wl := range workloads {
		byEngine := cells[wl]
		med := map[string]float64{}
		row := []string{wl, "", ""}
		runs := math.MaxInt
		outcomes := map[string]bool{}
		for _, e := range engines {
			c := byEngine[e]
			row = append(row, timeCell(c, e, med))
			if c == nil {
				continue
			}
			runs = min(runs, len(c.ms))
			for o := range c.outcomes {
				outcomes[o] = true
			}
		}
		for e := range byEngine {
			if !slices.Contains(engines, e) && e != engineOnV8 {
				fmt.Fprintf(os.Stderr, "report: ignoring unknown engine %q\n", e)
			}
		}
		if len(outcomes) == 1 {
			for o := range outcomes {
				row[1] = strings.SplitN(o, "/", 2)[0]
			}
		} else {
			agree = false
			var list []string
			for o := range outcomes {
				list = append(list, o)
			}
			sort.Strings(list)
			row[1] = "MISMATCH " + strings.Join(list, ", ")
		}
		if runs == math.MaxInt {
			runs = 0
		}
		row[2] = strconv.Itoa(runs)
		row = append(row, ratioCells(med, ratios)...)
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Milliseconds per evaluation: median (p90), over `runs` timed runs per engine (the fewest of any engine).")
	fmt.Fprintln(w, "Ratios are of medians; below 1× this engine is faster. q-e is quickjs-emscripten.")
	return agree
}

// timeCell is a table cell of engine e's times: "median (p90)", its median
// noted in med for the ratios, or "–" when e did not run the workload.
func timeCell(c *cell, e string, med map[string]float64) string {
	if c == nil {
		return "–"
	}
	m, p := quantiles(c.ms)
	med[e] = m
	return fmt.Sprintf("%s (%s)", ms(m), ms(p))
}

// splitTable splits this engine's gap to quickjs-emscripten in two: the
// same sandbox.wasm on wazero against on V8 is the runtime's share, and on
// V8 against quickjs-emscripten (also on V8) the build's (QuickJS's
// version, the shim, the compiler and its flags). The V8 runs instantiate
// and set up the module in the timed region, as pool=0 does, so they are
// set beside pool=0.
func splitTable(w io.Writer, workloads []string, cells map[string]map[string]*cell) {
	fmt.Fprintln(w, "| workload | this engine, pool=0 (wazero) | its sandbox.wasm on V8 | quickjs-emscripten (V8) | wazero / V8: the runtime | V8 / q-e: the build | pool=0 / q-e |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|")
	for _, wl := range workloads {
		med := map[string]float64{}
		row := []string{wl}
		for _, e := range []string{enginePool0, engineOnV8, emscripten} {
			row = append(row, timeCell(cells[wl][e], e, med))
		}
		row = append(row, ratioCells(med, [][2]string{{enginePool0, engineOnV8}, {engineOnV8, emscripten}, {enginePool0, emscripten}})...)
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Milliseconds per evaluation: median (p90). The two parts multiply to the last column.")
}

// ratioCells is, for each pair of engines, the ratio of their medians, or a
// dash where one has none.
func ratioCells(med map[string]float64, pairs [][2]string) []string {
	var cells []string
	for _, pair := range pairs {
		a, okA := med[pair[0]]
		b, okB := med[pair[1]]
		if okA && okB {
			cells = append(cells, ratio(a, b))
		} else {
			cells = append(cells, "–")
		}
	}
	return cells
}

// hasEngine reports whether any workload has results of engine e.
func hasEngine(cells map[string]map[string]*cell, e string) bool {
	for _, byEngine := range cells {
		if byEngine[e] != nil {
			return true
		}
	}
	return false
}

// benchLine matches a line of `go test -bench` output.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)

func hardKillTable(w io.Writer, out string) {
	runs := map[string][]float64{}
	for _, line := range strings.Split(out, "\n") {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		ns, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		runs[m[1]] = append(runs[m[1]], ns/1e6)
	}
	pairs := []struct{ name, watchdog, contextDone string }{
		{"fib(25)", "BenchmarkFib25", "BenchmarkFib25ContextDone"},
		{"reshape 256 KiB", "BenchmarkReshape/256KiB", "BenchmarkReshape256KiBContextDone"},
	}
	fmt.Fprintln(w, "| workload | watchdog (default) | WithCloseOnContextDone | ratio |")
	fmt.Fprintln(w, "|---|--:|--:|--:|")
	for _, p := range pairs {
		a, b := runs[p.watchdog], runs[p.contextDone]
		if len(a) == 0 || len(b) == 0 {
			fmt.Fprintf(w, "| %s | %s | %s | – |\n", p.name, describeRuns(a), describeRuns(b))
			continue
		}
		ma, _ := quantiles(a)
		mb, _ := quantiles(b)
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", p.name, describeRuns(a), describeRuns(b), ratio(mb, ma))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Milliseconds per evaluation (ns/op of `go test -bench`): median of the -count runs [min–max].")
}

// goBenchCompare sets the `go test -bench` results of two builds side by
// side: spec is LABEL=FILE,LABEL=FILE, the first the baseline.
func goBenchCompare(w io.Writer, spec string) error {
	parts := strings.Split(spec, ",")
	if len(parts) != 2 {
		return fmt.Errorf("-gobench: want LABEL=FILE,LABEL=FILE, got %q", spec)
	}
	var labels [2]string
	var runs [2]map[string][]float64
	var order []string
	for i, p := range parts {
		l, path, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("-gobench: want LABEL=FILE, got %q", p)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		labels[i], runs[i] = l, map[string][]float64{}
		for _, line := range strings.Split(string(b), "\n") {
			m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			ns, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				continue
			}
			if !slices.Contains(order, m[1]) {
				order = append(order, m[1])
			}
			runs[i][m[1]] = append(runs[i][m[1]], ns/1e3)
		}
	}
	fmt.Fprintf(w, "| benchmark | %s: µs/op median [min–max] | %s: µs/op median [min–max] | %s / %s |\n", labels[0], labels[1], labels[1], labels[0])
	fmt.Fprintln(w, "|---|--:|--:|--:|")
	for _, name := range order {
		a, b := runs[0][name], runs[1][name]
		r := "–"
		if len(a) > 0 && len(b) > 0 {
			ma, _ := quantiles(a)
			mb, _ := quantiles(b)
			r = ratio(mb, ma)
		}
		fmt.Fprintf(w, "| %s | %s (%d runs) | %s (%d runs) | %s |\n", name, describeRuns(a), len(a), describeRuns(b), len(b), r)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Microseconds per evaluation (ns/op of `go test -bench` / 1000), one figure per -count run; the two test binaries ran alternately.")
	fmt.Fprintln(w)
	return nil
}

func describeRuns(xs []float64) string {
	if len(xs) == 0 {
		return "not run"
	}
	m, _ := quantiles(xs)
	return fmt.Sprintf("%s [%s–%s]", ms(m), ms(slices.Min(xs)), ms(slices.Max(xs)))
}
