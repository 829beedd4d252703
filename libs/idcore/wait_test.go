package idcore

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// The saturated generator's wait, counted: how many steps its spin takes at the native speed of
// the process, and what one step and one whole wait cost in instructions (under
// callgrind, which slows the process some 50 times: a used-up millisecond's 1,024 IDs then take
// longer than the millisecond, so the saturated generator does not wait there at all).
// bench/saturated.sh puts them together.

// countingClock is the system clock, counting the waits and the steps of their spins.
type countingClock struct {
	*systemClock
	waits, steps int
}

func (c *countingClock) Sleep(ctx context.Context, d time.Duration) error {
	steps, err := sleep(ctx, d)
	c.waits++
	c.steps += steps
	return err
}

type syncedHealth struct{}

func (syncedHealth) ReadClock() (KernelClock, error) { return KernelClock{Synchronized: true}, nil }

// countedGen is a generator on the counting clock holding machine 1 of v2, issuing by the system
// clock's own path (sys), as a generator on SystemClock does.
func countedGen(b *testing.B) (*Generator, *countingClock) {
	b.Helper()
	clock := &countingClock{systemClock: defaultClock}
	g, err := NewGenerator(Settings{Clock: clock, Health: syncedHealth{}})
	if err != nil {
		b.Fatal(err)
	}
	g.sys = defaultClock
	now := time.Now()
	if err := g.SetLease("v2", Lease{Machine: 1, FloorUnixMs: now.UnixMilli() - 1, FenceUnixMs: now.Add(time.Hour).UnixMilli()}); err != nil {
		b.Fatal(err)
	}
	return g, clock
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSaturatedWait is BenchmarkSaturated/v2/goroutines=1 (libs/idcore/e2e) counting its
// waits: the IDs per wait and the spin's steps per wait, with the rate (of-limit) and the
// CPU (cores). Run it at native speed (-test.benchtime 2s).
func BenchmarkSaturatedWait(b *testing.B) {
	g, clock := countedGen(b)
	ctx := context.Background()
	cpu0, t0 := cpuTime(), time.Now()
	for b.Loop() {
		_, _ = g.Next(ctx)
	}
	wall := time.Since(t0)
	b.ReportMetric(float64(b.N)/wall.Seconds()/float64(V2().IDsPerSecond()), "of-limit")
	b.ReportMetric((cpuTime()-cpu0).Seconds()/wall.Seconds(), "cores")
	b.ReportMetric(float64(b.N)/float64(max(clock.waits, 1)), "ids/wait")
	b.ReportMetric(float64(clock.steps)/float64(max(clock.waits, 1)), "steps/wait")
}

// BenchmarkWait is one wait of a saturated generator: each Next finds its millisecond's
// sequence used up and waits for the next millisecond, as the 1,025th Next of a millisecond
// does (the millisecond is the current one, its sequence set to the last). It reports the
// spin's steps per wait; under callgrind, its instructions per operation are those of one wait
// at that many steps.
func BenchmarkWait(b *testing.B) {
	g, clock := countedGen(b)
	ctx := context.Background()
	maxSeq := V2().MaxSequence()
	for b.Loop() {
		// The millisecond may end between the two; the operation is over at its first wait.
		for w := clock.waits; clock.waits == w; {
			g.mu.Lock()
			g.lastMs, g.seq = max(g.lastMs, g.wallMs()-EpochUnixMs), maxSeq
			g.mu.Unlock()
			if _, err := g.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(clock.steps)/float64(b.N), "steps/wait")
}

// BenchmarkSpinStep is one step of the spin (a pause or a yield, and a clock read); under
// callgrind, its instructions per operation are one step's.
func BenchmarkSpinStep(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		_ = spinStep(i)
	}
}
