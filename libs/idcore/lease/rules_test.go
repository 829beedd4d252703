package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/idcore/lease"
)

// restoredDuringRenewal is a real store on which the table is restored (its table ID changes)
// after the keeper's table check and before its renewal lands, as when a holder pauses in between.
type restoredDuringRenewal struct {
	lease.Store
	renewed atomic.Bool
}

func (s *restoredDuringRenewal) Renew(ctx context.Context, m int, h string, epoch, exp int64) error {
	s.renewed.Store(true)
	return s.Store.Renew(ctx, m, h, epoch, exp)
}

func (s *restoredDuringRenewal) TableID(ctx context.Context) (string, error) {
	if s.renewed.Load() {
		return "a-restored-table", nil
	}
	return s.Store.TableID(ctx)
}

// TestRenewalOnATableRestoredMeanwhile: a renewal that lands on a table restored after the
// keeper's TableId check (it matches the stale row's holder and epoch) does not move the fence:
// the keeper drops the number (model rule renew_table_recheck).
func TestRenewalOnATableRestoredMeanwhile(t *testing.T) {
	st := &restoredDuringRenewal{Store: sqliteStore(t)}
	clock := fakeClock()
	k, gen := newKeeper(t, st, lease.Range{Lo: 1, Hi: 1}, clock)
	if err := k.ClaimOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := k.Status()
	clock.Advance(testRenew)
	run(t, k) // a held number: it renews at once
	asleep(t, clock)
	if !st.renewed.Load() || k.Status().Held {
		t.Fatalf("the keeper kept the number after renewing a restored table: %+v", k.Status())
	}
	if _, fence, ok := gen.Held("v2"); ok {
		t.Fatalf("the generator still holds the number (fence %d, was %d)", fence, before.FenceUnixMs)
	}
	s := k.Status()
	if !containsRestored(s.Problem) {
		t.Fatalf("the keeper's problem does not name the table change: %q", s.Problem)
	}
	if s.ExpiryUnixMs != before.ExpiryUnixMs || s.FenceUnixMs != before.FenceUnixMs {
		t.Fatalf("the renewal on the restored table moved the lease: expiry %d → %d, fence %d → %d",
			before.ExpiryUnixMs, s.ExpiryUnixMs, before.FenceUnixMs, s.FenceUnixMs)
	}
}

// TestKeeperDropsWhenTheTableChanges: a renewal finds the table's ID changed since the claim (a
// restore) and drops the number before renewing (model rule table_changed).
func TestKeeperDropsWhenTheTableChanges(t *testing.T) {
	st := &switchedTable{Store: sqliteStore(t)}
	k, gen := newKeeper(t, st, lease.Range{Lo: 1, Hi: 1}, nil)
	if err := k.ClaimOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.restored.Store(true)
	run(t, k)
	waitHeld(t, k, false)
	if _, _, ok := gen.Held("v2"); ok {
		t.Fatal("the generator still holds the number of a changed table")
	}
	if !containsRestored(k.Status().Problem) {
		t.Fatalf("problem %q does not name the table change", k.Status().Problem)
	}
}

// switchedTable reports a new table ID once restored is set.
type switchedTable struct {
	lease.Store
	restored atomic.Bool
}

func (s *switchedTable) TableID(ctx context.Context) (string, error) {
	if s.restored.Load() {
		return "a-restored-table", nil
	}
	return s.Store.TableID(ctx)
}

// fixedClock is the system clock with its wall time stopped at one instant.
type fixedClock struct {
	idcore.Clock
	t time.Time
}

func (c fixedClock) Now() time.Time { return c.t }

