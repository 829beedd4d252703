package main

import (
	"context"
	"fmt"
	"time"
)

// The clock faults: one process's clock moved through its chaos clock file (--chaos-clock-file of
// the chaos-tagged builds), with or without its clock discipline reporting the error.

// clockWithin moves one process's clock by 1-5 ms either way for 2-6 s, its discipline reporting
// that error: within the bound, issuing goes on.
type clockWithin struct {
	target      int
	offset, dur time.Duration
}

func (f *clockWithin) Name() string { return "clock-within" }

func (f *clockWithin) plan(d *draw) time.Duration {
	f.target = d.proc
	f.offset = d.signed(d.between(time.Millisecond, clockBound))
	f.dur = d.between(2*time.Second, 6*time.Second)
	return f.dur
}

func (f *clockWithin) Inject(ctx context.Context, r *runner) (string, error) {
	p := r.procs[f.target]
	if err := p.setClock(f.offset, abs(f.offset)); err != nil {
		return "", err
	}
	sleep(ctx, f.dur)
	return fmt.Sprintf("%s clock %+v for %s", p.name, f.offset, f.dur.Round(time.Millisecond)), p.setClock(0, 0)
}

// beyond is one process's clock offset beyond the bound (0.4-2 s either way) and how long it
// lasts (2-5 s), as clock-beyond and clock-step-hidden draw them.
type beyond struct {
	target      int
	offset, dur time.Duration
}

func (f *beyond) plan(d *draw) time.Duration {
	f.target = d.proc
	f.offset = d.signed(d.between(400*time.Millisecond, 2*time.Second))
	f.dur = d.between(2*time.Second, 5*time.Second)
	return f.dur
}

// clockBeyond moves one process's clock beyond the bound. The discipline sees the error grow
// beyond the bound before the clock gets there (as chrony's estimated error does), and until it
// is back: every ID made meanwhile is refused. The error is reported first, for longer than a
// clock check interval.
type clockBeyond struct{ beyond }

func (f *clockBeyond) Name() string { return "clock-beyond" }

func (f *clockBeyond) Inject(ctx context.Context, r *runner) (string, error) {
	p := r.procs[f.target]
	est := abs(f.offset)
	for _, step := range []struct{ offset, wait time.Duration }{{0, time.Second}, {f.offset, f.dur}, {0, time.Second}} {
		if err := p.setClock(step.offset, est); err != nil {
			return "", err
		}
		sleep(ctx, step.wait)
	}
	return fmt.Sprintf("%s clock %+v (estimated error reported) for %s", p.name, f.offset, f.dur.Round(time.Millisecond)), p.setClock(0, 0)
}

// clockStepHidden steps one process's clock beyond the bound with nothing reported: the
// generator's own checks (forward jump, clock_backwards) are all that stand. The IDs it makes
// from the stepped clock, until 1 s after it is back, are counted apart (excused).
type clockStepHidden struct {
	beyond
	step []hiddenStep
}

func (f *clockStepHidden) Name() string { return "clock-step-hidden" }

func (f *clockStepHidden) Inject(ctx context.Context, r *runner) (string, error) {
	p := r.procs[f.target]
	from := time.Now()
	if err := p.setClock(f.offset, 0); err != nil {
		return "", err
	}
	sleep(ctx, f.dur)
	err := p.setClock(0, 0)
	f.step = append(f.step, hiddenStep{slot: p.name, start: from, end: time.Now().Add(time.Second)})
	return fmt.Sprintf("%s clock stepped %+v unseen for %s", p.name, f.offset, f.dur.Round(time.Millisecond)), err
}

func (f *clockStepHidden) excused() []hiddenStep { return f.step }
