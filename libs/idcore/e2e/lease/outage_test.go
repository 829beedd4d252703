package lease_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/idcore/lease"
)

// The outage tests of the keeper run on a manual clock with the settings of the issue that found
// the outage bound wrong: a 15 s lease renewed every 5 s, fenced 3 s before its expiry.
const (
	oLease  = 15 * time.Second
	oRenew  = 5 * time.Second
	oMargin = 3 * time.Second
)

func outageKeeper(t *testing.T, st lease.Store, clock idcore.Clock) (*lease.Keeper, *idcore.Generator) {
	t.Helper()
	gen, err := idcore.NewGenerator(idcore.Settings{Clock: clock, Health: clocktest.Synced()})
	if err != nil {
		t.Fatal(err)
	}
	k, err := lease.NewKeeper(lease.Config{Store: st, Generator: gen, Range: lease.Range{Lo: 3, Hi: 3}, Clock: clock,
		Lease: oLease, Renew: oRenew, FenceMargin: oMargin})
	if err != nil {
		t.Fatal(err)
	}
	return k, gen
}

// TestKeeperRetriesOnAShortCadenceWhileTheStoreIsDown: however long the store has been down,
// renewal attempts start at most lease.RetryCadence (1 s) apart, so the first renewal after the
// store answers again comes within that second, and it extends the same lease from then.
func TestKeeperRetriesOnAShortCadenceWhileTheStoreIsDown(t *testing.T) {
	st := &unavailableStore{countingStore: sqliteStore(t)}
	clock := fakeClock()
	k, gen := outageKeeper(t, st, clock)
	run(t, k)
	if d := asleep(t, clock); d != oRenew {
		t.Fatalf("after the claim the keeper sleeps %v, want %v", d, oRenew)
	}
	held := k.Status()
	st.down.Store(true)
	clock.Advance(oRenew) // the renewal due fails, and so does every retry for 4 s
	downFor := time.Duration(0)
	var waits []time.Duration
	d := asleep(t, clock)
	for ; downFor < 4*time.Second; d = asleep(t, clock) {
		waits = append(waits, d)
		if d <= 0 || d > lease.RetryCadence {
			t.Fatalf("retries while the store is down after %v: %v; want each within (0, %v]", downFor, waits, lease.RetryCadence)
		}
		clock.Advance(d)
		downFor += d
	}
	if s := k.Status(); !s.Held || s.FenceUnixMs != held.FenceUnixMs || s.Problem == "" {
		t.Fatalf("while the store is down: %+v", s)
	}
	if _, err := gen.Next(context.Background()); err != nil {
		t.Fatalf("below the fence, with the store down: %v", err)
	}
	// The store answers again: the next attempt, within the cadence, renews.
	st.down.Store(false)
	back := clock.Now()
	if d > lease.RetryCadence {
		t.Fatalf("the next attempt after the store came back is %v away, want at most %v (retries %v; %+v)", d, lease.RetryCadence, waits, k.Status())
	}
	clock.Advance(d)
	if d := asleep(t, clock); d != oRenew {
		t.Fatalf("after the renewal the keeper sleeps %v, want %v", d, oRenew)
	}
	s := k.Status()
	if want := clock.Now().Add(oLease - oMargin).UnixMilli(); !s.Held || s.Epoch != held.Epoch || s.FenceUnixMs != want || s.Problem != "" {
		t.Fatalf("after the store came back: %+v, want the same lease with the fence at %d", s, want)
	}
	t.Logf("retries %v over %v down; renewed %v after the store came back", waits, downFor, clock.Now().Sub(back))
}

// TestKeeperDropsTheNumberAtTheFence: with the store down, the keeper never sleeps past its
// fence, and at the fence (not at its next retry) it drops the number: the generator refuses
// with no_lease from that instant.
func TestKeeperDropsTheNumberAtTheFence(t *testing.T) {
	st := &unavailableStore{countingStore: sqliteStore(t)}
	clock := fakeClock()
	k, gen := outageKeeper(t, st, clock)
	run(t, k)
	asleep(t, clock)
	held := k.Status()
	fence := time.UnixMilli(held.FenceUnixMs)
	st.down.Store(true)
	clock.Advance(oRenew)
	for {
		d := asleep(t, clock)
		if end := clock.Now().Add(d); end.After(fence) {
			t.Fatalf("with the store down the keeper sleeps until %v past its fence", end.Sub(fence))
		}
		clock.Advance(d)
		if !clock.Now().Before(fence) {
			break
		}
		if s := k.Status(); !s.Held {
			t.Fatalf("dropped %v before the fence: %+v", fence.Sub(clock.Now()), s)
		}
	}
	asleep(t, clock) // the round at the fence: drop, then a claim (the store is down: it fails)
	if !clock.Now().Equal(fence) {
		t.Fatalf("the round ran at %v, %v after the fence", clock.Now(), clock.Now().Sub(fence))
	}
	if s := k.Status(); s.Held {
		t.Fatalf("at the fence the keeper still holds %+v", s)
	}
	if _, err := gen.Next(context.Background()); !errors.Is(err, idcore.ErrNoLease) {
		t.Fatalf("at the fence: %v, want no_lease", err)
	}
}

// lateStore answers one renewal late: the keeper's clock moves by lag while the write is under
// way, as when the store holds the request through an outage.
type lateStore struct {
	*countingStore
	clock *clocktest.Clock
	lag   atomic.Int64 // the next Renew's lag; 0 after it
}

