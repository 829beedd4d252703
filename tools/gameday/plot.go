package gameday

import (
	"fmt"
	"image/color"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// bucket is the picture's time resolution.
const bucket = 500 * time.Millisecond

// regionColors colour IDs by the region number that issued them (0-7).
var regionColors = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
}

// plotTimeline draws, per caller (one row each), its IDs per second over the run, a line per
// issuing region number in that number's colour, with each fault shaded from the fault to the
// region healthy again (rolling deploys from start to end) and named; base.png and base.svg.
func plotTimeline(s *stack, runs []*phaseRun, base string) error {
	start := runs[0].Start
	end := runs[len(runs)-1].End
	nb := max(1, int(end.Sub(start)/bucket)) // whole buckets: a last one cut short would look like a drop
	regions := sortedRegions(s)
	var rows [][]*plot.Plot
	for _, r := range regions {
		var se *series
		for _, x := range s.rec.all {
			if x.kind == kindCaller && x.region == r.name {
				se = x
			}
		}
		if se == nil {
			continue
		}
		counts := map[int][]float64{}
		rs, _ := se.snapshot()
		ymax := 1.0
		for _, x := range rs {
			if x.N == 0 || x.At.Before(start) || !x.At.Before(end) {
				continue
			}
			n := numberOf(x.First)
			if counts[n] == nil {
				counts[n] = make([]float64, nb)
			}
			i := int(x.At.Sub(start) / bucket)
			if i >= nb {
				continue
			}
			counts[n][i] += float64(x.N) / bucket.Seconds()
			ymax = max(ymax, counts[n][i])
		}
		p := plot.New()
		p.Title.Text = fmt.Sprintf("caller-%s (region %d, peer %s)", r.name, r.number, r.peer)
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.Y.Label.Text = "IDs/s"
		p.Y.Min, p.Y.Max = 0, ymax*1.6 // room above the lines for the legend, and the fault's name below it
		p.X.Min, p.X.Max = 0, end.Sub(start).Seconds()
		if r == regions[len(regions)-1] {
			p.X.Label.Text = "seconds since the first phase began"
		}
		for _, ph := range runs {
			if ph.Fault == Steady {
				continue
			}
			x0, x1 := ph.FaultAt.Sub(start).Seconds(), ph.HealthyAt.Sub(start).Seconds()
			if x1 <= x0 {
				x1 = x0 + 0.5
			}
			shade, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: p.Y.Max}, {X: x0, Y: p.Y.Max}})
			if err != nil {
				return err
			}
			shade.Color = color.NRGBA{160, 160, 160, 50}
			if ph.Region == r.name {
				shade.Color = color.NRGBA{230, 60, 60, 60}
			}
			shade.LineStyle.Color = shade.Color
			p.Add(shade)
			if ph.Region == r.name {
				lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x0, Y: ymax * 1.2}}, Labels: []string{string(ph.Fault)}})
				if err != nil {
					return err
				}
				for i := range lbl.TextStyle {
					lbl.TextStyle[i].Font.Size = vg.Points(8)
				}
				p.Add(lbl)
			}
		}
		for n := range 8 {
			c, ok := counts[n]
			if !ok {
				continue
			}
			xys := make(plotter.XYs, nb)
			for i := range nb {
				xys[i] = plotter.XY{X: (float64(i) + 0.5) * bucket.Seconds(), Y: c[i]}
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			l.Color = regionColors[n]
			l.Width = vg.Points(1.2)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("from region %d (%s)", n, s.regionOf(n)), l)
		}
		p.Legend.Top = true
		p.Legend.TextStyle.Font.Size = vg.Points(8)
		rows = append(rows, []*plot.Plot{p})
	}
	w, h := 10*vg.Inch, vg.Length(len(rows))*1.9*vg.Inch
	tiles := draw.Tiles{Rows: len(rows), Cols: 1, PadX: vg.Millimeter, PadY: 2 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter,
		PadLeft: 2 * vg.Millimeter, PadRight: 2 * vg.Millimeter}
	draw1 := func(c draw.Canvas) {
		cs := plot.Align(rows, tiles, c)
		for i := range rows {
			rows[i][0].Draw(cs[i][0])
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))
	draw1(draw.New(img))
	f, err := os.Create(base + ".png")
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	svg := vgsvg.New(w, h)
	draw1(draw.New(svg))
	g, err := os.Create(base + ".svg")
	if err != nil {
		return err
	}
	if _, err := svg.WriteTo(g); err != nil {
		g.Close()
		return err
	}
	return g.Close()
}
