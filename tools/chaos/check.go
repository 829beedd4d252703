package main

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/embedded/nodeout"
)

// gapThreshold is the shortest pause between two successful batches of one process that counts
// as time unavailable.
const gapThreshold = 250 * time.Millisecond

// clockSlack is how far an ID's timestamp may lie outside the time its batch was asked for and
// received (the runner's own reading delays) before it counts as made from a clock beyond the
// bound. Offsets beyond the bound are injected at 400 ms or more, within it at 5 ms or less.
const clockSlack = 200 * time.Millisecond

// idRun is the IDs lo..hi, all issued by one series, in one or more consecutive batches.
type idRun struct {
	lo, hi idcore.ID
	batch  int32 // the batch holding lo
}

// series is what one process incarnation returned: its IDs as runs of consecutive IDs in the
// order it returned them, when each batch arrived, and its refusals.
type series struct {
	name string // slot#incarnation, e.g. dynamo/gen-1#2
	slot string // the process slot, shared by its incarnations, e.g. dynamo/gen-1

	mu       sync.Mutex
	runs     []idRun
	n        int // IDs
	batches  []batchMark
	refusals []refusal
	last     string // the current refusal reason, "" after a success
	disorder string // the first place its IDs did not increase
	fence    string // the first ID at or past the fence the process reported for it
	// fenceChecks counts the batches checked against a fence.
	fenceChecks int
	// offClock lists the batches holding an ID whose timestamp lies outside [asked, received]
	// by more than clockSlack.
	offClock []offBatch
}

type batchMark struct {
	at  time.Time // received
	ids int
}

type offBatch struct {
	at   time.Time
	ids  int
	skew time.Duration // the timestamp's distance outside [asked, received]
}

type refusal struct {
	reason string
	at     time.Time
}

// add records a batch of IDs (as runs of consecutive IDs) asked for at asked and
// received at got. fenceMs, when not 0, is the Unix ms fence of the lease the process held for
// them.
func (s *series) add(asked, got time.Time, runs []nodeout.Run, fenceMs int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bi := int32(len(s.batches))
	total := 0
	for _, r := range runs {
		if r.N < 1 {
			continue
		}
		lo, hi := r.First, r.Last()
		total += r.N
		if n := len(s.runs); n > 0 {
			last := &s.runs[n-1]
			if lo <= last.hi && s.disorder == "" {
				s.disorder = fmt.Sprintf("%s: id %d after %d", s.name, lo, last.hi)
			}
			if lo == last.hi+1 {
				last.hi = hi
				continue
			}
		}
		s.runs = append(s.runs, idRun{lo: lo, hi: hi, batch: bi})
	}
	if total == 0 {
		return
	}
	s.n += total
	s.batches = append(s.batches, batchMark{at: got, ids: total})
	s.last = ""
	first, last := runs[0].First, runs[len(runs)-1].Last()
	if fenceMs != 0 {
		s.checkFenceLocked(last, fenceMs)
	}
	var skew time.Duration
	if d := time.UnixMilli(tsMs(first)).Sub(asked); d < -clockSlack {
		skew = -d
	}
	if d := time.UnixMilli(tsMs(last)).Sub(got); d > clockSlack && d > skew {
		skew = d
	}
	if skew > 0 {
		s.offClock = append(s.offClock, offBatch{at: got, ids: total, skew: skew})
	}
}

// checkFence records id as past its fence when its timestamp is at or after fenceMs (Unix ms).
func (s *series) checkFence(id idcore.ID, fenceMs int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkFenceLocked(id, fenceMs)
}

func (s *series) checkFenceLocked(id idcore.ID, fenceMs int64) {
	s.fenceChecks++
	if tsMs(id) >= fenceMs && s.fence == "" {
		s.fence = fmt.Sprintf("%s: id %d has timestamp %d, at or past its fence %d", s.name, id, tsMs(id), fenceMs)
	}
}

// tsMs is an ID's timestamp in Unix ms.
func tsMs(id idcore.ID) int64 { return int64(id)>>idcore.TimestampShift + idcore.EpochUnixMs }

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

// hiddenStep is a time a slot's clock was stepped beyond the bound without its clock discipline
// reporting it.
type hiddenStep struct {
	slot       string
	start, end time.Time
}

