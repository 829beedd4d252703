package gameday

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// CustomerRow is one customer client's figures in a phase.
type CustomerRow struct {
	Who           string
	Acked         int // publishes acknowledged
	PublishErrors int // publishes not acknowledged, outside its region's loss
	ResolvesOwn   int // opens answered with the order at its own region's gateway
	ResolvesOther int // … at the other regions' gateways
	NotFound      int // opens of an acknowledged public ID answered 404 (must be 0)
	Wrong         int // opens answered with another order (must be 0)
	Errors        int // publishes and opens answered neither 200 nor 404, or not answered, outside the loss of the region asked
	Down          int // requests to a region while it was lost (its processes gone or filling): not counted
	NextErrors    int // calls to Next that failed
	Check         string
}

// CustomerPhase is the public-ID side of a phase.
type CustomerPhase struct {
	Rows     []CustomerRow
	Requests int    // publishes and opens, outside a lost region's loss
	Errors   int    // of them, customer errors (503, 504, …, no answer)
	Bound    string // the bound checked
	// public-id-lost: from the restore to the returned region's /healthz saying region_filling
	// (-1: not seen), to it filled (its internal API healthy) and to it taking customers (its
	// gateway healthy); the acknowledged public IDs asked of it then and those it did not answer.
	FillingSeen, Filled, Ready time.Duration
	BackChecked, BackMissing   int
}

// CustomerTotals are the public-ID side's figures over the run.
type CustomerTotals struct {
	Regions    []string
	Acked      int // public IDs acknowledged
	Resolves   int // opens answered with the order
	NotFound   int // opens of an acknowledged public ID answered 404
	Errors     int
	EndAsked   int // at the end: every acknowledged public ID asked of every region
	EndMissing int // … not answered with its internal ID: lost
}

// endCheck is every acknowledged public ID asked of every region at the end of the run.
type endCheck struct {
	acked   int
	asked   int
	missing []string
}

// checkEnd asks every region's internal API for every acknowledged public ID (the clients
// stopped: nothing more is acknowledged).
func (s *stack) checkEnd() *endCheck {
	_, acked := s.cust.rec.snapshot()
	var rs []*custRegion
	for _, n := range s.cust.names {
		rs = append(rs, s.cust.regions[n])
	}
	asked, missing := checkAll(acked, rs)
	return &endCheck{acked: len(acked), asked: asked, missing: missing}
}

// custDown is a stretch a region's public-ID side was lost: from the fault to it taking customers
// again.
type custDown struct {
	region   string
	from, to time.Time
}