// TestClaimFloorAndFenceFromClaimTime: a claim writes expiry = :now + lease with :now the
// claimer's clock, and gives the generator floor = :now and fence = expiry − margin (model rule
// claim).
func TestClaimFloorAndFenceFromClaimTime(t *testing.T) {
	st := sqliteStore(t)
	now := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	k, _ := newKeeper(t, st, lease.Range{Lo: 2, Hi: 2}, fixedClock{idcore.SystemClock(), now})
	if err := k.ClaimOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := k.Status()
	wantExp := now.Add(3 * time.Second).UnixMilli()
	if s.ExpiryUnixMs != wantExp || s.FenceUnixMs != wantExp-500 {
		t.Fatalf("expiry %d fence %d, want %d and %d", s.ExpiryUnixMs, s.FenceUnixMs, wantExp, wantExp-500)
	}
	row, err := st.Get(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if row.ExpiryUnixMs != wantExp || row.Epoch != 1 {
		t.Fatalf("row %+v, want expiry %d epoch 1", row, wantExp)
	}
	evs, err := st.History(context.Background(), 2, 0, wantExp)
	if err != nil || len(evs) != 1 || evs[0].AtUnixMs != now.UnixMilli() {
		t.Fatalf("history %+v %v: want one claim at :now %d (the floor)", evs, err, now.UnixMilli())
	}
}

// TestRenewalFenceFromExpiryWritten: a renewal writes now + lease and the fence becomes that
// expiry − margin, never the reply's arrival time plus the lease (model rule renew).
func TestRenewalFenceFromExpiryWritten(t *testing.T) {
	st := sqliteStore(t)
	clock := fakeClock()
	k, _ := newKeeper(t, st, lease.Range{Lo: 3, Hi: 3}, clock)
	if err := k.ClaimOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := k.Status()
	clock.Advance(testRenew)
	run(t, k) // a held number: it renews at once
	asleep(t, clock)
	s := k.Status()
	row, err := st.Get(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if wantExp := clock.Now().Add(testLease).UnixMilli(); s.ExpiryUnixMs != wantExp || s.FenceUnixMs != wantExp-500 || row.ExpiryUnixMs != wantExp || row.Epoch != first.Epoch {
		t.Fatalf("status %+v, row %+v: want fence = written expiry − margin, same epoch", s, row)
	}
}

// TestReleaseExpiryIsTheLastIssuedTimestamp: a release sets lease_expiry to the later of now and
// the last issued timestamp (never later than the lease), so the next holder's floor lies above
// every ID of this one (model rule release).
func TestReleaseExpiryIsTheLastIssuedTimestamp(t *testing.T) {
	st := sqliteStore(t)
	now := time.Now().Truncate(time.Millisecond)
	k, _ := newKeeper(t, st, lease.Range{Lo: 4, Hi: 4}, fixedClock{idcore.SystemClock(), now})
	if err := k.ClaimOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := now.Add(200 * time.Millisecond).UnixMilli() // issued ahead of this clock
	if err := k.Release(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	row, err := st.Get(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if row.ExpiryUnixMs != last {
		t.Fatalf("released expiry %d, want the last issued timestamp %d", row.ExpiryUnixMs, last)
	}
	if _, err := st.Claim(context.Background(), 4, "next", last, last+1000); err == nil {
		t.Fatal("claimed at :now = the last issued timestamp: its floor would not lie above it")
	}
	if _, err := st.Claim(context.Background(), 4, "next", last+1, last+1000); err != nil {
		t.Fatalf("no claim just after the release: %v", err)
	}
}

// TestLiftedNumberWaitsALeaseAndTheMargin: a lifted quarantine gets expiry now + lease + margin
// (LiftExpiry), so the number is claimable only after every fence its holders had before the
// quarantine has passed (model rule lift).
func TestLiftedNumberWaitsALeaseAndTheMargin(t *testing.T) {
	st := sqliteStore(t)
	now := time.Now().Truncate(time.Millisecond)
	if _, err := st.Claim(context.Background(), 5, "a", now.UnixMilli(), now.Add(3*time.Second).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Quarantine(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	exp := lease.LiftExpiry(now, lease.Rules{Lease: 3 * time.Second, Margin: 500 * time.Millisecond})
	if exp != now.Add(3500*time.Millisecond).UnixMilli() {
		t.Fatalf("LiftExpiry = %d, want now + lease + margin", exp)
	}
	row, err := st.Lift(context.Background(), 5, exp)
	if err != nil || row.Holder != lease.LiftedHolder || row.Epoch != 3 {
		t.Fatalf("lift: %+v %v", row, err)
	}
	// Holder a's fence was at most now + lease − margin: no claim may start below it.
	if _, err := st.Claim(context.Background(), 5, "b", now.Add(3*time.Second).UnixMilli(), now.Add(6*time.Second).UnixMilli()); err == nil {
		t.Fatal("a lifted number was claimable within a lease of the lift")
	}
	if _, err := st.Claim(context.Background(), 5, "b", exp+1, exp+3000); err != nil {
		t.Fatalf("not claimable after the lift's expiry: %v", err)
	}
}

// historyDown is a real store whose lease history cannot be written.
type historyDown struct{ lease.Store }

func (historyDown) AppendHistory(context.Context, lease.Event) error {
	return fmt.Errorf("%w: the history table is down", lease.ErrUnavailable)
}

// TestClaimNotUsedWithoutItsHistoryEvent: a claim whose history event cannot be written is given
// back and nothing is issued under it: the table's events in the history are what tell a table
// restored to before its first claim from a new one (model rule claim_table_recheck).
func TestClaimNotUsedWithoutItsHistoryEvent(t *testing.T) {
	ctx := context.Background()
	st := historyDown{Store: sqliteStore(t)}
	clock := fakeClock()
	k, gen := newKeeper(t, st, lease.Range{Lo: 1, Hi: 1}, clock)
	run(t, k)
	asleep(t, clock) // the claim round failed; the keeper waits to try again
	if s := k.Status(); s.Held {
		t.Fatalf("the keeper holds a number whose claim is not in the history: %+v", s)
	}
	if id, err := gen.Next(ctx); !errors.Is(err, idcore.ErrNoLease) {
		t.Fatalf("Next = %v, %v; want no_lease", id, err)
	}
	row, err := st.Get(ctx, 1)
	if err != nil || row.ExpiryUnixMs > clock.Now().UnixMilli() {
		t.Fatalf("the claimed number was not given back: %+v, %v", row, err)
	}
}

// TestCheckTableRefusesAnEmptyTableWithItsHistory: a lease table with no row and no metadata
// row beside a history holding its events is a restore of a backup taken before the first claim
// (or a table created again), not a new table, while another table's events (the v1 table
// sharing the history) do not count: nobody claims from it until the restore fence (model rule
// check_table, variant NEW_IF_EMPTY).
func TestCheckTableRefusesAnEmptyTableWithItsHistory(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	clock := fakeClock()
	k, _ := newKeeper(t, st, lease.Range{Lo: 1, Hi: 1}, clock)
	if err := k.ClaimOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Store.(interface {
		Recreate(context.Context, []lease.Row) error
	}).Recreate(ctx, nil); err != nil {
		t.Fatal(err)
	}
	k2, gen2 := newKeeper(t, st, lease.Range{Lo: 2, Hi: 2}, clock)
	if err := k2.ClaimOnce(ctx); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("a claim on an empty table whose history holds its claim: %v, want ErrRestored", err)
	}
	if _, err := gen2.Next(ctx); !errors.Is(err, idcore.ErrNoLease) {
		t.Fatalf("Next: %v, want no_lease", err)
	}
}

// TestKeeperWithOtherSettingsIsRefused: a keeper whose lease differs from the rules the table's
// first holder wrote claims nothing, and CheckRules names both values for its owner to refuse
// to start.
func TestKeeperWithOtherSettingsIsRefused(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	k, _ := newKeeper(t, st, lease.Range{Lo: 1, Hi: 1}, nil)
	if err := k.ClaimOnce(ctx); err != nil {
		t.Fatal(err)
	}
	gen, _ := idcore.NewGenerator(idcore.Settings{Health: clocktest.Synced()})
	other, err := lease.NewKeeper(lease.Config{Store: st, Generator: gen, Range: lease.Range{Lo: 2, Hi: 2},
		Lease: 6 * time.Second, Renew: testRenew, FenceMargin: testMargin})
	if err != nil {
		t.Fatal(err)
	}
	err = other.CheckRules(ctx)
	if !errors.Is(err, lease.ErrRules) || !strings.Contains(err.Error(), "lease 6s (the table's: 3s)") {
		t.Fatalf("CheckRules = %v, want ErrRules naming 6s and 3s", err)
	}
	if err := other.ClaimOnce(ctx); !errors.Is(err, lease.ErrRules) {
		t.Fatalf("claim by a keeper with another lease: %v, want ErrRules", err)
	}
	if _, err := st.Get(ctx, 2); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("the refused keeper wrote number 2's row: %v", err)
	}
	if err := k.CheckRules(ctx); err != nil {
		t.Fatalf("the first keeper's own rules: %v", err)
	}
}
