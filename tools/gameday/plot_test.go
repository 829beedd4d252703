package gameday

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// synthRun is a small recorded game day, made up: two regions (us-east-1, number 0, and
// us-west-2, number 1, each the other's peer), a caller and an embedded node each, 1000 IDs a
// second in lines of 100 every 100 ms, through four phases:
//
//	steady           0-10 s  caller-us-west-2 hedges one batch to us-east-1 at 5 s (it stays home)
//	region killed   10-30 s  us-east-1's fleet down 10-22 s: its caller on us-west-2 10.3-22.5 s
//	store down      30-55 s  us-west-2's store down 30-50 s: its node stops at its fence at 37 s
//	                         (no batch until 50.5 s), its caller on us-east-1 37.5-50.7 s
//	steady after    55-60 s  caller-us-east-1 moves to its peer at 57 s with its region up: FAILED
type synthRun struct {
	s    *stack
	runs []*phaseRun
	t0   time.Time
	ts   map[*series]int64 // each series' next timestamp (ms), so no two of its batches share one
}

func newSynthRun(t *testing.T) *synthRun {
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	sc := &Scenario{Name: "synthetic", GeneratorsPerRegion: 2, Lease: Duration(15 * time.Second), Renew: Duration(5 * time.Second),
		Margin: Duration(3 * time.Second), Rate: 1000, Batch: 100, NodeRate: 1000, BackHome: Duration(3 * time.Second)}
	s := &stack{sc: sc, rec: &recorder{}, regions: map[string]*regionProcs{
		"us-east-1": {name: "us-east-1", number: 0, peer: "us-west-2"},
		"us-west-2": {name: "us-west-2", number: 1, peer: "us-east-1"},
	}}
	runs := []*phaseRun{
		{Phase: Phase{Name: "steady", Fault: Steady}, Start: at(0), End: at(10)},
		{Phase: Phase{Name: "region killed", Fault: Kill, Region: "us-east-1"}, Start: at(10), End: at(30),
			FaultAt: at(10), RestoreAt: at(21.8), HealthyAt: at(22)},
		{Phase: Phase{Name: "store down", Fault: StoreDown, Region: "us-west-2"}, Start: at(30), End: at(55),
			FaultAt: at(30), RestoreAt: at(50), HealthyAt: at(50.3)},
		{Phase: Phase{Name: "steady after", Fault: Steady}, Start: at(55), End: at(60)},
	}
	r := &synthRun{s: s, runs: runs, t0: t0, ts: map[*series]int64{}}
	east := s.rec.series("caller-us-east-1", "us-east-1", kindCaller)
	west := s.rec.series("caller-us-west-2", "us-west-2", kindCaller)
	nodeEast := s.rec.series("node-us-east-1", "us-east-1", kindNode)
	nodeWest := s.rec.series("node-us-west-2", "us-west-2", kindNode)
	machine := map[*series]int{east: 1, west: 2, nodeEast: 64, nodeWest: 65}
	for i := range 600 { // a line every 100 ms
		sec := float64(i) / 10
		a := at(sec)
		// caller-us-east-1
		switch {
		case sec >= 10.3 && sec < 22.5:
			r.add(t, east, a, 1, 1, machine[east])
		case sec >= 57 && sec < 57.5:
			r.add(t, east, a, 1, 1, machine[east])
		default:
			r.add(t, east, a, 0, 0, machine[east])
		}
		// caller-us-west-2
		switch {
		case sec >= 5 && sec < 5.1:
			r.add(t, west, a, 0, 0, machine[west]) // hedged: the peer's IDs, the client on its region
		case sec >= 37.5 && sec < 50.7:
			r.add(t, west, a, 0, 1, machine[west])
		default:
			r.add(t, west, a, 1, 0, machine[west])
		}
		r.add(t, nodeEast, a, 0, 0, machine[nodeEast])
		if sec < 37 || sec >= 50.5 {
			r.add(t, nodeWest, a, 1, 0, machine[nodeWest])
		}
	}
	return r
}

// add records 100 IDs of region number n received at a.
func (r *synthRun) add(t *testing.T, se *series, a time.Time, n, active, machine int) {
	t.Helper()
	ts := max(r.ts[se], a.UnixMilli()-idcore.EpochUnixMs)
	r.ts[se] = ts + 1
	id, err := v2.Compose(idcore.Parts{Timestamp: ts, Region: n, Machine: machine})
	if err != nil {
		t.Fatal(err)
	}
	se.add(a, time.Millisecond, active, int64(id), 100)
}

// elem is an element of the SVG with its attributes and its text (its own and its children's).
type elem struct {
	name  string
	attr  map[string]string
	text  string
	inner []*elem
}

