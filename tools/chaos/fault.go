package main

import (
	"context"
	"math/rand/v2"
	"time"
)

// Fault is one scheduled injection of one kind, drawn from the seed: the same seed gives the same
// faults, with the same targets, durations and offsets.
type Fault interface {
	// Name is the fault's kind, its row in the table.
	Name() string
	// plan draws the fault's target and parameters from d and returns how long it is planned
	// to last: the next fault starts a pause after that.
	plan(d *draw) time.Duration
	// Inject carries the fault out on the run's processes and stores, and says what it did. A
	// ctlError is an operator command that failed under the faults: reported, and the run goes
	// on; any other error ends the run.
	Inject(ctx context.Context, r *runner) (string, error)
}

// excuser is a fault that tells the check which IDs it may produce without failing the run: a
// clock stepped beyond the bound with nothing reported (clock-step-hidden).
type excuser interface {
	// excused returns the slots and times whose IDs from a clock beyond the bound are counted
	// apart, once Inject has returned.
	excused() []hiddenStep
}

// kinds are every kind of fault, each as a new fault to plan, in the table's order.
var kinds = []func() Fault{
	func() Fault { return &sigstop{long: false} },
	func() Fault { return &sigstop{long: true} },
	func() Fault { return &kill9Restart{} },
	func() Fault { return &storeStop{long: false} },
	func() Fault { return &storeStop{long: true} },
	func() Fault { return &storeKill9{} },
	func() Fault { return &quarantineLift{} },
	func() Fault { return &fenceRestore{} },
	func() Fault { return &restoreBackup{} },
	func() Fault { return &clockWithin{} },
	func() Fault { return &clockBeyond{} },
	func() Fault { return &clockStepHidden{} },
	func() Fault { return &otherRules{} },
}

// faultKinds is the table's row order; "none" is the time before the first fault.
var faultKinds = func() []string {
	names := []string{"none"}
	for _, k := range kinds {
		names = append(names, k().Name())
	}
	return names
}()

// draw is the schedule's random source, with what the faults draw from it.
type draw struct {
	r *rand.Rand
	// proc is a process index, drawn for every fault whether it acts on a process or not (so
	// the schedule of a seed stays the same).
	proc            int
	nprocs, ngroups int
	// restores counts the restore-backup faults planned: they take the groups in turn, dynalite's
	// first, whose first backup is from before the first claim.
	restores int
}

// between is a duration in [lo, hi).
func (d *draw) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(d.r.Int64N(int64(hi-lo)))
}

// signed is x or -x.
func (d *draw) signed(x time.Duration) time.Duration {
	if d.r.IntN(2) == 0 {
		return -x
	}
	return x
}

// group is a group index.
func (d *draw) group() int { return d.r.IntN(d.ngroups) }

// scheduled is a fault and when it starts, from the start of the run.
type scheduled struct {
	Fault
	at time.Duration
}

// plan draws the fault schedule from seed: a pause of 1.5–4.5 s, then a fault, until 5 s before
// the end. The kinds come in shuffled rounds of all of them, so a short run still has each.
func plan(seed uint64, duration time.Duration, nprocs, ngroups int) []scheduled {
	d := &draw{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), nprocs: nprocs, ngroups: ngroups}
	var out []scheduled
	var bag []int // the kinds in a shuffled order, refilled when empty, so every kind recurs
	for t := 3 * time.Second; ; {
		t += d.between(1500*time.Millisecond, 4500*time.Millisecond)
		if len(bag) == 0 {
			bag = d.r.Perm(len(kinds))
		}
		f := kinds[bag[0]]()
		bag = bag[1:]
		d.proc = d.r.IntN(nprocs)
		dur := f.plan(d)
		if t+dur > duration-5*time.Second {
			return out
		}
		out = append(out, scheduled{Fault: f, at: t})
		t += dur
	}
}

// abs is |d|.
func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
