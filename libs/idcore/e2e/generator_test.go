package idcore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/testenv"
)

var start = time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC)

type fixture struct {
	g      *idcore.Generator
	clock  *clocktest.Clock
	health *clocktest.Health
}

// newGen returns a generator on a fake clock at start, holding machine 5 of layout v2 in region 2,
// with a fence an hour away.
func newGen(t *testing.T, mutate func(*idcore.Settings)) fixture {
	t.Helper()
	f := fixture{clock: clocktest.NewClock(start), health: clocktest.Synced()}
	s := idcore.Settings{Region: 2, Clock: f.clock, Health: f.health}
	if mutate != nil {
		mutate(&s)
	}
	g, err := idcore.NewGenerator(s)
	if err != nil {
		t.Fatal(err)
	}
	f.g = g
	for _, p := range g.Schedule().Periods() {
		if err := g.SetLease(p.Layout.Name(), idcore.Lease{Machine: 5, FloorUnixMs: start.UnixMilli() - 1, FenceUnixMs: start.Add(time.Hour).UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestNextDecodes(t *testing.T) {
	f := newGen(t, nil)
	id, err := f.g.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, _ := f.g.Schedule().Decode(id)
	if d.Layout != "v2" || d.Region != 2 || d.Machine != 5 || d.Sequence != 0 || !d.Time.Equal(start) {
		t.Fatalf("decoded %+v", d)
	}
}

func TestConcurrentUniqueAndIncreasing(t *testing.T) {
	const workers, per = 8, 1_000_000
	f := newGen(t, nil)
	// The fake clock moves only when the generator waits for the next millisecond, so this
	// also exercises sequence exhaustion about 7,800 times.
	out := make([][]idcore.ID, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ids := make([]idcore.ID, 0, per)
			for range per {
				id, err := f.g.Next(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				ids = append(ids, id)
			}
			out[w] = ids
		})
	}
	wg.Wait()
	all := make([]idcore.ID, 0, workers*per)
	for w, ids := range out {
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("worker %d: id %d after %d", w, ids[i], ids[i-1])
			}
		}
		all = append(all, ids...)
	}
	slices.Sort(all)
	dups := 0
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			dups++
		}
	}
	t.Logf("checked %d ids from %d goroutines: %d duplicates", len(all), workers, dups)
	if dups != 0 || len(all) != workers*per {
		t.Fatalf("%d duplicates among %d ids", dups, len(all))
	}
}

