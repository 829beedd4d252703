package bench

import (
	"context"
	"testing"
	"time"

	"github.com/bwmarrin/snowflake"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/sony/sonyflake/v2"
)

// burst is how many IDs one timed burst takes: well below one millisecond's sequence in every
// generator compared (v1: 4,096; bwmarrin: 4,096), so no burst waits for the next millisecond and
// the figure is the cost of an ID when the sequence is not used up.
const burst = 1000

// perID times bursts of `burst` calls of next, each in a fresh millisecond, and reports ns per ID. b.N counts IDs.
func perID(b *testing.B, next func() error) {
	b.Helper()
	b.ReportAllocs()
	var spent time.Duration
	for done := 0; done < b.N; {
		b.StopTimer()
		// Sleep into a later millisecond, so that the burst never finds a used-up sequence
		// (and a profile shows only the timed part).
		time.Sleep(time.Millisecond)
		n := min(burst, b.N-done)
		b.StartTimer()
		t0 := time.Now()
		for range n {
			if err := next(); err != nil {
				b.Fatal(err)
			}
		}
		spent += time.Since(t0)
		done += n
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "ns/id")
}

func idgenV1(b *testing.B) *idcore.Generator {
	b.Helper()
	sched := idcore.MustSchedule("v1", idcore.Period{Layout: idcore.V1()})
	g, err := idcore.NewGenerator(idcore.Settings{Schedule: sched, Health: clocktest.Synced()})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	if err := g.SetLease("v1", idcore.Lease{Machine: 1, FloorUnixMs: now.UnixMilli() - 1, FenceUnixMs: now.Add(time.Hour).UnixMilli()}); err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkPerID(b *testing.B) {
	b.Run("idgen", func(b *testing.B) {
		g := idgenV1(b)
		ctx := context.Background()
		perID(b, func() error { _, err := g.Next(ctx); return err })
	})
	b.Run("bwmarrin", func(b *testing.B) {
		n, err := snowflake.NewNode(1)
		if err != nil {
			b.Fatal(err)
		}
		perID(b, func() error { n.Generate(); return nil })
	})
	b.Run("sonyflake", func(b *testing.B) {
		sf, err := sonyflake.New(sonyflake.Settings{
			// The v1 shape (1 ms, 10 machine bits, 12 sequence bits), so the burst fits.
			TimeUnit: time.Millisecond, BitsMachineID: 10, BitsSequence: 12,
			StartTime: idcore.Epoch, MachineID: func() (int, error) { return 1, nil },
		})
		if err != nil {
			b.Fatal(err)
		}
		perID(b, func() error { _, err := sf.NextID(); return err })
	})
}
