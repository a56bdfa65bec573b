package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The series of the script-size plot: bench/cmd/scriptsize's phases.
var scriptSeries = []struct {
	system, runs, sent string
	style
}{
	{"this", "later", "single", style{"this service, later runs, single requests", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}, draw.CircleGlyph{}, nil}},
	{"this", "later", "batch", style{"this service, later runs, batched", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}, draw.BoxGlyph{}, []vg.Length{vg.Points(2), vg.Points(2)}}},
	{"this", "first", "single", style{"this service, a script's first run, single", color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 255}, draw.TriangleGlyph{}, []vg.Length{vg.Points(4), vg.Points(2)}}},
	{"baseline", "later", "single", style{"the baseline (compiles every run), single requests", color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 255}, draw.SquareGlyph{}, nil}},
	{"quickjs-emscripten", "every", "in process", style{"quickjs-emscripten 0.32 in process (fresh context per run)", color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255}, draw.PyramidGlyph{}, nil}},
}

// scriptSizePlot draws scriptsize.json (bench/cmd/scriptsize): a run's
// time per evaluation against its script's size, log-log, each point the
// median of the repetitions, its bar from their least to their most.
func scriptSizePlot(file, out, title string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var res struct {
		Rows []struct {
			System, Script, Runs, Sent string
			ScriptBytes                int
			RepMsPerEval               []float64
			MsPerEval                  float64
		}
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if title == "" {
		title = "A transformer over the 16 KiB MCP-like document: time per evaluation against script size"
	}
	p := newLogLog(title, "script (bytes)", 64, 160<<10)
	drawn := 0
	for _, s := range scriptSeries {
		var pts plotter.XYs
		var lo, hi []float64
		for _, r := range res.Rows {
			if r.System != s.system || r.Runs != s.runs || r.Sent != s.sent || len(r.RepMsPerEval) == 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: float64(r.ScriptBytes), Y: r.MsPerEval})
			lo, hi = append(lo, slices.Min(r.RepMsPerEval)), append(hi, slices.Max(r.RepMsPerEval))
		}
		if len(pts) == 0 {
			continue
		}
		if err := addSeries(p, s.style, pts, lo, hi); err != nil {
			return err
		}
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("%s: no phases to draw", file)
	}
	return savePlot(p, out)
}
