package gameday

import (
	"fmt"
	"html"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// bucket is the picture's time resolution.
const bucket = 500 * time.Millisecond

// regionColors colour IDs by the region number that issued them (0-7).
var regionColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

func numberColor(n int) string {
	if n < 0 || n >= len(regionColors) {
		return "#000000"
	}
	return regionColors[n]
}

// The picture's geometry, in SVG user units (pixels).
const (
	picWidth    = 1400
	picLeft     = 200 // the rows' names
	picRight    = 24
	callerH     = 84 // a caller's IDs per second
	laneH       = 12 // beneath it: on its peer (a move) and hedged batches
	nodeH       = 34 // the region's embedded node's IDs per second
	regionGap   = 16
	phaseBandH  = 70
	registryH   = 14
	custH       = 22 // a region's customer requests: ok and error marks per bucket
	custGap     = 6
	custHeadH   = 22
	fontFamily  = "DejaVu Sans, Verdana, Arial, sans-serif"
	charWidth   = 0.6 // of the font size, an estimate to fit a label in its phase
	minFontSize = 7.0
)

// svgPic builds the SVG text.
type svgPic struct {
	b            strings.Builder
	t0           time.Time
	total        float64 // seconds drawn
	plotL, plotW float64
}

func (p *svgPic) x(t time.Time) float64 {
	return p.plotL + math.Max(0, math.Min(p.total, t.Sub(p.t0).Seconds()))/p.total*p.plotW
}

func (p *svgPic) xs(sec float64) float64 { return p.plotL + sec/p.total*p.plotW }

func (p *svgPic) f(format string, args ...any) { fmt.Fprintf(&p.b, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

// text writes a label, its font shrunk (down to minFontSize) to fit width when width > 0.
func (p *svgPic) text(x, y float64, size float64, width float64, attrs, s string) {
	if width > 0 {
		if w := float64(len([]rune(s))) * size * charWidth; w > width {
			size = math.Max(minFontSize, size*width/w)
		}
	}
	p.f(`<text x="%.1f" y="%.1f" font-size="%.1f" %s>%s</text>`+"\n", x, y, size, attrs, esc(s))
}

// axisStep is the time axis's tick spacing: the smallest of 1, 2, 5, 10, 20, 30, 60 … seconds
// that gives at most 14 ticks.
func axisStep(total float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600} {
		if total/s <= 14 {
			return s
		}
	}
	return 1200
}

// niceCeil rounds v up to a round number: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func rateLabel(v float64) string {
	if v >= 1000 {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1000), ".0") + "k/s"
	}
	return fmt.Sprintf("%.0f/s", v)
}

// phaseVerdict is a phase's result as the checks gave it: "ok" or "FAILED", with the failed
// checks (those naming the phase).
func phaseVerdict(res *Result, name string) (string, []string) {
	var out []string
	for _, f := range res.Failures {
		if strings.HasPrefix(f, name+": ") {
			out = append(out, f)
		}
	}
	if len(out) > 0 {
		return "FAILED", out
	}
	return "ok", nil
}

// counts are a series' IDs per second in the picture's buckets, by the region number that issued
// them.
type counts map[int][]float64

func (c counts) add(n, i, nb int, v float64) {
	if c[n] == nil {
		c[n] = make([]float64, nb)
	}
	c[n][i] += v
}

func (c counts) max() float64 {
	m := 0.0
	for _, xs := range c {
		for _, v := range xs {
			m = max(m, v)
		}
	}
	return m
}

// hedge is the peer's IDs a caller took in one bucket while it stayed on its own region.
type hedge struct {
	at   time.Time
	ids  int
	rate float64
}

// callerPic is what a caller's row shows.
type callerPic struct {
	lines  counts         // IDs per second, hedged batches left out
	hedges map[int]*hedge // by bucket
	moves  [][2]time.Time // on its peer: from the first line the client was on its peer to the next on its own region
}

// gap is an embedded node's time without a batch, over NodeGapBound.
type gap struct{ from, to time.Time }