func parseSVG(t *testing.T, b []byte) *elem {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(string(b)))
	root := &elem{name: "document"}
	stack := []*elem{root}
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			e := &elem{name: tk.Name.Local, attr: map[string]string{}}
			for _, a := range tk.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			parent := stack[len(stack)-1]
			parent.inner = append(parent.inner, e)
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			for _, e := range stack[1:] {
				e.text += string(tk)
			}
		}
	}
	return root
}

// all returns the elements below e whose class is class.
func (e *elem) all(class string) []*elem {
	var out []*elem
	for _, c := range e.inner {
		if slices.Contains(strings.Fields(c.attr["class"]), class) {
			out = append(out, c)
		}
		out = append(out, c.all(class)...)
	}
	return out
}

func texts(es []*elem) []string {
	var out []string
	for _, e := range es {
		out = append(out, strings.TrimSpace(e.text))
	}
	return out
}

// label is the text of e's first text element.
func label(e *elem) string {
	for _, c := range e.inner {
		if c.name == "text" {
			return strings.TrimSpace(c.text)
		}
	}
	return ""
}

func who(es []*elem, name string) []*elem {
	var out []*elem
	for _, e := range es {
		if e.attr["data-who"] == name {
			out = append(out, e)
		}
	}
	return out
}

func TestTimelinePicture(t *testing.T) {
	r := newSynthRun(t)
	res := analyse(r.s, r.runs, 7)
	// The checks found what the run was made to show: the last phase's move while the region was up.
	for _, f := range res.Failures {
		if !strings.HasPrefix(f, "steady after: caller-us-east-1 ") {
			t.Errorf("a failure the synthetic run was not made to have: %s", f)
		}
	}
	if len(res.Failures) == 0 {
		t.Fatal("the checks passed a caller that moved to its peer while its region was up")
	}
	b := renderTimeline(r.s, r.runs, res)
	if os.Getenv("GAMEDAY_PICTURE") != "" { // to look at it
		if err := os.WriteFile(filepath.Join(os.Getenv("GAMEDAY_PICTURE"), "synthetic.svg"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svg := parseSVG(t, b)

	// Each phase named, with its fault, region and result.
	if got, want := texts(svg.all("phase-name")), []string{"steady", "region killed", "store down", "steady after"}; !slices.Equal(got, want) {
		t.Errorf("phase names %q, want %q", got, want)
	}
	if got, want := texts(svg.all("phase-fault")), []string{"steady", "kill", "store-down", "steady"}; !slices.Equal(got, want) {
		t.Errorf("phase faults %q, want %q", got, want)
	}
	if got, want := texts(svg.all("phase-region")), []string{"all regions", "us-east-1", "us-west-2", "all regions"}; !slices.Equal(got, want) {
		t.Errorf("phase regions %q, want %q", got, want)
	}
	if got, want := texts(svg.all("phase-result")), []string{"ok", "ok", "ok", "FAILED"}; !slices.Equal(got, want) {
		t.Errorf("phase results %q, want %q", got, want)
	}
	if got := svg.all("phase")[3].all("phase-result"); len(got) != 1 || !strings.Contains(svg.all("phase")[3].text, "moved to its peer") {
		t.Errorf("the failed phase's title does not give its failed checks: %q", svg.all("phase")[3].text)
	}
	if title := texts(svg.all("title")); len(title) != 1 || !strings.Contains(title[0], "checks FAILED") {
		t.Errorf("title %q", title)
	}

	// A row per caller and per embedded node, each region's node under its caller.
	if got, want := texts(svg.all("row-name")), []string{"caller-us-east-1", "node-us-east-1", "caller-us-west-2", "node-us-west-2"}; !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	for _, n := range []string{"node-us-east-1", "node-us-west-2"} {
		if len(who(svg.all("node-ids"), n)) != 1 {
			t.Errorf("%s has no line of IDs per second", n)
		}
	}

	// The hedged batch is a mark of its own, not a move and not in the peer's line; the moves are
	// the three stretches on the peer.
	hedges := svg.all("hedge")
	if len(hedges) != 1 || hedges[0].attr["data-who"] != "caller-us-west-2" || !strings.Contains(hedges[0].text, "hedged 100 IDs from us-east-1 at 5.0s") {
		t.Errorf("hedge marks: %d, want 1 (caller-us-west-2 at 5.0s): %q", len(hedges), texts(hedges))
	}
	moves := svg.all("move")
	if got := texts(moves); !slices.Equal(got, []string{
		"caller-us-east-1 on its peer us-west-2, 10.3s-22.5s",
		"caller-us-east-1 on its peer us-west-2, 57.0s-57.5s",
		"caller-us-west-2 on its peer us-east-1, 37.5s-50.7s",
	}) {
		t.Errorf("moves %q", got)
	}
	for _, l := range who(svg.all("ids"), "caller-us-west-2") {
		if l.attr["data-number"] != "0" {
			continue
		}
		pts := strings.Fields(l.attr["points"])
		base := strings.Split(pts[0], ",")[1]
		for i, pt := range pts[:74] { // before 37 s: the hedged batch at 5 s is not in the line
			if strings.Split(pt, ",")[1] != base {
				t.Errorf("caller-us-west-2's line of region 0 leaves the baseline at bucket %d (%s), before its move: the hedge drawn as a move", i, pt)
				break
			}
		}
	}

	// The fence in the store-down phase: on its caller (its first ID from the peer, 7.5 s after the
	// store stopped) and on its node (its last batch before the gap, 6.9 s), and nowhere else.
	fences := svg.all("fence")
	var fenceLabels []string
	for _, f := range fences {
		fenceLabels = append(fenceLabels, f.attr["data-who"]+": "+label(f))
	}
	if want := []string{"caller-us-west-2: fence +7.5s", "node-us-west-2: fence +6.9s"}; !slices.Equal(fenceLabels, want) {
		t.Errorf("fences %q, want %q", fenceLabels, want)
	}
	if gaps := svg.all("node-gap"); len(gaps) != 1 || gaps[0].attr["data-who"] != "node-us-west-2" || label(gaps[0]) != "no batch 13.6s" {
		t.Errorf("node gaps %q, want node-us-west-2's 13.6 s", texts(gaps))
	}

	// The failed checks listed under the picture, and outlined on their row in their phase.
	if got := texts(svg.all("failure")); !slices.Equal(got, res.Failures) {
		t.Errorf("failures listed %q, want %q", got, res.Failures)
	}
	if fr := svg.all("failed-row"); len(fr) != 1 || fr[0].attr["data-who"] != "caller-us-east-1" || fr[0].attr["data-phase"] != "steady after" {
		t.Errorf("failed rows: %d, want caller-us-east-1 in steady after", len(fr))
	}

	// A tick every 5 s over the 60 s, labelled.
	var want []string
	for s := 0; s <= 60; s += 5 {
		want = append(want, fmt.Sprintf("%d s", s))
	}
	if got := texts(svg.all("tick-label")); !slices.Equal(got, want) {
		t.Errorf("axis labels %q, want %q", got, want)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1118905: "1,118,905", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestAxisStep(t *testing.T) {
	for _, tt := range []struct{ total, step float64 }{{17, 2}, {60, 5}, {113, 10}, {150, 20}, {400, 30}} {
		if got := axisStep(tt.total); got != tt.step {
			t.Errorf("axisStep(%v) = %v, want %v", tt.total, got, tt.step)
		}
	}
}

// TestTimelineRegistryDown: the kill phase of the synthetic run made a registry-down phase (the
// registry down 9.5-27 s) in which one generator did not start while the registry was down: the
// phase FAILED with that check, and the registry has a row with its down time.
func TestTimelineRegistryDown(t *testing.T) {
	r := newSynthRun(t)
	p := r.runs[1]
	p.Name, p.Fault = "registry down", RegistryDown
	p.RegistryDownAt, p.RegistryUpAt = r.t0.Add(9500*time.Millisecond), r.t0.Add(27*time.Second)
	p.StartFailures = []string{"generator-us-east-1-2 did not start while the registry was down: generator: registry http://127.0.0.1:1: connection refused"}
	res := analyse(r.s, r.runs, 7)
	want := "registry down: generator-us-east-1-2 did not start while the registry was down: generator: registry http://127.0.0.1:1: connection refused"
	if !slices.Contains(res.Failures, want) {
		t.Fatalf("failures %q, want one %q", res.Failures, want)
	}
	svg := parseSVG(t, renderTimeline(r.s, r.runs, res))
	if got := texts(svg.all("phase-result")); !slices.Equal(got, []string{"ok", "FAILED", "ok", "FAILED"}) {
		t.Errorf("phase results %q", got)
	}
	if got := texts(svg.all("row-name")); len(got) == 0 || got[0] != "registry" {
		t.Errorf("rows %q, want the registry's first", got)
	}
	if down := svg.all("registry-down"); len(down) != 1 || !strings.Contains(down[0].text, "the registry down 9.5s-27.0s") {
		t.Errorf("registry down marks %q", texts(down))
	}
	if !strings.Contains(renderTable(r.s.sc, res, nil), "; the registry down 9.5s-27.0s") {
		t.Error("the table does not give the registry's down time")
	}
	// The summary's line for the phase counts the failed check, though no row of it failed.
	sum := renderSummary(res)
	_, line, _ := strings.Cut(sum, "\n| registry down | registry-down | us-east-1 |")
	line, _, _ = strings.Cut(line, "\n")
	if !strings.HasSuffix(line, "| 1 FAILED |") {
		t.Errorf("the summary's line of the registry-down phase ends %q, want 1 FAILED; summary:\n%s", line, sum)
	}
}

// TestTimelineCustomers: the synthetic run with customers in both regions and a fifth phase,
// us-west-2's public-ID side lost 60-64 s and taking customers again at 66 s. A customer of
// us-east-1 publishes and opens at both gateways every 500 ms: us-west-2's gateway refuses while
// it is lost (not counted), one open is a 503 at 62 s (an error, within the phase's 5 %) and one
// a 404 at 40 s (a failure, whenever it comes).
func TestTimelineCustomers(t *testing.T) {
	r := newSynthRun(t)
	at := func(sec float64) time.Time { return r.t0.Add(time.Duration(sec * float64(time.Second))) }
	r.s.sc.Customers = &Customers{Regions: []string{"us-east-1", "us-west-2"}, Rate: 2, ErrorPct: 5}
	r.s.cust = &customers{names: []string{"us-east-1", "us-west-2"}, rec: &custRecorder{acked: map[string]string{}}, regions: map[string]*custRegion{
		"us-east-1": {name: "us-east-1", number: 0, peer: "us-west-2"},
		"us-west-2": {name: "us-west-2", number: 1, peer: "us-east-1"},
	}}
	lost := &phaseRun{Phase: Phase{Name: "public-ID lost", Fault: PublicIDLost, Region: "us-west-2"}, Start: at(60), End: at(70),
		FaultAt: at(60), RestoreAt: at(64), FillingSeenAt: at(64.5), FilledAt: at(65.8), ReadyAt: at(66), HealthyAt: at(66), BackChecked: 140}
	r.runs = append(r.runs, lost)
	for i := range 140 {
		sec := float64(i) / 2
		pub := fmt.Sprintf("ord_%022d", i)
		r.s.cust.rec.add(custEvent{Kind: 'a', At: at(sec), Dur: 5 * time.Millisecond, From: "us-east-1", To: "us-east-1", Status: 200, Internal: fmt.Sprint(i), Public: pub})
		for _, gw := range []string{"us-east-1", "us-west-2"} {
			e := custEvent{Kind: 'r', At: at(sec + 0.01), Dur: 5 * time.Millisecond, From: "us-east-1", To: gw, Status: 200, Public: pub, Why: "ok"}
			switch {
			case gw == "us-west-2" && sec >= 60 && sec < 66:
				e.Status, e.Why = 0, "refused"
			case gw == "us-east-1" && sec == 62:
				e.Status, e.Why = 503, `{"reason":"store_unavailable"}`
			case gw == "us-west-2" && sec == 40:
				e.Status, e.Why = 404, `{"reason":"not_found"}`
			}
			r.s.cust.rec.add(e)
		}
	}
	res := analyse(r.s, r.runs, 7)
	analyseCustomers(r.s, r.runs, &endCheck{acked: 140, asked: 280}, res)
	var custFailures []string
	for _, f := range res.Failures {
		if strings.Contains(f, "customer") {
			custFailures = append(custFailures, f)
		}
	}
	if len(custFailures) != 1 || !strings.HasPrefix(custFailures[0], "store down: customer-us-east-1: 1 opens of acknowledged public IDs answered 404") {
		t.Errorf("customer failures %q, want the 404 in store down only", custFailures)
	}
	cp := res.Phases[4].Customers
	if cp.Errors != 1 || cp.Rows[0].Down != 12 || cp.Ready != 2*time.Second || cp.Filled != 1800*time.Millisecond || cp.FillingSeen != 500*time.Millisecond {
		t.Errorf("the lost phase's customers: %+v", cp)
	}
	if c := res.Customers; c.Acked != 140 || c.NotFound != 1 || c.Errors != 1 || c.EndMissing != 0 {
		t.Errorf("totals %+v", c)
	}
	svg := parseSVG(t, renderTimeline(r.s, r.runs, res))
	marks := map[string]int{}
	for _, m := range svg.all("customer-mark") {
		marks[m.attr["data-region"]]++
	}
	if marks["us-east-1"] < 100 || marks["us-west-2"] < 100 {
		t.Errorf("customer marks by region %v", marks)
	}
	if got := len(svg.all("customer-error")); got != 1 {
		t.Errorf("%d error marks, want 1 (the 503 at 62 s)", got)
	}
	fences := texts(svg.all("fence"))
	if !slices.ContainsFunc(fences, func(s string) bool {
		return strings.Contains(s, "us-west-2 back empty, filled and taking customers 2s after the restore")
	}) {
		t.Errorf("fences %q, want us-west-2 taking customers", fences)
	}
	table := renderTable(r.s.sc, res, nil)
	if !strings.Contains(table, "us-west-2 back empty: region_filling seen 500ms after the restore, filled 1.8s, taking customers 2s, then answered 140 of 140") {
		t.Errorf("the table's lost phase:\n%s", table)
	}
}
