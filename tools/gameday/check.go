package gameday

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// NodeGapBound is the longest an embedded node may go without a batch while only the fleet of its
// region is lost (its own lease store up): the node does not depend on the fleet at all, so this
// is the machine's scheduling noise, not a wait.
const NodeGapBound = 2 * time.Second

// PhaseResult is one phase's figures.
type PhaseResult struct {
	Name, Fault, Region string
	Start, End          time.Duration    // since the first phase began
	RestoreToHealthy    time.Duration    // lost phases: from the restore to a healthy generator behind the balancer
	MachineStall        time.Duration    // the longest this machine stood still in the phase (watchdog)
	RegistryDown        [2]time.Duration // registry-down: from the registry's kill to its start again
	Rows                []Row
	Customers           *CustomerPhase // the public-ID side, when the scenario has customers
}

// Row is one caller's or embedded node's figures in a phase.
type Row struct {
	Who      string
	IDs      int64
	ByNumber map[int]int64
	// Stall: callers, the longest a call to Next waited; nodes, the longest gap between batches.
	Stall    time.Duration
	ToPeer   time.Duration // the lost region's caller: from the fault to its first ID from the peer (-1: none)
	BackHome time.Duration // the lost region's caller: from its region healthy again to its first ID from it (-1: none)
	Hedged   int64         // callers: IDs from the peer while the client stayed on its own region (hedged refills)
	Errors   int
	Check    string // "ok", or what failed
}

var v2 = idcore.ScheduleV2()

func numberOf(id int64) int {
	d, err := v2.Decode(idcore.ID(id))
	if err != nil {
		return -1
	}
	return d.Region
}

// analyse checks what was recorded against the phases as they ran.
func analyse(s *stack, runs []*phaseRun, seed uint64) *Result {
	res := &Result{Seed: seed}
	fail := func(format string, args ...any) string {
		msg := fmt.Sprintf(format, args...)
		res.Failures = append(res.Failures, msg)
		return msg
	}
	t0 := runs[0].Start
	type recorded struct {
		s    *series
		runs []run
		errs []callerError
	}
	var all []recorded
	for _, se := range s.rec.all {
		rs, es := se.snapshot()
		slices.SortStableFunc(rs, func(a, b run) int { return a.At.Compare(b.At) })
		all = append(all, recorded{se, rs, es})
		for _, r := range rs {
			res.IDs += int64(r.N)
		}
	}
	checkDuplicates(all2series(all, func(r recorded) (string, []run) { return r.s.name, r.runs }), fail)

	for _, p := range runs {
		pr := &PhaseResult{Name: p.Name, Fault: string(p.Fault), Region: p.Region, Start: p.Start.Sub(t0), End: p.End.Sub(t0)}
		if p.lost() {
			pr.RestoreToHealthy = p.HealthyAt.Sub(p.RestoreAt)
		}
		if !p.RegistryDownAt.IsZero() {
			pr.RegistryDown = [2]time.Duration{p.RegistryDownAt.Sub(t0), p.RegistryUpAt.Sub(t0)}
		}
		for _, f := range p.StartFailures {
			fail("%s: %s", p.Name, f)
		}
		res.Phases = append(res.Phases, pr)
		for _, r := range sortedRegions(s) {
			for _, rec := range all {
				if rec.s.region != r.name {
					continue
				}
				var row Row
				if rec.s.kind == kindCaller {
					row = callerRow(s, p, r, rec.runs, rec.errs, fail)
				} else {
					row = nodeRow(p, r, rec.runs, fail)
				}
				row.Who = rec.s.name
				pr.Rows = append(pr.Rows, row)
			}
		}
	}
	return res
}

func all2series[T any](xs []T, f func(T) (string, []run)) map[string][]run {
	out := map[string][]run{}
	for _, x := range xs {
		n, r := f(x)
		out[n] = r
	}
	return out
}