// row is one line of the report.
type row struct {
	kind        string
	injected    int
	ids         int
	dups        int
	refusals    map[string]int
	offClock    int // IDs from a clock beyond the bound its discipline reported: must be 0
	hidden      int // IDs from a clock stepped beyond the bound unseen (reported, not failed)
	unavailable time.Duration
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
	dups      []duplicate // in ID order, one per overlap
	dupIDs    int         // IDs returned more than once
	disorders []string
	fences    []string
	offClock  []string // the first few batches from a clock beyond the bound
}

// dupCheck finds IDs returned by more than one series: every series' runs, sorted by their first
// ID, must not overlap. It needs memory for the runs only (a few per batch).
func dupCheck(all []*series) (dups []duplicate, dupIDs int, at []time.Time) {
	type ref struct {
		lo, hi idcore.ID
		s      int32
		b      int32
	}
	var refs []ref
	for si, s := range all {
		s.mu.Lock()
		for _, r := range s.runs {
			refs = append(refs, ref{r.lo, r.hi, int32(si), r.batch})
		}
		s.mu.Unlock()
	}
	slices.SortFunc(refs, func(a, b ref) int { return cmp.Compare(a.lo, b.lo) })
	top := -1 // the run reaching furthest so far
	for i, r := range refs {
		if top >= 0 && r.lo <= refs[top].hi {
			t := refs[top]
			dups = append(dups, duplicate{id: r.lo, a: all[t.s].name, b: all[r.s].name})
			dupIDs += int(min(r.hi, t.hi) - r.lo + 1)
			later := batchTime(all[t.s], t.b)
			if bt := batchTime(all[r.s], r.b); bt.After(later) {
				later = bt
			}
			at = append(at, later)
		}
		if top < 0 || r.hi > refs[top].hi {
			top = i
		}
	}
	return dups, dupIDs, at
}

func batchTime(s *series, b int32) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches[b].at
}

// check finds every duplicate ID across all series, every series whose IDs did not strictly
// increase or passed their fence, and every batch from a clock beyond the bound, and sums IDs,
// duplicates, refusals and unavailable time by the fault window they fall in. windows must be in
// time order; the first should start before any batch. IDs from a slot's clock while it was
// stepped unseen (hidden) are counted apart.
func check(all []*series, windows []window, hidden []hiddenStep) report {
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
	isHidden := func(slot string, t time.Time) bool {
		for _, h := range hidden {
			if h.slot == slot && !t.Before(h.start) && !t.After(h.end) {
				return true
			}
		}
		return false
	}

	slotTimes := map[string][]time.Time{}
	for _, s := range all {
		s.mu.Lock()
		if s.disorder != "" {
			rep.disorders = append(rep.disorders, s.disorder)
		}
		if s.fence != "" {
			rep.fences = append(rep.fences, s.fence)
		}
		for _, b := range s.batches {
			rowFor(windowOf(b.at)).ids += b.ids
			slotTimes[s.slot] = append(slotTimes[s.slot], b.at)
		}
		rep.total += s.n
		for _, r := range s.refusals {
			rowFor(windowOf(r.at)).refusals[r.reason]++
		}
		for _, o := range s.offClock {
			r := rowFor(windowOf(o.at))
			if isHidden(s.slot, o.at) {
				r.hidden += o.ids
				continue
			}
			r.offClock += o.ids
			if len(rep.offClock) < 5 {
				rep.offClock = append(rep.offClock, fmt.Sprintf("%s: %d IDs received at %s with timestamps %s outside the time they were asked for",
					s.name, o.ids, o.at.UTC().Format("15:04:05.000"), o.skew.Round(time.Millisecond)))
			}
		}
		s.mu.Unlock()
	}
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
	var at []time.Time
	rep.dups, rep.dupIDs, at = dupCheck(all)
	for _, t := range at {
		rowFor(windowOf(t)).dups++
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

// failed says whether the report breaks a promise: a duplicate, IDs out of order or past a
// fence, or IDs from a clock beyond the bound that its discipline reported.
func (rep report) failed() bool {
	off := 0
	for _, r := range rep.rows {
		off += r.offClock
	}
	return len(rep.dups) > 0 || len(rep.disorders) > 0 || len(rep.fences) > 0 || off > 0 || rep.total == 0
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
