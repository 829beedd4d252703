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
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
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
// restored to before its first claim from a new one (model rules claim_table_recheck and
// claim_event_first).
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
// sharing the history) do not count: nobody claims from it until the restore fence (model rules
// check_table and check_table_history, variant NEW_IF_EMPTY).
func TestCheckTableRefusesAnEmptyTableWithItsHistory(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	clock := fakeClock()
	k, _ := newKeeper(t, st, lease.Range{Lo: 1, Hi: 1}, clock)
	if err := k.ClaimOnce(ctx); err != nil {
		t.Fatal(err)
	}
	// The v1 table in the same file shares the history: its first claimer finds none of the v2
	// table's events and takes its table for new.
	v1, err := sqlitelease.Open(ctx, st.Store.(*sqlitelease.Store).Path(), lease.TableV1)
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	if _, err := lease.CheckTable(ctx, v1, lease.Settings{Lease: testLease, Renew: testRenew, Margin: testMargin}); err != nil {
		t.Fatalf("the v1 table beside the v2 table's history: %v", err)
	}
	if err := st.Store.(*sqlitelease.Store).Recreate(ctx, nil); err != nil {
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
// to start (model rule check_rules, variant RULES_UNCHECKED).
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

// TestLiftUsesTheTablesRules: lease.Lift takes the lease and the margin from the table's rules,
// whatever the caller's own settings: a table whose rules say 20 minutes keeps a lifted number
// unclaimable for 20 minutes and the margin (model rule lift_rules, variant OP_FLAGS).
func TestLiftUsesTheTablesRules(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	now := time.Now().Truncate(time.Millisecond)
	rules := lease.DefaultRules(20*time.Minute, 0, 5*time.Second)
	if _, err := lease.InitTable(ctx, st, rules, now, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Quarantine(ctx, 5); err != nil {
		t.Fatal(err)
	}
	row, got, err := lease.Lift(ctx, st, 5, now)
	if err != nil || got != rules || row.ExpiryUnixMs != now.Add(20*time.Minute+5*time.Second).UnixMilli() {
		t.Fatalf("Lift = %+v, %+v, %v; want expiry now + 20m + 5s", row, got, err)
	}
	if _, err := st.Claim(ctx, 5, "b", now.Add(20*time.Minute).UnixMilli(), now.Add(30*time.Minute).UnixMilli()); !errors.Is(err, lease.ErrTaken) {
		t.Fatalf("claim 20 minutes after the lift: %v, want ErrTaken until the margin has passed too", err)
	}
	// A table without rules: nothing to lift with.
	st2 := sqliteStore(t)
	if _, err := st2.Quarantine(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lease.Lift(ctx, st2, 5, now); !errors.Is(err, lease.ErrNoRules) {
		t.Fatalf("Lift on a table without rules: %v, want ErrNoRules", err)
	}
}

// TestRestoreFenceTakesTheRulesFromTheHistory: a table restored from a backup taken before its
// first claim has no metadata row, so no rules; the restore fence takes them from the last rules
// event of the table in the history (which the restore left alone), with no lease given, and
// writes them back into the metadata row (model rule fence_rules).
func TestRestoreFenceTakesTheRulesFromTheHistory(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	s := st.Store.(*sqlitelease.Store)
	now := time.Now().Truncate(time.Millisecond)
	rules := lease.DefaultRules(20*time.Minute, 0, 5*time.Second)
	if _, err := lease.InitTable(ctx, st, rules, now, "test"); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendHistory(ctx, lease.Event{Machine: 2, AtUnixMs: now.UnixMilli(), Kind: lease.KindClaim, Holder: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Recreate(ctx, nil); err != nil { // the restore: no rows, no metadata row
		t.Fatal(err)
	}
	if r, from, err := lease.TableRules(ctx, st, now); err != nil || r != rules || from != "history" {
		t.Fatalf("TableRules = %+v, %q, %v; want the history's", r, from, err)
	}
	n, r, err := lease.FenceRestore(ctx, st, now, 4)
	if err != nil || n != 4 || r != rules {
		t.Fatalf("FenceRestore = %d, %+v, %v", n, r, err)
	}
	if row, _ := st.Get(ctx, 2); row.ExpiryUnixMs != now.Add(20*time.Minute+5*time.Second).UnixMilli() {
		t.Fatalf("fenced row %+v, want the table's 20 min and 5 s from the fence", row)
	}
	if meta, err := st.Meta(ctx); err != nil || meta.Rules != rules {
		t.Fatalf("metadata row after the fence: %+v, %v", meta, err)
	}
}