func bucketOf(at, start time.Time, nb int) (int, bool) {
	if at.Before(start) {
		return 0, false
	}
	i := int(at.Sub(start) / bucket)
	return i, i < nb
}

func callerPicture(rs []run, own, peer int, start, end time.Time, nb int) callerPic {
	cp := callerPic{lines: counts{}, hedges: map[int]*hedge{}}
	cp.lines.add(own, 0, nb, 0) // its own number's line even when it took none
	var moveFrom time.Time
	for _, x := range rs {
		if !x.At.Before(end) {
			break
		}
		if x.Active != 0 && moveFrom.IsZero() {
			moveFrom = x.At
		} else if x.Active == 0 && !moveFrom.IsZero() {
			cp.moves = append(cp.moves, [2]time.Time{moveFrom, x.At})
			moveFrom = time.Time{}
		}
		i, ok := bucketOf(x.At, start, nb)
		if x.N == 0 || !ok {
			continue
		}
		n := numberOf(x.First)
		v := float64(x.N) / bucket.Seconds()
		if n == peer && x.Active == 0 { // a hedged refill: the client stayed on its region
			h := cp.hedges[i]
			if h == nil {
				h = &hedge{at: x.At}
				cp.hedges[i] = h
			}
			h.ids += x.N
			h.rate += v
			continue
		}
		cp.lines.add(n, i, nb, v)
	}
	if !moveFrom.IsZero() {
		cp.moves = append(cp.moves, [2]time.Time{moveFrom, end})
	}
	return cp
}

func nodeCounts(rs []run, start, end time.Time, nb int) (counts, []gap) {
	c := counts{}
	var gaps []gap
	last := start
	for _, x := range rs {
		if x.At.Before(start) || !x.At.Before(end) {
			continue
		}
		if x.At.Sub(last) > NodeGapBound {
			gaps = append(gaps, gap{last, x.At})
		}
		last = x.At
		if i, ok := bucketOf(x.At, start, nb); ok && x.N > 0 {
			c.add(numberOf(x.First), i, nb, float64(x.N)/bucket.Seconds())
		}
	}
	if end.Sub(last) > NodeGapBound {
		gaps = append(gaps, gap{last, end})
	}
	return c, gaps
}

// fenceAt is when the region's issuing stopped at the fence in a store-down phase, as the caller
// saw it: its first ID from its peer after the fault (its region's generators refused it), else
// the latest the fence can come by the scenario's timings (the fault plus lease - margin).
func fenceAt(rs []run, p *phaseRun, sc *Scenario, peer int) (time.Time, bool) {
	for _, x := range rs {
		if x.N > 0 && in(x.At, p.FaultAt, p.HealthyAt) && numberOf(x.First) == peer {
			return x.At, true
		}
	}
	return p.FaultAt.Add(sc.Lease.D() - sc.Margin.D()), false
}

