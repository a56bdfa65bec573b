package main

import (
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// style is how one series is drawn, and its name in the legend.
type style struct {
	label  string
	colour color.RGBA
	shape  draw.GlyphDrawer
	dashes []vg.Length
}

// newLogLog is a plot of milliseconds per evaluation against a size in
// bytes, both axes logarithmic, with the legend at the top left; x runs
// from xMin to xMax bytes.
func newLogLog(title, xLabel string, xMin, xMax float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = "ms per evaluation"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Y.Tick.Marker = msTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(12), -vg.Points(8)
	p.Add(plotter.NewGrid())
	p.X.Min, p.X.Max = xMin, xMax
	return p
}

// addSeries draws pts as a line through its points in s's style, each point
// with a bar from lo[i] to hi[i] (a line: YErrorBars pads a log axis
// wrongly), and names the series in the legend.
func addSeries(p *plot.Plot, s style, pts plotter.XYs, lo, hi []float64) error {
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
	return nil
}

// savePlot writes p to out as a PNG of 8 by 5.5 inches, making out's
// directory.
func savePlot(p *plot.Plot, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return p.Save(8*vg.Inch, 5.5*vg.Inch, out)
}
