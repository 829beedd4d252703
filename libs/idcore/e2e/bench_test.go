package idcore_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
)

// realGen is a generator on the system clock (health faked as synchronized, since development
// machines are not) holding machine 1 of every layout with an hour-long fence.
func realGen(b *testing.B, sched idcore.Schedule) *idcore.Generator {
	b.Helper()
	g, err := idcore.NewGenerator(idcore.Settings{Schedule: sched, Region: 1, Health: clocktest.Synced()})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for _, p := range sched.Periods() {
		if err := g.SetLease(p.Layout.Name(), idcore.Lease{Machine: 1, FloorUnixMs: now.UnixMilli() - 1, FenceUnixMs: now.Add(time.Hour).UnixMilli()}); err != nil {
			b.Fatal(err)
		}
	}
	return g
}

// BenchmarkNextUnsaturated measures one ID when the sequence is not used up: a fake clock that
// never runs out, so only the generator's own work is timed.
func BenchmarkNextUnsaturated(b *testing.B) {
	clock := clocktest.NewClock(time.Now())
	g, _ := idcore.NewGenerator(idcore.Settings{Schedule: idcore.ScheduleV2(), Clock: realNowClock{clock}, Health: clocktest.Synced()})
	now := time.Now()
	_ = g.SetLease("v2", idcore.Lease{Machine: 1, FloorUnixMs: now.UnixMilli() - 1, FenceUnixMs: now.Add(time.Hour).UnixMilli()})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// realNowClock reads the system time (so the cost of reading it is measured) but moves one
// millisecond ahead of it per 1,024 calls, so the v2 sequence never runs out.
type realNowClock struct{ *clocktest.Clock }

var calls int64

func (c realNowClock) Now() time.Time {
	calls++
	return time.Now().Add(time.Duration(calls/1024) * time.Millisecond)
}

// BenchmarkNext is one ID on the system clock, single goroutine and parallel; at saturation the
// v2 sequence (1,024 per ms) is the limit, so ns/op is bounded below by ~977 ns.
func BenchmarkNext(b *testing.B) {
	for _, sched := range []idcore.Schedule{idcore.ScheduleV2(), idcore.ScheduleV1V2()} {
		b.Run(sched.Name(), func(b *testing.B) {
			g := realGen(b, sched)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Next(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSaturated drives one generator as hard as it goes with 1, 2 and 16 goroutines and
// reports its throughput as a fraction of the layout's limit, and the CPU it burns (cores).
// Run with -benchtime=2s.
func BenchmarkSaturated(b *testing.B) {
	for _, sched := range []idcore.Schedule{idcore.ScheduleV2(), idcore.ScheduleV1V2()} {
		_, lay := sched.At(time.Now().UnixMilli() - idcore.EpochUnixMs)
		for _, procs := range []int{1, 2, 16} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", lay.Name(), procs), func(b *testing.B) {
				g := realGen(b, sched)
				ctx := context.Background()
				b.SetParallelism(procs)
				cpu0, t0 := cpuTime(), time.Now()
				b.ResetTimer()
				if procs == 1 {
					for b.Loop() {
						_, _ = g.Next(ctx)
					}
				} else {
					b.SetParallelism(max(1, procs/2))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							_, _ = g.Next(ctx)
						}
					})
				}
				b.StopTimer()
				wall := time.Since(t0)
				rate := float64(b.N) / wall.Seconds()
				b.ReportMetric(rate, "ids/s")
				b.ReportMetric(rate/float64(lay.IDsPerSecond()), "of-limit")
				b.ReportMetric((cpuTime()-cpu0).Seconds()/wall.Seconds(), "cores")
			})
		}
	}
}

// BenchmarkBatch measures NextBatch(1000) at saturation, as a fraction of the layout's limit.
func BenchmarkBatch(b *testing.B) {
	g := realGen(b, idcore.ScheduleV2())
	ctx := context.Background()
	buf := make([]idcore.ID, 0, 1000)
	cpu0, t0 := cpuTime(), time.Now()
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = g.AppendBatch(ctx, buf[:0], 1000); err != nil {
			b.Fatal(err)
		}
	}
	wall := time.Since(t0)
	rate := float64(b.N*1000) / wall.Seconds()
	b.ReportMetric(rate, "ids/s")
	b.ReportMetric(rate/float64(idcore.V2().IDsPerSecond()), "of-limit")
	b.ReportMetric((cpuTime()-cpu0).Seconds()/wall.Seconds(), "cores")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBatchConcurrent measures batches from 16 goroutines at once (sizes as an embedded
// caller's or the client library's refills), as a fraction of the layout's limit.
func BenchmarkBatchConcurrent(b *testing.B) {
	for _, size := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			g := realGen(b, idcore.ScheduleV2())
			ctx := context.Background()
			b.SetParallelism(8) // 16 goroutines on 2 cores
			cpu0, t0 := cpuTime(), time.Now()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]idcore.ID, 0, size)
				for pb.Next() {
					var err error
					if buf, err = g.AppendBatch(ctx, buf[:0], size); err != nil {
						b.Error(err)
						return
					}
				}
			})
			wall := time.Since(t0)
			rate := float64(b.N*size) / wall.Seconds()
			b.ReportMetric(rate, "ids/s")
			b.ReportMetric(rate/float64(idcore.V2().IDsPerSecond()), "of-limit")
			b.ReportMetric((cpuTime()-cpu0).Seconds()/wall.Seconds(), "cores")
		})
	}
}

// BenchmarkSleepToNextMillisecond is the wait of a used-up millisecond on its own: the system
// clock's Sleep until the next millisecond begins, as a saturated generator waits once per
// millisecond, against a bare nanosleep to the same point (the least a wait can cost: one
// wake-up of the thread). It reports how late each wait ends past its millisecond (late-µs,
// the mean) and the CPU each wait burns (CPU-µs/wait), which is what a saturated generator
// spends beyond issuing its IDs.
func BenchmarkSleepToNextMillisecond(b *testing.B) {
	clock := idcore.SystemClock()
	ctx := context.Background()
	for _, w := range []struct {
		name string
		wait func(*testing.B, time.Duration)
	}{
		{"clock", func(b *testing.B, d time.Duration) {
			if err := clock.Sleep(ctx, d); err != nil {
				b.Fatal(err)
			}
		}},
		{"nanosleep", func(_ *testing.B, d time.Duration) {
			ts := syscall.NsecToTimespec(int64(d))
			_ = syscall.Nanosleep(&ts, nil)
		}},
	} {
		b.Run(w.name, func(b *testing.B) {
			var late time.Duration
			cpu0 := cpuTime()
			for b.Loop() {
				now := clock.Now()
				next := now.Truncate(time.Millisecond).Add(time.Millisecond)
				w.wait(b, next.Sub(now))
				late += clock.Now().Sub(next)
			}
			b.ReportMetric(float64(late.Microseconds())/float64(b.N), "late-µs")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "CPU-µs/wait")
		})
	}
}