// renderTimeline draws the run as an SVG: the phases along the top, each with its name, fault,
// region and its checks' result; then per region its caller (IDs per second, a line per issuing
// region number; beneath, the stretches it was on its peer and the batches it hedged there while
// it stayed home) and its embedded node (IDs per second, and any gap over NodeGapBound); its
// region's faults shaded, the fence marked in a store-down phase, and a time axis with a tick
// every few seconds.
func renderTimeline(s *stack, runs []*phaseRun, res *Result) []byte {
	start, end := runs[0].Start, runs[len(runs)-1].End
	nb := max(1, int(end.Sub(start)/bucket)) // whole buckets: a last one cut short would look like a drop
	p := &svgPic{t0: start, total: math.Max(1, end.Sub(start).Seconds()), plotL: picLeft, plotW: picWidth - picLeft - picRight}
	regions := sortedRegions(s)
	registry := slices.ContainsFunc(runs, func(r *phaseRun) bool { return r.Fault == RegistryDown })

	type rec struct {
		s    *series
		runs []run
	}
	callers, nodes := map[string]rec{}, map[string]rec{}
	for _, se := range s.rec.all {
		rs, _ := se.snapshot()
		slices.SortStableFunc(rs, func(a, b run) int { return a.At.Compare(b.At) })
		if se.kind == kindCaller {
			callers[se.region] = rec{se, rs}
		} else {
			nodes[se.region] = rec{se, rs}
		}
	}
	cps := map[string]callerPic{}
	ncs, gaps := map[string]counts{}, map[string][]gap{}
	var cmax, nmax float64
	numbers := map[int]bool{}
	for _, r := range regions {
		peer := -1
		if pr := s.regions[r.peer]; pr != nil {
			peer = pr.number
		}
		if c, ok := callers[r.name]; ok {
			cp := callerPicture(c.runs, r.number, peer, start, end, nb)
			cps[r.name] = cp
			cmax = max(cmax, cp.lines.max())
			for _, h := range cp.hedges {
				cmax = max(cmax, h.rate)
			}
			for n := range cp.lines {
				numbers[n] = true
			}
		}
		if n, ok := nodes[r.name]; ok {
			ncs[r.name], gaps[r.name] = nodeCounts(n.runs, start, end, nb)
			nmax = max(nmax, ncs[r.name].max())
		}
	}
	cmax, nmax = niceCeil(cmax*1.1), niceCeil(nmax*1.1)

	blockH := callerH + laneH + 4 + nodeH + regionGap
	top := 88.0 // title and legend (the region numbers' colours, then the marks)
	if s.cust != nil {
		top += 18 // the customers' marks
	}
	bandY := top
	rowsY := bandY + phaseBandH + 8
	if registry {
		rowsY += registryH + 8
	}
	axisY := rowsY + float64(len(regions)*blockH) - regionGap + 4
	custY := axisY
	if s.cust != nil {
		axisY += custHeadH + float64(len(s.cust.names)*(custH+custGap))
	}
	height := axisY + 44
	const maxListed = 10 // failed checks listed under the axis
	if n := len(res.Failures); n > 0 {
		height += 22 + 15*float64(min(n, maxListed+1))
	}

	p.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="%s">`+"\n",
		picWidth, height, picWidth, height, fontFamily)
	p.f(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")

	// Title: the run and its result.
	verdict := "every check passed"
	if n := len(res.Failures); n > 0 {
		verdict = fmt.Sprintf("%d checks FAILED", n)
		if res.Inconclusive {
			verdict += " (inconclusive: this machine stalled)"
		}
	}
	p.text(12, 22, 15, 0, `font-weight="bold" class="title"`,
		fmt.Sprintf("game day %q, seed %d: %s IDs checked, %s", s.sc.Name, res.Seed, thousands(res.IDs), verdict))

	// Legend.
	lx, ly := 12.0, 44.0
	legendItem := func(w float64, draw func(x, y float64), label string) {
		draw(lx, ly)
		p.text(lx+w+4, ly+4, 11, 0, `class="legend"`, label)
		lx += w + 10 + float64(len(label))*11*charWidth + 14
	}
	var ns []int
	for n := range numbers {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	for _, n := range ns {
		legendItem(18, func(x, y float64) {
			p.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", x, y, x+18, y, numberColor(n))
		}, fmt.Sprintf("IDs of region %d (%s)", n, s.regionOf(n)))
	}
	lx, ly = 12, ly+18
	legendItem(18, func(x, y float64) {
		p.f(`<rect x="%.1f" y="%.1f" width="18" height="8" fill="#555555"/>`+"\n", x, y-4)
	}, "on its peer (moved)")
	legendItem(10, func(x, y float64) { p.diamond(x+5, y, "#555555", "") }, "hedged batch (peer's IDs, stayed home)")
	legendItem(14, func(x, y float64) {
		p.f(`<rect x="%.1f" y="%.1f" width="14" height="10" fill="#e63c3c" fill-opacity="0.22"/>`+"\n", x, y-5)
	}, "its region down")
	legendItem(8, func(x, y float64) {
		p.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000" stroke-width="2"/>`+"\n", x+4, y-6, x+4, y+6)
	}, "fence")
	legendItem(14, func(x, y float64) {
		p.f(`<rect x="%.1f" y="%.1f" width="14" height="10" fill="#ff9900" fill-opacity="0.45"/>`+"\n", x, y-5)
	}, fmt.Sprintf("node without a batch > %v", NodeGapBound))
	if s.cust != nil {
		lx, ly = 12, ly+18
		for _, m := range []struct{ color, label string }{{custOK, "customer requests answered"}, {custErr, "customer errors (503, 504, no answer)"},
			{custDownC, "to a lost region (not counted)"}, {cust404, "404 for a known public ID"}} {
			legendItem(8, func(x, y float64) {
				p.f(`<rect x="%.1f" y="%.1f" width="6" height="12" fill="%s"/>`+"\n", x+1, y-6, m.color)
			}, m.label)
		}
	}

	// Phases: a segment each along the top, with a line down through every row at its start.
	for i, ph := range runs {
		x0, x1 := p.x(ph.Start), p.x(ph.End)
		w := x1 - x0
		result, failed := phaseVerdict(res, ph.Name)
		fill := "#f2f2f2"
		if i%2 == 1 {
			fill = "#e6e6e6"
		}
		where := ph.Region
		if where == "" {
			where = "all regions"
		}
		title := fmt.Sprintf("%s: %s %s, %s-%s: %s", ph.Name, ph.Fault, where, secs(ph.Start.Sub(start)), secs(ph.End.Sub(start)), result)
		for _, f := range failed {
			title += "\n" + f
		}
		p.f(`<g class="phase" data-phase="%s" data-result="%s"><title>%s</title>`+"\n", esc(ph.Name), result, esc(title))
		p.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" stroke="#ffffff"/>`+"\n", x0, bandY, w, phaseBandH, fill)
		tx, tw := x0+4, w-8
		p.text(tx, bandY+15, 12, tw, `font-weight="bold" class="phase-name"`, ph.Name)
		p.text(tx, bandY+30, 11, tw, `class="phase-fault"`, string(ph.Fault))
		p.text(tx, bandY+44, 11, tw, `class="phase-region"`, where)
		color, weight := "#1a7f37", "normal"
		if result != "ok" {
			color, weight = "#cf222e", "bold"
		}
		p.text(tx, bandY+61, 12, tw, fmt.Sprintf(`fill="%s" font-weight="%s" class="phase-result"`, color, weight), result)
		p.f("</g>\n")
		if i > 0 {
			p.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999999" stroke-dasharray="3,3"/>`+"\n", x0, bandY+phaseBandH, x0, axisY)
		}
	}

	// Ticks: a faint line through every row.
	step := axisStep(p.total)
	for sec := 0.0; sec <= p.total+1e-9; sec += step {
		x := p.xs(sec)
		p.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eeeeee"/>`+"\n", x, rowsY, x, axisY)
	}

	// The registry, when a phase takes it down.
	if registry {
		y := bandY + phaseBandH + 8
		p.text(12, y+11, 12, 0, `font-weight="bold" class="row-name"`, "registry")
		p.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#d8eed8"/>`+"\n", p.plotL, y, p.plotW, registryH)
		for _, ph := range runs {
			if ph.Fault != RegistryDown || ph.RegistryDownAt.IsZero() {
				continue
			}
			upAt := ph.RegistryUpAt
			if upAt.IsZero() {
				upAt = ph.End
			}
			x0, x1 := p.x(ph.RegistryDownAt), p.x(upAt)
			p.f(`<g class="registry-down"><title>the registry down %s-%s</title>`, secs(ph.RegistryDownAt.Sub(start)), secs(upAt.Sub(start)))
			p.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#e63c3c" fill-opacity="0.6"/>`, x0, y, x1-x0, registryH)
			p.text(x0+3, y+11, 10, x1-x0-6, `fill="#ffffff"`, "registry down")
			p.f("</g>\n")
		}
	}

	// The regions.
	for ri, r := range regions {
		cy := rowsY + float64(ri*blockH)
		ly := cy + callerH
		ny := ly + laneH + 4
		peer := s.regions[r.peer]
		peerNum := -1
		if peer != nil {
			peerNum = peer.number
		}
		cname, nname := "caller-"+r.name, "node-"+r.name
		if c, ok := callers[r.name]; ok {
			cname = c.s.name
		}
		if n, ok := nodes[r.name]; ok {
			nname = n.s.name
		}

		// Its faults shaded over its caller, lane and node (the public-ID faults on its customer row).
		for _, ph := range runs {
			if ph.Region != r.name || ph.Fault == Steady || ph.Fault.customer() || ph.FaultAt.IsZero() {
				continue
			}
			to := ph.HealthyAt
			if to.IsZero() || to.Before(ph.FaultAt) {
				to = ph.End
			}
			x0, x1 := p.x(ph.FaultAt), p.x(to)
			p.f(`<rect class="fault" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e63c3c" fill-opacity="0.15"><title>%s: %s %s, %s to healthy again at %s</title></rect>`+"\n",
				x0, cy, math.Max(1, x1-x0), float64(callerH+laneH+4+nodeH), esc(ph.Name), ph.Fault, r.name, secs(ph.FaultAt.Sub(start)), secs(to.Sub(start)))
		}

		// The caller.
		p.text(12, cy+16, 12, picLeft-50, `font-weight="bold" class="row-name"`, cname)
		p.text(12, cy+31, 10, picLeft-50, `fill="#555555"`, fmt.Sprintf("region %d, peer %s", r.number, r.peer))
		p.axisY(cy, callerH, cmax)
		if cp, ok := cps[r.name]; ok {
			var lines []int
			for n := range cp.lines {
				lines = append(lines, n)
			}
			slices.Sort(lines)
			for _, n := range lines {
				p.polyline(cp.lines[n], cy, callerH, cmax, numberColor(n), 1.4, fmt.Sprintf(`class="ids" data-who="%s" data-number="%d"`, esc(cname), n))
			}
			// Beneath: on its peer (a move), and the batches it hedged there while it stayed home.
			p.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#fafafa" stroke="#dddddd"/>`+"\n", p.plotL, ly+1, p.plotW, laneH-2)
			for _, m := range cp.moves {
				x0, x1 := p.x(m[0]), p.x(m[1])
				p.f(`<rect class="move" data-who="%s" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s on its peer %s, %s-%s</title></rect>`+"\n",
					esc(cname), x0, ly+1, math.Max(1.5, x1-x0), laneH-2, numberColor(peerNum), esc(cname), esc(r.peer), secs(m[0].Sub(start)), secs(m[1].Sub(start)))
				if x1-x0 > 70 {
					p.text(x0+3, ly+laneH-3, 8.5, x1-x0-6, `fill="#ffffff"`, "on "+r.peer)
				}
			}
			var hs []int
			for i := range cp.hedges {
				hs = append(hs, i)
			}
			slices.Sort(hs)
			for _, i := range hs {
				h := cp.hedges[i]
				x := p.xs((float64(i) + 0.5) * bucket.Seconds())
				p.f(`<g class="hedge" data-who="%s"><title>%s hedged %d IDs from %s at %s, on its own region</title>`, esc(cname), esc(cname), h.ids, esc(r.peer), secs(h.at.Sub(start)))
				p.diamond(x, cy+callerH-h.rate/cmax*callerH, numberColor(peerNum), "")
				p.diamond(x, ly+laneH/2, numberColor(peerNum), "")
				p.f("</g>\n")
			}
		}

		// The node.
		p.text(12, ny+13, 11, picLeft-50, `font-weight="bold" class="row-name"`, nname)
		p.text(12, ny+26, 9.5, picLeft-50, `fill="#555555"`, "embedded, numbers 64-65")
		p.axisY(ny, nodeH, nmax)
		if nc, ok := ncs[r.name]; ok {
			var lines []int
			for n := range nc {
				lines = append(lines, n)
			}
			slices.Sort(lines)
			for _, n := range lines {
				p.polyline(nc[n], ny, nodeH, nmax, numberColor(n), 1.2, fmt.Sprintf(`class="node-ids" data-who="%s" data-number="%d"`, esc(nname), n))
			}
			for _, g := range gaps[r.name] {
				x0, x1 := p.x(g.from), p.x(g.to)
				d := g.to.Sub(g.from)
				p.f(`<g class="node-gap" data-who="%s"><title>%s: no batch for %s, %s-%s</title>`, esc(nname), esc(nname), ms(d), secs(g.from.Sub(start)), secs(g.to.Sub(start)))
				p.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#ff9900" fill-opacity="0.45"/>`, x0, ny, math.Max(1, x1-x0), nodeH)
				p.text(x0+3, ny+nodeH/2+4, 10, x1-x0-6, "", fmt.Sprintf("no batch %s", secs(d)))
				p.f("</g>\n")
			}
		}

		// The fence, in a store-down phase of its region: where the caller's region stopped
		// issuing (its first ID from the peer) and where the node's last batch before its gap came.
		for _, ph := range runs {
			if ph.Fault != StoreDown || ph.Region != r.name || ph.FaultAt.IsZero() {
				continue
			}
			if c, ok := callers[r.name]; ok {
				at, seen := fenceAt(c.runs, ph, s.sc, peerNum)
				label := fmt.Sprintf("fence +%s", secs(at.Sub(ph.FaultAt)))
				what := "its region's generators stopped at their fence: its first ID from the peer"
				if !seen {
					label = fmt.Sprintf("fence due +%s", secs(at.Sub(ph.FaultAt)))
					what = "the latest the fence comes (lease - margin after the fault)"
				}
				p.fence(cname, p.x(at), cy, float64(callerH+laneH), label, fmt.Sprintf("%s: %s, %s after the store stopped", cname, what, ms(at.Sub(ph.FaultAt))))
			}
			for _, g := range gaps[r.name] {
				if in(g.from, ph.FaultAt, ph.End) {
					p.fence(nname, p.x(g.from), ny, nodeH, fmt.Sprintf("fence +%s", secs(g.from.Sub(ph.FaultAt))),
						fmt.Sprintf("%s stopped at its fence %s after its store stopped, %s without a batch", nname, ms(g.from.Sub(ph.FaultAt)), ms(g.to.Sub(g.from))))
					break
				}
			}
		}

		// A row whose check failed in a phase: outlined over that phase.
		for i, ph := range runs {
			if i >= len(res.Phases) {
				break
			}
			for _, row := range res.Phases[i].Rows {
				if row.Check != "FAIL" {
					continue
				}
				var y, h float64
				switch row.Who {
				case cname:
					y, h = cy, float64(callerH+laneH)
				case nname:
					y, h = ny, nodeH
				default:
					continue
				}
				var why []string
				for _, f := range res.Failures {
					if strings.HasPrefix(f, ph.Name+": ") && strings.Contains(f, row.Who) {
						why = append(why, f)
					}
				}
				p.f(`<rect class="failed-row" data-who="%s" data-phase="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#cf222e" stroke-width="2"><title>%s</title></rect>`+"\n",
					esc(row.Who), esc(ph.Name), p.x(ph.Start), y, p.x(ph.End)-p.x(ph.Start), h, esc(strings.Join(why, "\n")))
			}
		}
	}

	if s.cust != nil {
		p.customerRows(s, runs, res, custY, start, end, nb)
	}

	// The time axis.
	p.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333333"/>`+"\n", p.plotL, axisY, p.plotL+p.plotW, axisY)
	for sec := 0.0; sec <= p.total+1e-9; sec += step {
		x := p.xs(sec)
		p.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333333"/>`+"\n", x, axisY, x, axisY+5)
		p.text(x-8, axisY+18, 11, 0, `class="tick-label"`, fmt.Sprintf("%g s", sec))
	}
	p.text(p.plotL+p.plotW/2-110, axisY+36, 12, 0, `class="axis-title"`, "seconds since the first phase began")

	// The failed checks, for a reader of the picture alone.
	if n := len(res.Failures); n > 0 {
		y := axisY + 62
		p.text(12, y, 12, 0, `font-weight="bold" fill="#cf222e"`, fmt.Sprintf("%d checks failed:", n))
		for i, f := range res.Failures {
			if i == maxListed {
				p.text(24, y+15*float64(i+1), 11, 0, `class="failure"`, fmt.Sprintf("… and %d more (table.txt)", n-maxListed))
				break
			}
			p.text(24, y+15*float64(i+1), 11, 0, `class="failure"`, f)
		}
	}
	p.f("</svg>\n")
	return []byte(p.b.String())
}