// checkDuplicates finds any ID received twice, by any two series (or one series twice).
func checkDuplicates(by map[string][]run, fail func(string, ...any) string) {
	type span struct {
		lo, hi int64 // [lo, hi)
		who    string
	}
	var spans []span
	for who, rs := range by {
		for _, r := range rs {
			if r.N > 0 {
				spans = append(spans, span{r.First, r.First + int64(r.N), who})
			}
		}
	}
	slices.SortFunc(spans, func(a, b span) int {
		if a.lo != b.lo {
			if a.lo < b.lo {
				return -1
			}
			return 1
		}
		return strings.Compare(a.who, b.who)
	})
	dups := 0
	var first string
	end, endWho := int64(-1), ""
	for _, sp := range spans {
		if sp.lo < end {
			n := min(end, sp.hi) - sp.lo
			dups += int(n)
			if first == "" {
				first = fmt.Sprintf("ID %d received by %s and %s", sp.lo, endWho, sp.who)
			}
		}
		if sp.hi > end {
			end, endWho = sp.hi, sp.who
		}
	}
	if dups > 0 {
		fail("%d duplicate IDs (first: %s)", dups, first)
	}
}

func in(t, from, to time.Time) bool { return !t.Before(from) && t.Before(to) }

// callerRow checks one caller in one phase. Its region is down from the fault to the moment the
// balancer had a healthy generator again; then its IDs come from its own region's number again
// within BackHome. While its region is down it takes IDs from its own number (the buffer, and for
// a store outage, until the fence) and its peer's, and no other; while its region is up, only its
// own.
func callerRow(s *stack, p *phaseRun, r *regionProcs, rs []run, errs []callerError, fail func(string, ...any) string) Row {
	row := Row{ByNumber: map[int]int64{}, ToPeer: -1, BackHome: -1}
	peer := s.regions[r.peer]
	own, peerNum := r.number, -1
	if peer != nil {
		peerNum = peer.number
	}
	lost := p.lost() && p.Region == r.name
	var problems []string
	var wrong, offHome int64
	wrongNums := map[int]bool{}
	var firstOwnBack time.Time
	var movedAt time.Time // the caller on its peer while its region was up
	for _, x := range rs {
		if !in(x.At, p.Start, p.End) {
			continue
		}
		row.Stall = max(row.Stall, x.Wait)
		if x.N == 0 {
			continue
		}
		n := numberOf(x.First)
		if numberOf(x.First+int64(x.N)-1) != n {
			n = -1
		}
		row.IDs += int64(x.N)
		row.ByNumber[n] += int64(x.N)
		switch {
		case lost && in(x.At, p.FaultAt, p.HealthyAt):
			if n == peerNum && row.ToPeer < 0 {
				row.ToPeer = x.At.Sub(p.FaultAt)
			}
			if n != own && n != peerNum {
				wrong += int64(x.N)
				wrongNums[n] = true
			}
		case lost && !x.At.Before(p.HealthyAt) && firstOwnBack.IsZero():
			if n == own {
				firstOwnBack = x.At
				row.BackHome = x.At.Sub(p.HealthyAt)
			} else if n != peerNum {
				wrong += int64(x.N)
				wrongNums[n] = true
			}
		default:
			if x.Active != 0 && movedAt.IsZero() {
				movedAt = x.At
			}
			switch {
			case n == own:
			case n == peerNum && x.Active == 0:
				row.Hedged += int64(x.N)
			default:
				offHome += int64(x.N)
				if n != peerNum {
					wrongNums[n] = true
				}
			}
		}
	}
	for _, e := range errs {
		if in(e.At, p.Start, p.End) {
			row.Errors++
		}
	}
	names := func() string {
		var out []string
		for n := range wrongNums {
			out = append(out, fmt.Sprintf("%d (%s)", n, s.regionOf(n)))
		}
		slices.Sort(out)
		return strings.Join(out, ", ")
	}
	if wrong > 0 {
		problems = append(problems, fail("%s: caller-%s took %d IDs from region number %s while %s was down: its peer is %s (%d)",
			p.Name, r.name, wrong, names(), r.name, r.peer, peerNum))
	}
	if lost && row.ToPeer < 0 {
		problems = append(problems, fail("%s: caller-%s never took an ID from its peer %s (%d) while %s was down", p.Name, r.name, r.peer, peerNum, r.name))
	}
	if lost && row.BackHome < 0 {
		problems = append(problems, fail("%s: caller-%s was not back on %s by the end of the phase", p.Name, r.name, r.name))
	}
	if lost && row.BackHome > s.sc.BackHome.D() {
		problems = append(problems, fail("%s: caller-%s was back on %s %v after it was healthy, over the bound %v", p.Name, r.name, r.name,
			row.BackHome.Round(time.Millisecond), s.sc.BackHome.D()))
	}
	// A refill that hedged (its own region slower than HedgeAfter with the buffer empty, as on a
	// busy machine) brings a batch from the peer while the client stays on its region: the
	// client's design, counted apart (Hedged). Leaving the region while it is up is not.
	if !movedAt.IsZero() {
		problems = append(problems, fail("%s: caller-%s moved to its peer %s at %s while %s was up", p.Name, r.name, r.peer,
			secs(movedAt.Sub(p.Start)), r.name))
	}
	if offHome > 0 {
		what := fmt.Sprintf("its peer %s", r.peer)
		if len(wrongNums) > 0 {
			what = "region number " + names()
		}
		problems = append(problems, fail("%s: caller-%s took %d IDs from %s while %s was up", p.Name, r.name, offHome, what, r.name))
	}
	if row.Errors > 0 {
		problems = append(problems, fail("%s: caller-%s saw %d errors (first: %s)", p.Name, r.name, row.Errors, firstErr(errs, p)))
	}
	row.Check = verdict(problems)
	return row
}

