package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The series of the script-size plot: bench/cmd/scriptsize's phases.
var scriptSeries = []struct {
	system, runs, sent, label string
	colour                    color.RGBA
	shape                     draw.GlyphDrawer
	dashes                    []vg.Length
}{
	{"this", "later", "single", "this service, later runs, single requests", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}, draw.CircleGlyph{}, nil},
	{"this", "later", "batch", "this service, later runs, batched", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}, draw.BoxGlyph{}, []vg.Length{vg.Points(2), vg.Points(2)}},
	{"this", "first", "single", "this service, a script's first run, single", color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 255}, draw.TriangleGlyph{}, []vg.Length{vg.Points(4), vg.Points(2)}},
	{"baseline", "later", "single", "the baseline (compiles every run), single requests", color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 255}, draw.SquareGlyph{}, nil},
	{"quickjs-emscripten", "every", "in process", "quickjs-emscripten 0.32 in process (fresh context per run)", color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255}, draw.PyramidGlyph{}, nil},
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
	p := plot.New()
	p.Title.Text = title
	if p.Title.Text == "" {
		p.Title.Text = "A transformer over the 16 KiB MCP-like document: time per evaluation against script size"
	}
	p.X.Label.Text = "script (bytes)"
	p.Y.Label.Text = "ms per evaluation"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Y.Tick.Marker = msTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(12), -vg.Points(8)
	p.Add(plotter.NewGrid())
	p.X.Min, p.X.Max = 64, 160<<10
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
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		line.Color, line.Width, line.Dashes = s.colour, vg.Points(1.5), s.dashes
		points.Color, points.Shape, points.Radius = s.colour, s.shape, vg.Points(3.5)
		p.Add(line, points)
		for i, pt := range pts {
			bar, err := plotter.NewLine(plotter.XYs{{X: pt.X, Y: lo[i]}, {X: pt.X, Y: hi[i]}})
			if err != nil {
				return err
			}
			bar.Color, bar.Width = s.colour, vg.Points(1)
			p.Add(bar)
		}
		p.Legend.Add(s.label, line, points)
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("%s: no phases to draw", file)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return p.Save(8*vg.Inch, 5.5*vg.Inch, out)
}