// axisY writes a row's scale: 0 and top at its left edge, with a baseline.
func (p *svgPic) axisY(y float64, h int, top float64) {
	p.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#bbbbbb"/>`+"\n", p.plotL, y+float64(h), p.plotL+p.plotW, y+float64(h))
	p.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#bbbbbb"/>`+"\n", p.plotL, y, p.plotL, y+float64(h))
	p.text(p.plotL-40, y+9, 9, 0, `fill="#555555" class="scale"`, rateLabel(top))
	p.text(p.plotL-12, y+float64(h), 9, 0, `fill="#555555"`, "0")
}

func (p *svgPic) polyline(vs []float64, y float64, h int, top float64, color string, width float64, attrs string) {
	var pts strings.Builder
	for i, v := range vs {
		fmt.Fprintf(&pts, "%.1f,%.1f ", p.xs((float64(i)+0.5)*bucket.Seconds()), y+float64(h)-math.Min(v, top)/top*float64(h))
	}
	p.f(`<polyline %s fill="none" stroke="%s" stroke-width="%.1f" stroke-linejoin="round" points="%s"/>`+"\n", attrs, color, width, strings.TrimSpace(pts.String()))
}

func (p *svgPic) diamond(x, y float64, color, attrs string) {
	const r = 4.0
	p.f(`<path %s d="M%.1f %.1f L%.1f %.1f L%.1f %.1f L%.1f %.1f Z" fill="#ffffff" stroke="%s" stroke-width="1.5"/>`, attrs, x, y-r, x+r, y, x, y+r, x-r, y, color)
}