func firstErr(errs []callerError, p *phaseRun) string {
	for _, e := range errs {
		if in(e.At, p.Start, p.End) {
			return e.Msg
		}
	}
	return ""
}

// nodeRow checks one embedded node in one phase: it issues throughout, with no gap over
// NodeGapBound, unless its own lease store was down (it stops at its fence then, by design).
func nodeRow(p *phaseRun, r *regionProcs, rs []run, fail func(string, ...any) string) Row {
	row := Row{ByNumber: map[int]int64{}, ToPeer: -1, BackHome: -1}
	last := p.Start
	for _, x := range rs {
		if !in(x.At, p.Start, p.End) {
			continue
		}
		row.Stall = max(row.Stall, x.At.Sub(last))
		last = x.At
		row.IDs += int64(x.N)
		row.ByNumber[numberOf(x.First)] += int64(x.N)
	}
	row.Stall = max(row.Stall, p.End.Sub(last))
	var problems []string
	if p.Fault == StoreDown && p.Region == r.name {
		row.Check = "stopped at its fence (own store down)"
		return row
	}
	if row.Stall > NodeGapBound {
		problems = append(problems, fail("%s: node-%s went %v without a batch", p.Name, r.name, row.Stall.Round(time.Millisecond)))
	}
	for n, c := range row.ByNumber {
		if n != r.number {
			problems = append(problems, fail("%s: node-%s issued %d IDs of region number %d", p.Name, r.name, c, n))
		}
	}
	row.Check = verdict(problems)
	return row
}

func verdict(problems []string) string {
	if len(problems) == 0 {
		return "ok"
	}
	return "FAIL"
}