// analyseCustomers checks what the customer clients saw against the phases as they ran: no 404
// for an acknowledged public ID, ever; customer errors only in a phase with a public-ID fault and
// at most the scenario's error_pct of its requests (a request to a region while it is lost, its
// processes gone or filling, is not counted: customers are not sent there); the returned region
// answers every public ID acknowledged so far once it takes customers; and at the end every
// acknowledged public ID resolves to its internal ID in every region.
func analyseCustomers(s *stack, runs []*phaseRun, end *endCheck, res *Result) {
	fail := func(format string, args ...any) string {
		msg := fmt.Sprintf(format, args...)
		res.Failures = append(res.Failures, msg)
		return msg
	}
	events, acked := s.cust.rec.snapshot()
	slices.SortStableFunc(events, func(a, b custEvent) int { return a.At.Compare(b.At) })
	var downs []custDown
	for _, p := range runs {
		if p.Fault == PublicIDLost && !p.FaultAt.IsZero() {
			to := p.ReadyAt
			if to.IsZero() {
				to = p.End
			}
			downs = append(downs, custDown{p.Region, p.FaultAt, to})
		}
	}
	isDown := func(e custEvent) bool {
		from := e.At.Add(-e.Dur)
		for _, d := range downs {
			if d.region == e.To && from.Before(d.to) && !e.At.Before(d.from) {
				return true
			}
		}
		return false
	}
	phaseOf := func(t time.Time) int {
		for i, p := range runs {
			if t.Before(p.End) {
				return i
			}
		}
		return len(runs) - 1
	}
	tot := &CustomerTotals{Regions: s.cust.names, Acked: len(acked)}
	type key struct {
		phase int
		who   string
	}
	rows := map[key]*CustomerRow{}
	firstErr := map[key]string{}
	first404 := map[key]string{}
	for _, e := range events {
		k := key{phaseOf(e.At), e.From}
		row := rows[k]
		if row == nil {
			row = &CustomerRow{Who: "customer-" + e.From}
			rows[k] = row
		}
		if e.Kind == 'n' {
			row.NextErrors++
			continue
		}
		ok := e.Status == 200 && (e.Kind == 'a' || e.Why == "ok")
		switch {
		case ok && e.Kind == 'a':
			row.Acked++
		case ok && e.To == e.From:
			row.ResolvesOwn++
			tot.Resolves++
		case ok:
			row.ResolvesOther++
			tot.Resolves++
		case e.Kind == 'r' && e.Status == 404:
			row.NotFound++
			tot.NotFound++
			if first404[k] == "" {
				first404[k] = fmt.Sprintf("%s at %s's gateway %s after the fault's phase began", e.Public, e.To, ms(e.At.Sub(runs[k.phase].Start)))
			}
		case e.Kind == 'r' && e.Status == 200:
			row.Wrong++
		case isDown(e):
			row.Down++
		default:
			row.Errors++
			if e.Kind == 'p' {
				row.PublishErrors++
			}
			tot.Errors++
			if firstErr[k] == "" {
				what := "open at " + e.To
				if e.Kind == 'p' {
					what = "publish"
				}
				firstErr[k] = fmt.Sprintf("%s %d %s", what, e.Status, e.Why)
			}
		}
	}
	for i, p := range runs {
		pr := res.Phases[i]
		cp := &CustomerPhase{FillingSeen: -1, Filled: -1, Ready: -1}
		pr.Customers = cp
		bound := 0.0
		cp.Bound = "none outside a public-ID fault"
		if p.Fault.customer() {
			bound = s.sc.Customers.ErrorPct
			cp.Bound = fmt.Sprintf("at most %g%% of requests", bound)
		}
		var phaseErr string
		for _, n := range s.cust.names {
			k := key{i, n}
			row := rows[k]
			if row == nil {
				row = &CustomerRow{Who: "customer-" + n}
			}
			cp.Requests += row.Acked + row.ResolvesOwn + row.ResolvesOther + row.NotFound + row.Wrong + row.Errors
			cp.Errors += row.Errors
			var problems []string
			if row.NotFound > 0 {
				problems = append(problems, fail("%s: customer-%s: %d opens of acknowledged public IDs answered 404 (first: %s)", p.Name, n, row.NotFound, first404[k]))
			}
			if row.Wrong > 0 {
				problems = append(problems, fail("%s: customer-%s: %d opens answered with another order", p.Name, n, row.Wrong))
			}
			if row.Errors > 0 && phaseErr == "" {
				phaseErr = fmt.Sprintf("customer-%s's %s", n, firstErr[k])
			}
			if row.Errors > 0 && bound == 0 {
				problems = append(problems, "errors")
			}
			row.Check = verdict(problems)
			cp.Rows = append(cp.Rows, *row)
		}
		if cp.Errors > 0 && float64(cp.Errors)*100 > bound*float64(cp.Requests) {
			fail("%s: customers saw %d errors in %d requests (%.2f%%), over the bound (%s; first: %s)", p.Name, cp.Errors, cp.Requests,
				100*float64(cp.Errors)/float64(max(1, cp.Requests)), cp.Bound, phaseErr)
			for j := range cp.Rows {
				if cp.Rows[j].Errors > 0 {
					cp.Rows[j].Check = "FAIL"
				}
			}
		}
		if p.Fault == PublicIDLost {
			if !p.FillingSeenAt.IsZero() {
				cp.FillingSeen = p.FillingSeenAt.Sub(p.RestoreAt)
			}
			if !p.FilledAt.IsZero() {
				cp.Filled = p.FilledAt.Sub(p.RestoreAt)
			}
			if !p.ReadyAt.IsZero() {
				cp.Ready = p.ReadyAt.Sub(p.RestoreAt)
			}
			cp.BackChecked, cp.BackMissing = p.BackChecked, len(p.BackMissing)
			if len(p.BackMissing) > 0 {
				fail("%s: %s, once it took customers, did not answer %d of %d acknowledged public IDs with their internal ID (first: %s)",
					p.Name, p.Region, len(p.BackMissing), p.BackChecked, p.BackMissing[0])
			}
			served := false
			for _, e := range events {
				if e.Kind == 'r' && e.To == p.Region && e.Status == 200 && in(e.At, p.ReadyAt, p.End) {
					served = true
					break
				}
			}
			if !served {
				fail("%s: %s's gateway opened no order between it taking customers again and the end of the phase", p.Name, p.Region)
			}
		}
	}
	if end != nil {
		tot.EndAsked, tot.EndMissing = end.asked, len(end.missing)
		if len(end.missing) > 0 {
			fail("end: %d of %d acknowledged public IDs asked of every region (%v) not answered with their internal ID (first: %s)",
				len(end.missing), end.asked, s.cust.names, end.missing[0])
		}
	}
	res.Customers = tot
}

