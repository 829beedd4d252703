package gameday

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// MachineStallBound: a phase in which this machine stalled this long (the run's 100 ms timer
// fired that late) tells nothing about idgen when its checks fail, since every process on the
// machine stood still meanwhile: leases ran out unrenewed, callers waited, probes failed.
const MachineStallBound = time.Second

// watchdog notes when this process was not scheduled: intervals its 100 ms ticks came late by
// over 300 ms.
type watchdog struct {
	mu   sync.Mutex
	late []interval
	once sync.Once
	quit chan struct{}
	done chan struct{}
}

type interval struct{ from, to time.Time }

func startWatchdog() *watchdog {
	w := &watchdog{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		const every = 100 * time.Millisecond
		last := time.Now()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.quit:
				return
			case now := <-t.C:
				if gap := now.Sub(last); gap > every+300*time.Millisecond {
					w.mu.Lock()
					w.late = append(w.late, interval{last, now})
					w.mu.Unlock()
				}
				last = now
			}
		}
	}()
	return w
}

func (w *watchdog) stop() { w.once.Do(func() { close(w.quit); <-w.done }) }

func (w *watchdog) stalls() []interval {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]interval(nil), w.late...)
}

// longestStall is the longest stall overlapping [from, to).
func longestStall(stalls []interval, from, to time.Time) time.Duration {
	var d time.Duration
	for _, s := range stalls {
		if s.to.After(from) && s.from.Before(to) {
			d = max(d, s.to.Sub(s.from))
		}
	}
	return d
}

// inconclusive marks each phase's machine stall and the run inconclusive when every failed check
// is in a phase where the machine stalled MachineStallBound or more.
func (r *Result) inconclusive(runs []*phaseRun, stalls []interval) {
	stalledPhases := map[string]bool{}
	for i, p := range runs {
		d := longestStall(stalls, p.Start, p.End)
		r.Phases[i].MachineStall = d
		if d >= MachineStallBound {
			stalledPhases[p.Name] = true
		}
	}
	if len(r.Failures) == 0 {
		return
	}
	for _, f := range r.Failures {
		phase, _, ok := strings.Cut(f, ": ")
		if !ok || !stalledPhases[phase] {
			return
		}
	}
	r.Inconclusive = true
}

func (r *Result) stallNote() string {
	if !r.Inconclusive {
		return ""
	}
	var ps []string
	for _, p := range r.Phases {
		if p.MachineStall >= MachineStallBound {
			ps = append(ps, fmt.Sprintf("%s (%s)", p.Name, ms(p.MachineStall)))
		}
	}
	return fmt.Sprintf("inconclusive: every failed check is in a phase where this machine stalled %v or more: %s; run again (the same --seed) on a quieter machine\n",
		MachineStallBound, strings.Join(ps, ", "))
}