func TestBatchesIncreasingAndDisjoint(t *testing.T) {
	f := newGen(t, nil)
	ctx := context.Background()
	var all []idcore.ID
	for _, n := range []int{1, 1000, 1000, 1024, 3000, 7} {
		ids, err := f.g.NextBatch(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != n {
			t.Fatalf("batch of %d returned %d ids", n, len(ids))
		}
		one, _ := f.g.Next(ctx)
		all = append(all, ids...)
		all = append(all, one)
	}
	for i := 1; i < len(all); i++ {
		if all[i] <= all[i-1] {
			t.Fatalf("id %d after %d at %d", all[i], all[i-1], i)
		}
	}
	for _, n := range []int{0, -1} {
		if _, err := f.g.NextBatch(ctx, n); err == nil {
			t.Errorf("batch of %d accepted", n)
		}
	}
}

func TestConcurrentBatchesAndSingles(t *testing.T) {
	f := newGen(t, nil)
	var mu sync.Mutex
	var all []idcore.ID
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			var mine []idcore.ID
			for range 200 {
				if w%2 == 0 {
					ids, err := f.g.NextBatch(context.Background(), 700)
					if err != nil {
						t.Error(err)
						return
					}
					mine = append(mine, ids...)
				} else {
					id, _ := f.g.Next(context.Background())
					mine = append(mine, id)
				}
			}
			if !slices.IsSorted(mine) {
				t.Errorf("worker %d: ids not increasing", w)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(all)
	if len(slices.Compact(all)) != 2*200*700+2*200 {
		t.Fatal("duplicates between batches and single ids")
	}
}

func TestClockBackSmallStepWaits(t *testing.T) {
	f := newGen(t, nil)
	ctx := context.Background()
	f.clock.Advance(10 * time.Millisecond)
	first, _ := f.g.Next(ctx)
	f.clock.Step(-3 * time.Millisecond)
	sleeps := f.clock.Sleeps()
	next, err := f.g.Next(ctx)
	if err != nil {
		t.Fatalf("3 ms back: %v", err)
	}
	if f.clock.Sleeps() == sleeps {
		t.Fatal("did not wait for the clock to catch up")
	}
	if next <= first || next.Timestamp() < first.Timestamp() {
		t.Fatalf("id %d (ts %d) not above %d (ts %d)", next, next.Timestamp(), first, first.Timestamp())
	}
}

func TestClockBackLargeStepRefuses(t *testing.T) {
	f := newGen(t, nil)
	ctx := context.Background()
	f.clock.Advance(100 * time.Millisecond)
	first, _ := f.g.Next(ctx)
	f.clock.Step(-50 * time.Millisecond)
	for range 3 {
		if _, err := f.g.Next(ctx); !errors.Is(err, idcore.ErrClockBackwards) || idcore.Reason(err) != "clock_backwards" {
			t.Fatalf("50 ms back: err = %v", err)
		}
		if err := f.g.Ready(); !errors.Is(err, idcore.ErrClockBackwards) {
			t.Fatalf("Ready while 50 ms back = %v", err)
		}
		f.clock.Step(10 * time.Millisecond) // still behind
	}
	f.clock.Step(25 * time.Millisecond) // caught up: 5 ms ahead of the last id
	next, err := f.g.Next(ctx)
	if err != nil || next <= first {
		t.Fatalf("after catching up: %d, %v (first %d)", next, err, first)
	}
	if err := f.g.Ready(); err != nil {
		t.Fatalf("Ready after catching up = %v", err)
	}
}

func TestUnsyncedClock(t *testing.T) {
	for _, mode := range []idcore.ClockCheck{idcore.ClockStrict, idcore.ClockWarn} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newGen(t, func(s *idcore.Settings) { s.ClockCheck = mode })
			f.health.Set(idcore.KernelClock{Synchronized: false}, nil)
			st := f.g.CheckClock()
			if st.Healthy || st.Problem != "unsynchronized" {
				t.Fatalf("status %+v", st)
			}
			_, err := f.g.Next(context.Background())
			if mode == idcore.ClockStrict && !errors.Is(err, idcore.ErrClockUnsynced) {
				t.Fatalf("strict: err = %v, want clock_unsynced", err)
			}
			if mode == idcore.ClockWarn && err != nil {
				t.Fatalf("warn: err = %v, want an id", err)
			}
			f.health.Set(idcore.KernelClock{Synchronized: true, EstimatedError: 20 * time.Millisecond}, nil)
			if st := f.g.CheckClock(); st.Problem != "estimated_error" {
				t.Fatalf("20 ms estimated error: %+v", st)
			}
			f.health.Set(idcore.KernelClock{Synchronized: true, EstimatedError: time.Millisecond}, nil)
			if st := f.g.CheckClock(); !st.Healthy {
				t.Fatalf("healthy again: %+v", st)
			}
			if _, err := f.g.Next(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestForwardJumpIsUnhealthyForAWhile(t *testing.T) {
	f := newGen(t, func(s *idcore.Settings) { s.JumpHold = 2 * time.Second })
	f.clock.Step(time.Second)
	if st := f.g.CheckClock(); st.Problem != "forward_jump" {
		t.Fatalf("after a 1 s step forward: %+v", st)
	}
	if _, err := f.g.Next(context.Background()); !errors.Is(err, idcore.ErrClockUnsynced) {
		t.Fatalf("err = %v", err)
	}
	f.clock.Advance(3 * time.Second)
	if st := f.g.CheckClock(); !st.Healthy {
		t.Fatalf("after the hold: %+v", st)
	}
}

func TestSequenceExhaustionMovesToNextMs(t *testing.T) {
	f := newGen(t, nil)
	ctx := context.Background()
	ids, err := f.g.NextBatch(ctx, 1024+10)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.g.Schedule().Decode(ids[1023])
	b, _ := f.g.Schedule().Decode(ids[1024])
	if a.Sequence != 1023 || b.Sequence != 0 || b.Timestamp != a.Timestamp+1 {
		t.Fatalf("across exhaustion: %+v then %+v", a.Parts, b.Parts)
	}
}

// TestFenceAndFloor: every ID is checked against the fence (never at or past it) and the floor
// (never at or below it), whatever the lease did before (model rule issue).
func TestFenceAndFloor(t *testing.T) {
	f := newGen(t, nil)
	ctx := context.Background()
	fence := start.Add(2 * time.Millisecond).UnixMilli()
	if err := f.g.SetLease("v2", idcore.Lease{Machine: 5, FloorUnixMs: start.UnixMilli() - 1, FenceUnixMs: fence}); err != nil {
		t.Fatal(err)
	}
	// 2 ms of 1,024 IDs fit before the fence; the next one would be at the fence.
	if _, err := f.g.NextBatch(ctx, 2048); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Next(ctx); !errors.Is(err, idcore.ErrFence) || idcore.Reason(err) != "fence" {
		t.Fatalf("at the fence: %v", err)
	}
	if last := f.g.LastUnixMs(); last >= fence {
		t.Fatalf("issued at %d, fence %d", last, fence)
	}
	// A new number whose floor lies ahead of the clock: nothing at or below the floor.
	floor := start.Add(4 * time.Millisecond).UnixMilli()
	if err := f.g.SetLease("v2", idcore.Lease{Machine: 9, FloorUnixMs: floor, FenceUnixMs: floor + 60000}); err != nil {
		t.Fatal(err)
	}
	id, err := f.g.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := id.Time().UnixMilli(); got <= floor {
		t.Fatalf("issued at %d, floor %d", got, floor)
	}
	// A floor far ahead (the clock is behind the claim's own clock by more than the wait): refuse.
	if err := f.g.SetLease("v2", idcore.Lease{Machine: 10, FloorUnixMs: floor + 1000, FenceUnixMs: floor + 60000}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Next(ctx); !errors.Is(err, idcore.ErrClockBackwards) {
		t.Fatalf("floor 1 s ahead: %v", err)
	}
}

// TestReadyRefusesAsNextDoes: Ready answers what Next does at the same moment: not ready with
// Next's refusal, or ready when Next issues (after a wait within the back-step wait, if any).
func TestReadyRefusesAsNextDoes(t *testing.T) {
	lease := func(f fixture, floor, fence time.Time) {
		t.Helper()
		if err := f.g.SetLease("v2", idcore.Lease{Machine: 9, FloorUnixMs: floor.UnixMilli(), FenceUnixMs: fence.UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		setup func(fixture)
		want  error // nil: ready, and Next issues
	}{
		{"held", func(fixture) {}, nil},
		// A new number claimed on a clock ahead of this one: its floor lies ahead by more than
		// the back-step wait, so Next refuses instead of waiting.
		{"floor ahead beyond the back-step wait", func(f fixture) {
			lease(f, start.Add(6*time.Millisecond), start.Add(time.Hour))
		}, idcore.ErrClockBackwards},
		{"floor ahead within the back-step wait", func(f fixture) {
			lease(f, start.Add(4*time.Millisecond), start.Add(time.Hour))
		}, nil},
		{"fence reached", func(f fixture) { lease(f, start.Add(-time.Minute), start) }, idcore.ErrFence},
		{"dropped", func(f fixture) { f.g.DropLease("v2") }, idcore.ErrNoLease},
		{"stopped", func(f fixture) { f.g.Stop() }, idcore.ErrNoLease},
		{"clock unsynchronized", func(f fixture) {
			f.health.Set(idcore.KernelClock{Synchronized: false}, nil)
			f.g.CheckClock()
		}, idcore.ErrClockUnsynced},
		{"clock stepped back beyond the wait", func(f fixture) {
			f.clock.Advance(100 * time.Millisecond)
			if _, err := f.g.Next(context.Background()); err != nil {
				t.Fatal(err)
			}
			f.clock.Step(-50 * time.Millisecond)
		}, idcore.ErrClockBackwards},
		{"clock stepped back within the wait", func(f fixture) {
			f.clock.Advance(100 * time.Millisecond)
			if _, err := f.g.Next(context.Background()); err != nil {
				t.Fatal(err)
			}
			f.clock.Step(-3 * time.Millisecond)
		}, nil},
		{"timestamp bits exhausted", func(f fixture) {
			lease(f, idcore.Epoch, time.Unix(0, 0).Add(1<<62))
			f.clock.Set(idcore.Epoch.Add(time.Duration(idcore.MaxTimestamp+1) * time.Millisecond))
		}, idcore.ErrTimestampExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newGen(t, nil)
			tt.setup(f)
			ready := f.g.Ready()
			_, next := f.g.Next(context.Background())
			if !errors.Is(ready, tt.want) || !errors.Is(next, tt.want) || (tt.want == nil) != (ready == nil) || (tt.want == nil) != (next == nil) {
				t.Fatalf("Ready = %v, Next = %v; want both %v", ready, next, tt.want)
			}
			if idcore.Reason(ready) != idcore.Reason(next) {
				t.Fatalf("Ready's reason %q, Next's %q", idcore.Reason(ready), idcore.Reason(next))
			}
		})
	}
}

// TestNewNumberStaysAboveIssued: SetLease starts a new number above both its floor and every
// timestamp already issued (model rule set_lease).
func TestNewNumberStaysAboveIssued(t *testing.T) {
	f := newGen(t, nil)
	ctx := context.Background()
	a, _ := f.g.Next(ctx)
	// Same millisecond, a lower machine number: the next ID must still be larger.
	if err := f.g.SetLease("v2", idcore.Lease{Machine: 1, FloorUnixMs: start.UnixMilli() - 5, FenceUnixMs: start.Add(time.Hour).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	b, err := f.g.Next(ctx)
	if err != nil || b <= a {
		t.Fatalf("after the change of number: %d, %v (before %d)", b, err, a)
	}
}

func TestRefusalsWithoutLease(t *testing.T) {
	clock := clocktest.NewClock(start)
	g, err := idcore.NewGenerator(idcore.Settings{Schedule: idcore.ScheduleV1V2(), Clock: clock, Health: clocktest.Synced()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := g.Next(ctx); !errors.Is(err, idcore.ErrLayoutNotConfigured) {
		t.Fatalf("no lease ever: %v", err)
	}
	// A v2 number only: the v1 period (now) is not configured.
	_ = g.SetLease("v2", idcore.Lease{Machine: 3, FenceUnixMs: 1 << 62})
	if _, err := g.Next(ctx); !errors.Is(err, idcore.ErrLayoutNotConfigured) {
		t.Fatalf("v1 period with a v2 number: %v", err)
	}
	_ = g.SetLease("v1", idcore.Lease{Machine: 700, FenceUnixMs: 1 << 62})
	if _, err := g.Next(ctx); err != nil {
		t.Fatal(err)
	}
	g.DropLease("v1")
	if _, err := g.Next(ctx); !errors.Is(err, idcore.ErrNoLease) {
		t.Fatalf("dropped: %v", err)
	}
	if err := g.SetLease("v3", idcore.Lease{}); !errors.Is(err, idcore.ErrLayoutNotConfigured) {
		t.Fatalf("unknown layout: %v", err)
	}
	if err := g.SetLease("v2", idcore.Lease{Machine: 512}); !errors.Is(err, idcore.ErrInvalidField) {
		t.Fatalf("machine 512 in v2: %v", err)
	}
	// At the cutover the generator switches to its v2 number.
	_ = g.SetLease("v1", idcore.Lease{Machine: 700, FenceUnixMs: 1 << 62})
	clock.Set(idcore.Epoch.Add(time.Duration(idcore.CutoverV1V2-1) * time.Millisecond))
	a, _ := g.Next(ctx)
	clock.Advance(time.Millisecond)
	b, _ := g.Next(ctx)
	da, _ := g.Schedule().Decode(a)
	db, _ := g.Schedule().Decode(b)
	if da.Layout != "v1" || da.Machine != 700 || db.Layout != "v2" || db.Machine != 3 || b <= a {
		t.Fatalf("across the cutover: %+v then %+v", da, db)
	}
}

func TestTimestampExhausted(t *testing.T) {
	f := newGen(t, nil)
	_ = f.g.SetLease("v2", idcore.Lease{Machine: 5, FenceUnixMs: 1 << 62})
	f.clock.Set(idcore.Epoch.Add(time.Duration(idcore.MaxTimestamp) * time.Millisecond))
	if _, err := f.g.Next(context.Background()); err != nil {
		t.Fatalf("last millisecond: %v", err)
	}
	f.clock.Advance(time.Millisecond)
	if _, err := f.g.Next(context.Background()); !errors.Is(err, idcore.ErrTimestampExhausted) {
		t.Fatalf("past 2095: %v", err)
	}
}

func TestStop(t *testing.T) {
	f := newGen(t, nil)
	id, _ := f.g.Next(context.Background())
	last := f.g.Stop()
	if last != id.Time().UnixMilli() {
		t.Fatalf("Stop returned %d, last id at %d", last, id.Time().UnixMilli())
	}
	if _, err := f.g.Next(context.Background()); !errors.Is(err, idcore.ErrNoLease) {
		t.Fatalf("after Stop: %v", err)
	}
	if err := f.g.SetLease("v2", idcore.Lease{Machine: 1, FenceUnixMs: 1 << 62}); err == nil {
		t.Fatal("SetLease after Stop accepted")
	}
}

func TestWaitIsCancellable(t *testing.T) {
	// The real clock: a 4 ms back-step would be waited for, but the context is already done.
	g, err := idcore.NewGenerator(idcore.Settings{Health: clocktest.Synced()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	_ = g.SetLease("v2", idcore.Lease{Machine: 1, FloorUnixMs: now.UnixMilli() + 4, FenceUnixMs: now.Add(time.Hour).UnixMilli()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestSettingsRejected(t *testing.T) {
	for _, s := range []idcore.Settings{
		{BackStepWait: -time.Millisecond},
		{BackStepWait: 2 * time.Second},
		{ClockCheck: 7},
		{Region: 8},
	} {
		if _, err := idcore.NewGenerator(s); err == nil {
			t.Errorf("NewGenerator(%+v) accepted", s)
		}
	}
}

// TestBatchesTakeTurns: concurrent batches are served in turn, each taking all the sequence it
// needs from consecutive milliseconds, so none is starved by the others' races for each new
// millisecond. A batch of 1,000 (less than one millisecond's 1,024) spans at most two.
func TestBatchesTakeTurns(t *testing.T) {
	f := newGen(t, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	worst := int64(0)
	for range 8 {
		wg.Go(func() {
			for range 100 {
				ids, err := f.g.NextBatch(context.Background(), 1000)
				if err != nil {
					t.Error(err)
					return
				}
				span := ids[len(ids)-1].Timestamp() - ids[0].Timestamp()
				mu.Lock()
				worst = max(worst, span)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if worst > 1 {
		t.Fatalf("a batch of 1,000 spanned %d ms: it waited while other batches took the sequence", worst+1)
	}
}

// TestQueuedBatchIsCancellable: a batch waiting for its turn gives up when its context ends,
// instead of waiting for the batch ahead of it.
func TestQueuedBatchIsCancellable(t *testing.T) {
	clock := clocktest.NewManualClock(start)
	g, err := idcore.NewGenerator(idcore.Settings{Clock: clock, Health: clocktest.Synced()})
	if err != nil {
		t.Fatal(err)
	}
	// The floor lies 3 ms ahead: the first batch holds its turn while it waits for the clock,
	// which moves only when the test advances it.
	_ = g.SetLease("v2", idcore.Lease{Machine: 1, FloorUnixMs: start.UnixMilli() + 3, FenceUnixMs: start.Add(time.Hour).UnixMilli()})
	first := make(chan error, 1)
	go func() { _, err := g.NextBatch(context.Background(), 10); first <- err }()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		n := len(clock.Sleeping())
		return n == 1, fmt.Sprintf("%d waits on the clock, want the first batch's", n)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	queued := make(chan error, 1)
	go func() { _, err := g.NextBatch(ctx, 10); queued <- err }()
	select {
	case err := <-queued:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("queued batch: %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the queued batch did not give up when its context ended: it waits for the batch ahead")
	}
	clock.Advance(4 * time.Millisecond)
	if err := <-first; err != nil {
		t.Fatalf("the first batch: %v", err)
	}
}

// TestSameMillisecondChecks: within one millisecond of the manual clock (Next's fast path), a
// dropped or stopped lease, a renewal whose fence is at the current timestamp, and a clock check
// that finds the clock unhealthy each refuse the very next ID, as admitLocked would.
func TestSameMillisecondChecks(t *testing.T) {
	ctx := context.Background()
	fenceAtNow := idcore.Lease{Machine: 5, FloorUnixMs: start.UnixMilli() - 1, FenceUnixMs: start.UnixMilli()}
	for _, tc := range []struct {
		name   string
		change func(f fixture)
		want   error
	}{
		{"drop", func(f fixture) { f.g.DropLease("v2") }, idcore.ErrNoLease},
		{"stop", func(f fixture) { f.g.Stop() }, idcore.ErrNoLease},
		{"renewal to a fence at now", func(f fixture) {
			if err := f.g.SetLease("v2", fenceAtNow); err != nil {
				t.Fatal(err)
			}
		}, idcore.ErrFence},
		{"clock unsynced", func(f fixture) { f.health.Set(idcore.KernelClock{}, nil); f.g.CheckClock() }, idcore.ErrClockUnsynced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGen(t, nil)
			f.clock.Set(start.Add(10 * time.Millisecond))
			fenceAtNow.FenceUnixMs = start.Add(10 * time.Millisecond).UnixMilli()
			var last idcore.ID
			for i := range 3 {
				id, err := f.g.Next(ctx)
				if err != nil || id <= last {
					t.Fatalf("ID %d: %v, %v after %v", i, id, err, last)
				}
				last = id
			}
			tc.change(f)
			if _, err := f.g.Next(ctx); !errors.Is(err, tc.want) {
				t.Fatalf("after %s: %v, want %v", tc.name, err, tc.want)
			}
		})
	}
}

// stallingClock is a fake clock whose process is descheduled for stall right after it reads
// the wall clock, the next stalls times it is read: both clocks move on during the stall, as
// they do for a process the kernel or the runtime takes off the CPU between two reads.
type stallingClock struct {
	*clocktest.Clock
	stalls int
	stall  time.Duration
}

func (c *stallingClock) Now() time.Time {
	now := c.Clock.Now()
	if c.stalls > 0 {
		c.stalls--
		c.Clock.Advance(c.stall)
	}
	return now
}

// TestStallBetweenReadsIsNoJump: a check descheduled between its wall-clock and monotonic reads
// is not a forward jump, at that check or the next; a real step after it still is.
func TestStallBetweenReadsIsNoJump(t *testing.T) {
	for _, stalls := range []int{1, 2, 10} {
		t.Run(fmt.Sprintf("stalls=%d", stalls), func(t *testing.T) {
			clock := &stallingClock{Clock: clocktest.NewClock(start)}
			f := newGen(t, func(s *idcore.Settings) { s.Clock = clock })
			if st := f.g.CheckClock(); !st.Healthy {
				t.Fatalf("first check: %+v", st)
			}
			clock.stalls, clock.stall = stalls, 50*time.Millisecond
			for i := range 3 {
				clock.Advance(time.Second)
				if st := f.g.CheckClock(); !st.Healthy {
					t.Fatalf("check %d after a 50 ms stall between reads: %+v", i, st)
				}
			}
			if _, err := f.g.Next(context.Background()); err != nil {
				t.Fatalf("after the stall: %v", err)
			}
			clock.Step(time.Second)
			if st := f.g.CheckClock(); st.Problem != "forward_jump" {
				t.Fatalf("a 1 s step after the stall: %+v", st)
			}
		})
	}
}