// renderTable prints a table per phase and the totals.
func renderTable(sc *Scenario, res *Result, alerts []alertSeen) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %q, seed %d: %d IDs checked\n", sc.Name, res.Seed, res.IDs)
	if c := sc.Customers; c != nil {
		fmt.Fprintf(&b, "customers in %d regions (%s, the scenario's: five regions of customers do not fit on 2 cores beside the rest), %g publishes a second each\n",
			len(c.Regions), strings.Join(c.Regions, ", "), c.Rate)
	}
	for _, p := range res.Phases {
		fmt.Fprintf(&b, "\n### %s (%s", p.Name, p.Fault)
		if p.Region != "" {
			fmt.Fprintf(&b, " %s", p.Region)
		}
		fmt.Fprintf(&b, ", %s-%s", secs(p.Start), secs(p.End))
		if Fault(p.Fault).lost() {
			fmt.Fprintf(&b, "; healthy %s after the restore", ms(p.RestoreToHealthy))
		}
		if p.Fault == string(RegistryDown) {
			fmt.Fprintf(&b, "; the registry down %s-%s", secs(p.RegistryDown[0]), secs(p.RegistryDown[1]))
		}
		if p.MachineStall > 0 {
			fmt.Fprintf(&b, "; this machine stalled up to %s", ms(p.MachineStall))
		}
		for _, a := range alerts {
			if a.phase == p.Name && a.fired {
				fmt.Fprintf(&b, "; IdgenClientOnPeerRegion fired %s after the fault, resolved %s", ms(a.firedAfter), resolvedText(a))
			}
		}
		b.WriteString(")\n\n")
		b.WriteString("| who | IDs | by region number | longest stall | to peer after | back home after | hedged from peer | errors | check |\n")
		b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---|\n")
		for _, r := range p.Rows {
			hedged := "-"
			if strings.HasPrefix(r.Who, "caller-") {
				hedged = fmt.Sprint(r.Hedged)
			}

			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %d | %s |\n", r.Who, r.IDs, byNumber(r.ByNumber), ms(r.Stall),
				opt(r.ToPeer), opt(r.BackHome), hedged, r.Errors, r.Check)
		}
		if p.Customers != nil {
			renderCustomerPhase(&b, p)
		}
	}
	if len(res.Failures) == 0 {
		fmt.Fprintf(&b, "\nevery check passed: no duplicate among %d IDs, callers on their own region while it was up and on their peer while it was down, back within %v, no errors; embedded nodes went on\n",
			res.IDs, sc.BackHome.D())
		if t := res.Customers; t != nil {
			fmt.Fprintf(&b, "customers: %d public IDs acknowledged, each answered with its internal ID by every region at the end (lost 0); %d opens, no 404 for a known ID, errors only within their bound\n",
				t.Acked, t.Resolves)
		}
	} else {
		fmt.Fprintf(&b, "\n%d checks failed:\n", len(res.Failures))
		for _, f := range res.Failures {
			fmt.Fprintf(&b, "  - %s\n", f)
		}
		b.WriteString(res.stallNote())
	}
	return b.String()
}

func byNumber(m map[int]int64) string {
	var ns []int
	for n := range m {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	var parts []string
	for _, n := range ns {
		parts = append(parts, fmt.Sprintf("%d: %d", n, m[n]))
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func opt(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return ms(d)
}

// renderSummary is the run in one table, a line per phase: the lost region's caller's figures
// and the worst of the others'.
func renderSummary(res *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| phase | fault | region | its caller's longest stall | to peer after | back home after | other callers' longest stall | hedged from peer (all callers) | embedded nodes' longest gap | errors | machine stalled | checks |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, p := range res.Phases {
		var own *Row
		var otherStall, nodeGap time.Duration
		var hedged int64
		errs := 0
		for i, r := range p.Rows {
			errs += r.Errors
			switch {
			case strings.HasPrefix(r.Who, "caller-") && r.Who == "caller-"+p.Region:
				own = &p.Rows[i]
				hedged += r.Hedged
			case strings.HasPrefix(r.Who, "caller-"):
				otherStall = max(otherStall, r.Stall)
				hedged += r.Hedged
			case strings.HasPrefix(r.Check, "stopped"):
			default:
				nodeGap = max(nodeGap, r.Stall)
			}
		}
		region, ownStall, toPeer, back := "-", "-", "-", "-"
		if own != nil {
			region, ownStall, toPeer, back = p.Region, ms(own.Stall), opt(own.ToPeer), opt(own.BackHome)
		}
		check := "ok"
		if _, failed := phaseVerdict(res, p.Name); len(failed) > 0 {
			check = fmt.Sprintf("%d FAILED", len(failed))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %d | %s | %d | %s | %s |\n", p.Name, p.Fault, region, ownStall, toPeer, back,
			ms(otherStall), hedged, ms(nodeGap), errs, ms(p.MachineStall), check)
	}
	return b.String()
}