// renderCustomerPhase is a phase's customer table.
func renderCustomerPhase(b *strings.Builder, p *PhaseResult) {
	cp := p.Customers
	fmt.Fprintf(b, "\ncustomers: %d requests, %d errors (bound: %s)", cp.Requests, cp.Errors, cp.Bound)
	if p.Fault == string(PublicIDLost) {
		fmt.Fprintf(b, "; %s back empty: region_filling seen %s after the restore, filled %s, taking customers %s, then answered %d of %d acknowledged public IDs",
			p.Region, opt(cp.FillingSeen), opt(cp.Filled), opt(cp.Ready), cp.BackChecked-cp.BackMissing, cp.BackChecked)
	}
	b.WriteString("\n\n| who | acknowledged | opened, own region | opened, other regions | 404 known ID | errors | of them publishes | to a lost region (not counted) | Next errors | check |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range cp.Rows {
		fmt.Fprintf(b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %s |\n", r.Who, r.Acked, r.ResolvesOwn, r.ResolvesOther, r.NotFound,
			r.Errors, r.PublishErrors, r.Down, r.NextErrors, r.Check)
	}
}

// renderCustomerSummary is the public-ID side in one table, a line per phase.
func renderCustomerSummary(res *Result) string {
	var b strings.Builder
	b.WriteString("| phase | fault | region | acknowledged | opened | 404 known ID | errors / requests | bound | checks |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---|---|\n")
	for _, p := range res.Phases {
		cp := p.Customers
		if cp == nil {
			continue
		}
		acked, opened, nf := 0, 0, 0
		for _, r := range cp.Rows {
			acked += r.Acked
			opened += r.ResolvesOwn + r.ResolvesOther
			nf += r.NotFound
		}
		region := "-"
		if Fault(p.Fault).customer() {
			region = p.Region
		}
		check := "ok"
		for _, f := range res.Failures {
			if strings.HasPrefix(f, p.Name+": ") && (strings.Contains(f, "customer") || Fault(p.Fault).customer() && strings.Contains(f, p.Region+"'s gateway") || strings.Contains(f, "once it took customers")) {
				check = "FAILED"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d / %d | %s | %s |\n", p.Name, p.Fault, region, acked, opened, nf, cp.Errors, cp.Requests, cp.Bound, check)
	}
	t := res.Customers
	fmt.Fprintf(&b, "\ncustomers in %s: %d public IDs acknowledged, %d opens answered, %d 404s for a known ID, %d errors; at the end each asked of every region: %d asks, lost %d\n",
		strings.Join(t.Regions, ", "), t.Acked, t.Resolves, t.NotFound, t.Errors, t.EndAsked, t.EndMissing)
	return b.String()
}
