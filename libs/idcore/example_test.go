package idcore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
)

func ExampleSchedule_Decode() {
	d, _ := idcore.ScheduleV1V2().Decode(683244571854022659)
	fmt.Println(d.Layout, d.Time.Format(time.RFC3339), "region", d.Region, "machine", d.Machine, "seq", d.Sequence)
	// Output: v2 2031-03-01T09:30:00Z region 2 machine 170 seq 3
}

func ExampleGenerator() {
	clock := clocktest.NewClock(time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC))
	g, _ := idcore.NewGenerator(idcore.Settings{Region: 2, Clock: clock, Health: clocktest.Synced()})
	// In a real process the lease keeper sets and renews this.
	_ = g.SetLease("v2", idcore.Lease{Machine: 37, FloorUnixMs: clock.Now().UnixMilli() - 1,
		FenceUnixMs: clock.Now().Add(5 * time.Minute).UnixMilli()})
	ids, _ := g.NextBatch(context.Background(), 3)
	for _, id := range ids {
		d, _ := g.Schedule().Decode(id)
		fmt.Println(id, d.Machine, d.Sequence)
	}
	// Output:
	// 97301141914686464 37 0
	// 97301141914686465 37 1
	// 97301141914686466 37 2
}
