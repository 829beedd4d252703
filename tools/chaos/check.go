package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// gapThreshold is the shortest pause between two successful batches of one process that counts
// as time unavailable.
const gapThreshold = 250 * time.Millisecond

// series is what one process incarnation returned: its IDs in the order it returned them, when
// each batch arrived, and its refusals.
type series struct {
	name string // slot#incarnation, e.g. dynamo/gen-1#2
	slot string // the process slot, shared by its incarnations, e.g. dynamo/gen-1

	mu       sync.Mutex
	ids      []idcore.ID
	batches  []batchMark
	refusals []refusal
	last     string // the current refusal reason, "" after a success
	disorder string // the first place its IDs did not increase
}

type batchMark struct {
	at  time.Time
	end int // index in ids after the batch
}

type refusal struct {
	reason string
	at     time.Time
}

// add records a batch of IDs received at t.
func (s *series) add(t time.Time, ids []idcore.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if n := len(s.ids); n > 0 && id <= s.ids[n-1] && s.disorder == "" {
			s.disorder = fmt.Sprintf("%s: id %d after %d", s.name, id, s.ids[n-1])
		}
		s.ids = append(s.ids, id)
	}
	s.batches = append(s.batches, batchMark{at: t, end: len(s.ids)})
	s.last = ""
}

// refuse records a refusal at t when its reason differs from the current one (an episode, not
// every retry).
func (s *series) refuse(t time.Time, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if reason == s.last {
		return
	}
	s.last = reason
	s.refusals = append(s.refusals, refusal{reason: reason, at: t})
}

// window is the stretch of the run from one fault's injection to the next's.
type window struct {
	kind  string
	start time.Time
}

// faultKinds is the table's row order; "none" is the time before the first fault.
var faultKinds = []string{"none", "sigstop-short", "sigstop-long", "kill9-restart",
	"store-stop-short", "store-stop-long", "store-kill9", "quarantine-lift", "fence-restore"}

// row is one line of the report.
type row struct {
	kind        string
	injected    int
	ids         int
	dups        int
	refusals    map[string]int
	unavailable time.Duration // sum over processes of pauses between successful batches
	longest     time.Duration
}

// duplicate is one ID returned twice.
type duplicate struct {
	id   idcore.ID
	a, b string // the series that returned it
}

// report is the outcome of a check.
type report struct {
	rows      []*row
	total     int
	dups      []duplicate // in ID order
	disorders []string
}

// check finds every duplicate ID across all series and every series whose IDs did not strictly
// increase, and sums IDs, duplicates, refusals and unavailable time by the fault window they fall
// in. windows must be in time order; the first should start before any batch.
func check(all []*series, windows []window) report {
	if len(windows) == 0 || windows[0].kind != "none" {
		windows = append([]window{{kind: "none"}}, windows...)
	}
	rows := map[string]*row{}
	var rep report
	rowFor := func(kind string) *row {
		r := rows[kind]
		if r == nil {
			r = &row{kind: kind, refusals: map[string]int{}}
			rows[kind] = r
		}
		return r
	}
	for _, w := range windows[1:] {
		rowFor(w.kind).injected++
	}
	rowFor("none")
	windowOf := func(t time.Time) string {
		i := sort.Search(len(windows), func(i int) bool { return windows[i].start.After(t) })
		if i == 0 {
			return windows[0].kind
		}
		return windows[i-1].kind
	}

	type entry struct {
		id     idcore.ID
		series int32
		batch  int32
	}
	n := 0
	for _, s := range all {
		n += len(s.ids)
	}
	entries := make([]entry, 0, n)
	slotTimes := map[string][]time.Time{}
	for si, s := range all {
		s.mu.Lock()
		if s.disorder != "" {
			rep.disorders = append(rep.disorders, s.disorder)
		}
		from := 0
		for bi, b := range s.batches {
			for _, id := range s.ids[from:b.end] {
				entries = append(entries, entry{id: id, series: int32(si), batch: int32(bi)})
			}
			rowFor(windowOf(b.at)).ids += b.end - from
			from = b.end
			slotTimes[s.slot] = append(slotTimes[s.slot], b.at)
		}
		for _, r := range s.refusals {
			rowFor(windowOf(r.at)).refusals[r.reason]++
		}
		s.mu.Unlock()
	}
	rep.total = len(entries)
	for _, ts := range slotTimes {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(ts); i++ {
			from, to := ts[i-1], ts[i]
			g := to.Sub(from)
			if g <= gapThreshold {
				continue
			}
			// The sum is split over the windows the pause overlaps; the longest pause counts
			// in the window it ended in.
			for wi, w := range windows {
				end := to
				if wi+1 < len(windows) && windows[wi+1].start.Before(end) {
					end = windows[wi+1].start
				}
				begin := from
				if w.start.After(begin) {
					begin = w.start
				}
				if end.After(begin) {
					rowFor(w.kind).unavailable += end.Sub(begin)
				}
			}
			r := rowFor(windowOf(to))
			r.longest = max(r.longest, g)
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.id, b.id) })
	for i := 1; i < len(entries); i++ {
		if entries[i].id != entries[i-1].id {
			continue
		}
		a, b := entries[i-1], entries[i]
		sa, sb := all[a.series], all[b.series]
		rep.dups = append(rep.dups, duplicate{id: a.id, a: sa.name, b: sb.name})
		later := sa.batches[a.batch].at
		if t := sb.batches[b.batch].at; t.After(later) {
			later = t
		}
		rowFor(windowOf(later)).dups++
	}
	for _, k := range faultKinds {
		if r, ok := rows[k]; ok {
			rep.rows = append(rep.rows, r)
			delete(rows, k)
		}
	}
	for _, r := range rows {
		rep.rows = append(rep.rows, r)
	}
	return rep
}

// print writes the report's table, in Markdown.
func (rep report) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| fault\t| injected\t| IDs checked\t| duplicates\t| refusals by reason\t| unavailable (sum)\t| longest gap\t|")
	fmt.Fprintln(tw, "|---\t|---:\t|---:\t|---:\t|---\t|---:\t|---:\t|")
	var tot row
	for _, r := range rep.rows {
		fmt.Fprintf(tw, "| %s\t| %d\t| %d\t| %d\t| %s\t| %s\t| %s\t|\n", r.kind, r.injected, r.ids, r.dups, reasons(r.refusals),
			r.unavailable.Round(100*time.Millisecond), r.longest.Round(100*time.Millisecond))
		tot.injected += r.injected
		tot.ids += r.ids
		tot.dups += r.dups
		tot.unavailable += r.unavailable
		tot.longest = max(tot.longest, r.longest)
	}
	fmt.Fprintf(tw, "| total\t| %d\t| %d\t| %d\t| \t| %s\t| %s\t|\n", tot.injected, tot.ids, tot.dups,
		tot.unavailable.Round(100*time.Millisecond), tot.longest.Round(100*time.Millisecond))
	tw.Flush()
}

func reasons(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
