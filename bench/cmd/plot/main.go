// Command plot draws the reshape workloads' latency against input size for
// the engines of bench/run.sh, from its results, as a PNG (log-log axes;
// each point is the median, the bar spans p10 to p90); with -scriptsize, a
// run's time against its script's size from bench/cmd/scriptsize's result
// instead.
//
//	go run ./bench/cmd/plot -results bench/out/results.jsonl \
//	    -inputs bench/out/inputs -out docs/img/reshape-latency.png
//	go run ./bench/cmd/plot -scriptsize bench/out/scriptsize/scriptsize.json \
//	    -out docs/img/script-size.png
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The reshape workloads and their input files (bench/run.sh's names).
var sizes = []struct{ workload, input string }{
	{"reshape-1KiB", "mcp-1KiB.json"},
	{"reshape-16KiB", "mcp-16KiB.json"},
	{"reshape-256KiB", "mcp-256KiB.json"},
	{"reshape-4MiB", "mcp-4MiB.json"},
}

var engines = []struct {
	name string
	style
}{
	{"engine", style{"this engine (wazero), pool warm", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}, draw.CircleGlyph{}, nil}},
	{"engine-pool0", style{"this engine, pool=0 (set-up timed)", color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 255}, draw.TriangleGlyph{}, []vg.Length{vg.Points(4), vg.Points(2)}}},
	{"native", style{"native QuickJS (-O2)", color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, draw.SquareGlyph{}, nil}},
	{"quickjs-emscripten", style{"quickjs-emscripten 0.32 on Node 20", color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255}, draw.PyramidGlyph{}, nil}},
}

type record struct {
	Engine   string  `json:"engine"`
	Workload string  `json:"workload"`
	MS       float64 `json:"ms"`
}

func main() {
	results := flag.String("results", "bench/out/results.jsonl", "results of bench/run.sh")
	inputs := flag.String("inputs", "bench/out/inputs", "the input documents (their sizes are the x axis)")
	out := flag.String("out", "docs/img/reshape-latency.png", "PNG to write")
	title := flag.String("title", "", "plot title (default: a description with the date)")
	scriptSize := flag.String("scriptsize", "", "bench/cmd/scriptsize's scriptsize.json: draw it instead")
	flag.Parse()
	if *scriptSize != "" {
		if err := scriptSizePlot(*scriptSize, *out, *title); err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "plot: wrote %s\n", *out)
		return
	}

	runs := map[string]map[string][]float64{} // workload → engine → ms
	f, err := os.Open(*results)
	if err != nil {
		log.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r record
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		if runs[r.Workload] == nil {
			runs[r.Workload] = map[string][]float64{}
		}
		runs[r.Workload][r.Engine] = append(runs[r.Workload][r.Engine], r.MS)
	}
	f.Close()

	if *title == "" {
		*title = "Reshape of an MCP-like document: median latency (bar: p10 to p90)"
	}
	p := newLogLog(*title, "input JSON (bytes)", 768, 6<<20)

	drawn := 0
	for _, e := range engines {
		var pts plotter.XYs
		var lo, hi []float64
		for _, s := range sizes {
			xs := runs[s.workload][e.name]
			fi, err := os.Stat(filepath.Join(*inputs, s.input))
			if len(xs) == 0 || err != nil {
				continue
			}
			med, p10, p90 := quant(xs, 0.5), quant(xs, 0.1), quant(xs, 0.9)
			pts = append(pts, plotter.XY{X: float64(fi.Size()), Y: med})
			lo, hi = append(lo, p10), append(hi, p90)
		}
		if len(pts) == 0 {
			continue
		}
		if err := addSeries(p, e.style, pts, lo, hi); err != nil {
			log.Fatal(err)
		}
		drawn++
	}
	if drawn == 0 {
		log.Fatalf("%s: no reshape results", *results)
	}
	if err := savePlot(p, *out); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "plot: wrote %s\n", *out)
}

func quant(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// sizeTicks labels powers of 4 in bytes as 1 KiB, 4 KiB, … 4 MiB.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for x := 256.0; x <= hi*4; x *= 4 {
		if x < lo/4 {
			continue
		}
		label := ""
		switch {
		case x >= 1<<20:
			label = strconv.Itoa(int(x)>>20) + " MiB"
		case x >= 1<<10:
			label = strconv.Itoa(int(x)>>10) + " KiB"
		default:
			label = strconv.Itoa(int(x)) + " B"
		}
		t = append(t, plot.Tick{Value: x, Label: label})
	}
	return t
}

// msTicks labels 1, 2, 5 × powers of ten.
type msTicks struct{}

func (msTicks) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			x := m * math.Pow(10, e)
			if x < lo || x > hi {
				continue
			}
			t = append(t, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
		}
	}
	return t
}