func (p *svgPic) fence(who string, x, y, h float64, label, title string) {
	p.f(`<g class="fence" data-who="%s"><title>%s</title><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000" stroke-width="2"/>`, esc(who), esc(title), x, y, x, y+h)
	p.text(x+3, y+10, 10, 0, `font-weight="bold"`, label)
	p.f("</g>\n")
}

// thousands writes n with a comma every three digits.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// plotTimeline writes the picture of the run (renderTimeline) to file.
func plotTimeline(s *stack, runs []*phaseRun, res *Result, file string) error {
	return os.WriteFile(file, renderTimeline(s, runs, res), 0o644)
}

// The customer rows' marks.
const (
	custOK    = "#2da44e"
	custErr   = "#cf222e"
	custDownC = "#bbbbbb"
	cust404   = "#000000"
)

// custBucket is one region's customer requests in one bucket of the picture.
type custBucket struct{ ok, errs, down, notFound int }

// customerRows draws, per customer region, the requests it answered (publishes at its internal
// API, opens at its gateway, from every region's customer) in each bucket: a green mark when all
// were answered, red over it in proportion to the errors, grey for those sent while it was lost,
// black for a 404 of a known public ID; its public-ID faults shaded, and for a region lost for
// good the moment it took customers again.
func (p *svgPic) customerRows(s *stack, runs []*phaseRun, res *Result, y0 float64, start, end time.Time, nb int) {
	events, _ := s.cust.rec.snapshot()
	var downs []custDown
	for _, ph := range runs {
		if ph.Fault == PublicIDLost && !ph.FaultAt.IsZero() {
			to := ph.ReadyAt
			if to.IsZero() {
				to = ph.End
			}
			downs = append(downs, custDown{ph.Region, ph.FaultAt, to})
		}
	}
	by := map[string][]custBucket{}
	for _, n := range s.cust.names {
		by[n] = make([]custBucket, nb)
	}
	for _, e := range events {
		if e.Kind == 'n' {
			continue
		}
		i, ok := bucketOf(e.At, start, nb)
		bs := by[e.To]
		if !ok || bs == nil {
			continue
		}
		b := &bs[i]
		down := false
		for _, d := range downs {
			if d.region == e.To && e.At.Add(-e.Dur).Before(d.to) && !e.At.Before(d.from) {
				down = true
			}
		}
		switch {
		case e.Status == 200 && (e.Kind == 'a' || e.Why == "ok"):
			b.ok++
		case e.Kind == 'r' && e.Status == 404:
			b.notFound++
		case down:
			b.down++
		default:
			b.errs++
		}
	}
	p.text(12, y0+15, 12, 0, `font-weight="bold" class="row-name"`, "customers (public IDs)")
	p.text(picLeft, y0+15, 10, 0, `fill="#555555"`, "per region: its internal API's publishes and its gateway's opens, from every region's customer, per 500 ms")
	for ri, n := range s.cust.names {
		y := y0 + custHeadH + float64(ri*(custH+custGap))
		p.text(12, y+15, 11, picLeft-50, `font-weight="bold" class="row-name"`, "customers at "+n)
		p.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#fafafa" stroke="#dddddd"/>`+"\n", p.plotL, y, p.plotW, custH)
		var fences []func()
		for _, ph := range runs {
			involved := ph.Region == n || ph.Fault == PublicIDPartition && s.cust.regions[ph.Region].peer == n
			if !ph.Fault.customer() || ph.FaultAt.IsZero() || !involved {
				continue
			}
			to := ph.RestoreAt
			if ph.Fault == PublicIDLost && !ph.ReadyAt.IsZero() {
				to = ph.ReadyAt
			}
			if to.IsZero() {
				to = ph.End
			}
			x0, x1 := p.x(ph.FaultAt), p.x(to)
			p.f(`<rect class="fault" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#e63c3c" fill-opacity="0.15"><title>%s: %s %s, %s-%s</title></rect>`+"\n",
				x0, y, math.Max(1, x1-x0), custH, esc(ph.Name), ph.Fault, ph.Region, secs(ph.FaultAt.Sub(start)), secs(to.Sub(start)))
			if ph.Fault == PublicIDLost && !ph.ReadyAt.IsZero() {
				fences = append(fences, func() {
					p.fence("customers-"+n, x1, y, custH, fmt.Sprintf("taking customers +%s", secs(ph.ReadyAt.Sub(ph.RestoreAt))),
						fmt.Sprintf("%s back empty, filled and taking customers %s after the restore", n, ms(ph.ReadyAt.Sub(ph.RestoreAt))))
				})
			}
		}
		w := math.Max(1, p.plotW/float64(nb)-0.6)
		for i, b := range by[n] {
			total := b.ok + b.errs + b.down + b.notFound
			if total == 0 {
				continue
			}
			x := p.xs(float64(i) * bucket.Seconds())
			title := fmt.Sprintf("customers at %s, %s: %d answered, %d errors, %d while lost, %d 404 for a known ID", n, secs(bucketStart(i)), b.ok, b.errs, b.down, b.notFound)
			p.f(`<g class="customer-mark" data-region="%s" data-ok="%d" data-errors="%d"><title>%s</title>`, esc(n), b.ok, b.errs, esc(title))
			color := custOK
			switch {
			case b.notFound > 0:
				color = cust404
			case b.ok == 0 && b.errs == 0:
				color = custDownC
			}
			p.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" fill-opacity="0.8"/>`, x, y+2, w, custH-4, color)
			if b.errs > 0 {
				h := math.Max(3, float64(custH-4)*float64(b.errs)/float64(total))
				p.f(`<rect class="customer-error" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x, y+2, w, h, custErr)
			}
			p.f("</g>\n")
		}
		for _, f := range fences {
			f()
		}
		for i, ph := range runs {
			if i >= len(res.Phases) || res.Phases[i].Customers == nil {
				continue
			}
			for _, row := range res.Phases[i].Customers.Rows {
				if row.Check == "FAIL" && row.Who == "customer-"+n {
					p.f(`<rect class="failed-row" data-who="%s" data-phase="%s" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="none" stroke="#cf222e" stroke-width="2"/>`+"\n",
						esc(row.Who), esc(ph.Name), p.x(ph.Start), y, p.x(ph.End)-p.x(ph.Start), custH)
				}
			}
		}
	}
}

func bucketStart(i int) time.Duration { return time.Duration(i) * bucket }