func (s *lateStore) Renew(ctx context.Context, m int, h string, e, exp int64) error {
	err := s.countingStore.Renew(ctx, m, h, e, exp)
	if lag := time.Duration(s.lag.Swap(0)); lag > 0 {
		s.clock.Advance(lag)
	}
	return err
}

// TestKeeperRenewsAgainAtOnceAfterALateAnswer: a renewal answered 8 s after it read its clock
// moves the fence to that reading + lease − margin, only 4 s away; the next renewal is due a renew
// interval after the reading, so it goes out at once instead of 5 s later, past that fence.
func TestKeeperRenewsAgainAtOnceAfterALateAnswer(t *testing.T) {
	clock := fakeClock()
	st := &lateStore{countingStore: sqliteStore(t), clock: clock}
	k, gen := outageKeeper(t, st, clock)
	run(t, k)
	asleep(t, clock)
	held := k.Status()
	st.lag.Store(int64(8 * time.Second))
	clock.Advance(oRenew)
	sent := clock.Now().Add(-8 * time.Second)
	d := asleep(t, clock)
	s := k.Status()
	if n := st.renewals.Load(); n != 2 || d != oRenew {
		t.Fatalf("after a renewal answered 8 s late: %d renewals, then a sleep of %v; want a second renewal at once, then %v", n, d, oRenew)
	}
	if want := clock.Now().Add(oLease - oMargin).UnixMilli(); !s.Held || s.Epoch != held.Epoch || s.FenceUnixMs != want {
		t.Fatalf("after the late renewal and the next: %+v, want the fence at %d (the late one's was %d)", s, want,
			sent.Add(oLease-oMargin).UnixMilli())
	}
	if _, err := gen.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// slowCheckStore lets the keeper's clock reach the fence while a renewal's table check waits on
// the store, and records the deadline every call of a renewal carries.
type slowCheckStore struct {
	*countingStore
	clock     *clocktest.Clock
	toFence   atomic.Bool
	fenceAt   atomic.Int64
	mu        sync.Mutex
	deadlines []time.Duration // each call's deadline, from when it was made
}

func (s *slowCheckStore) TableID(ctx context.Context) (string, error) {
	s.note(ctx)
	if s.toFence.Swap(false) {
		s.clock.Set(time.UnixMilli(s.fenceAt.Load()))
	}
	return s.countingStore.TableID(ctx)
}

func (s *slowCheckStore) Renew(ctx context.Context, m int, h string, e, exp int64) error {
	s.note(ctx)
	return s.countingStore.Renew(ctx, m, h, e, exp)
}

func (s *slowCheckStore) note(ctx context.Context) {
	d, ok := ctx.Deadline()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		s.deadlines = append(s.deadlines, -1)
		return
	}
	s.deadlines = append(s.deadlines, time.Until(d))
}

// TestRenewalAttemptsEndAtTheFence: every store call of a renewal carries a deadline no later
// than lease.AttemptTimeout or the fence, so a keeper waiting on a store that holds its requests
// gives up there and drops the number at the fence, not when the store answers (model rule
// renew_gives_up: the renewal given up on may still be applied later, and its answer is not
// used); and a keeper whose clock reaches the fence while its table check waits sends no renewal:
// it drops the number.
func TestRenewalAttemptsEndAtTheFence(t *testing.T) {
	clock := fakeClock()
	st := &slowCheckStore{countingStore: sqliteStore(t), clock: clock}
	k, gen := outageKeeper(t, st, clock)
	run(t, k)
	asleep(t, clock)
	st.mu.Lock()
	st.deadlines = nil // the claim's
	st.mu.Unlock()
	// The renewal due, 700 ms before the fence (the wall clock stepped forward): its calls must
	// give up at the fence.
	held := k.Status()
	clock.Step(time.UnixMilli(held.FenceUnixMs).Add(-700 * time.Millisecond).Sub(clock.Now().Add(oRenew)))
	clock.Advance(oRenew)
	asleep(t, clock)
	st.mu.Lock()
	deadlines := append([]time.Duration(nil), st.deadlines...)
	st.deadlines = nil
	st.mu.Unlock()
	if len(deadlines) != 3 {
		t.Fatalf("%d store calls in the renewal (%v), want the table check, the renewal, the check again", len(deadlines), deadlines)
	}
	for _, d := range deadlines {
		if d < 0 || d > 700*time.Millisecond {
			t.Fatalf("renewal calls' deadlines %v from each call; want each within the 700 ms left before the fence", deadlines)
		}
	}
	// The next renewal's table check lasts until the fence: no renewal is sent.
	renewed := k.Status()
	if renewed.FenceUnixMs <= held.FenceUnixMs {
		t.Fatalf("the renewal did not move the fence: %+v", renewed)
	}
	st.fenceAt.Store(renewed.FenceUnixMs)
	st.toFence.Store(true)
	renewals := st.renewals.Load()
	clock.Advance(oRenew)
	asleep(t, clock)
	if n := st.renewals.Load() - renewals; n != 0 {
		t.Fatalf("%d renewals sent at the fence", n)
	}
	if s := k.Status(); s.Held && s.Epoch == renewed.Epoch {
		t.Fatalf("at the fence the keeper still holds its lease: %+v", s)
	}
	if _, err := gen.Next(context.Background()); !errors.Is(err, idcore.ErrNoLease) {
		t.Fatalf("at the fence: %v, want no_lease", err)
	}
}
