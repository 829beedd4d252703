package lease_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The keeper settings of these tests: renewals every 100 ms of a 3 s lease, fence 500 ms before
// its expiry.
const (
	testLease  = 3 * time.Second
	testRenew  = 100 * time.Millisecond
	testMargin = 500 * time.Millisecond
)

func newKeeper(t *testing.T, st lease.Store, r lease.Range, clock idcore.Clock) (*lease.Keeper, *idcore.Generator) {
	t.Helper()
	gen, err := idcore.NewGenerator(idcore.Settings{Clock: clock, Health: clocktest.Synced()})
	if err != nil {
		t.Fatal(err)
	}
	k, err := lease.NewKeeper(lease.Config{Store: st, Generator: gen, Range: r, Clock: clock,
		Lease: testLease, Renew: testRenew, FenceMargin: testMargin})
	if err != nil {
		t.Fatal(err)
	}
	return k, gen
}

func sqliteStore(t *testing.T) *countingStore {
	t.Helper()
	s, err := sqlitelease.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"), lease.TableV2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &countingStore{Store: s}
}

func run(t *testing.T, k *lease.Keeper) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitHeld(t *testing.T, k *lease.Keeper, want bool) lease.Status {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return k.Status().Held == want, fmt.Sprintf("held is not %v: %+v", want, k.Status())
	})
	return k.Status()
}

// fakeClock is a manual clock for a keeper: time passes only when the test advances it. It starts
// at the real time, so the rows the keeper writes read as the real ones would.
func fakeClock() *clocktest.Clock {
	return clocktest.NewManualClock(time.Now().Truncate(time.Millisecond))
}

// asleep waits until the keeper has finished its round and sleeps on clock, and returns how long
// it sleeps for.
func asleep(t *testing.T, clock *clocktest.Clock) time.Duration {
	t.Helper()
	var left []time.Duration
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		left = clock.Sleeping()
		return len(left) == 1, fmt.Sprintf("%d sleeps on the clock, want the keeper's one", len(left))
	})
	return left[0]
}

func TestKeeperRenewsOncePerInterval(t *testing.T) {
	st := sqliteStore(t)
	clock := fakeClock()
	k, _ := newKeeper(t, st, lease.Range{Lo: 1, Hi: 1}, clock)
	run(t, k)
	if d := asleep(t, clock); d != testRenew {
		t.Fatalf("after the claim the keeper sleeps %v, want the renew interval %v", d, testRenew)
	}
	first := k.Status()
	if !first.Held || st.renewals.Load() != 0 {
		t.Fatalf("after the claim: %+v, %d renewals", first, st.renewals.Load())
	}
	for i := int64(1); i <= 10; i++ {
		clock.Advance(testRenew - time.Millisecond)
		if left := clock.Sleeping(); len(left) != 1 || left[0] != time.Millisecond || st.renewals.Load() != i-1 {
			t.Fatalf("1 ms before renewal %d: sleeps %v, %d renewals", i, left, st.renewals.Load())
		}
		clock.Advance(time.Millisecond)
		if d := asleep(t, clock); d != testRenew {
			t.Fatalf("after renewal %d the keeper sleeps %v, want %v", i, d, testRenew)
		}
		// One renewal per interval, extending the same lease to now + lease.
		s := k.Status()
		if n := st.renewals.Load(); n != i {
			t.Fatalf("%d renewals in %d intervals", n, i)
		}
		if wantExp := clock.Now().Add(testLease).UnixMilli(); s.Machine != first.Machine || s.Epoch != first.Epoch || s.ExpiryUnixMs != wantExp {
			t.Fatalf("renewal %d: %+v after %+v, want expiry %d", i, s, first, wantExp)
		}
	}
}

func TestKeeperDropsALostLeaseAtOnce(t *testing.T) {
	st := sqliteStore(t)
	clock := fakeClock()
	k, gen := newKeeper(t, st, lease.Range{Lo: 5, Hi: 6}, clock)
	run(t, k)
	asleep(t, clock)
	held := k.Status()
	if _, err := st.Quarantine(context.Background(), held.Machine); err != nil {
		t.Fatal(err)
	}
	// The next renewal fails its condition: in that one round the number is dropped and the
	// other one claimed, with no wait in between.
	sleeps := clock.Sleeps()
	clock.Advance(testRenew)
	if d := asleep(t, clock); d != testRenew {
		t.Fatalf("after the re-claim the keeper sleeps %v, want %v", d, testRenew)
	}
	if n := clock.Sleeps() - sleeps; n != 1 {
		t.Fatalf("%d sleeps between the lost renewal and the claim that followed, want none", n-1)
	}
	now := k.Status()
	if !now.Held || now.Machine == held.Machine {
		t.Fatalf("after the quarantine of %d: %+v", held.Machine, now)
	}
	clock.Advance(time.Millisecond) // past the new number's floor, the claim's :now
	id, err := gen.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := gen.Schedule().Decode(id); d.Machine != now.Machine {
		t.Fatalf("id from machine %d, keeper holds %d", d.Machine, now.Machine)
	}
}

// TestKeeperNeverRenewsALapsedLease: a keeper whose clock reaches its fence before a renewal
// succeeded drops the number and never renews the lapsed lease (model rule no_lapsed_renewal).
func TestKeeperNeverRenewsALapsedLease(t *testing.T) {
	st := sqliteStore(t)
	clock := fakeClock()
	k, gen := newKeeper(t, st, lease.Range{Lo: 9, Hi: 9}, clock)
	run(t, k)
	asleep(t, clock)
	held := k.Status()
	// The wall clock passes the fence (expiry − 500 ms) before the next renewal, as after a
	// pause or a step: nothing is issued past it.
	clock.Step(testLease)
	if _, err := gen.Next(context.Background()); !errors.Is(err, idcore.ErrFence) {
		t.Fatalf("past the fence: %v", err)
	}
	// The next round claims again (its own expired row) under a new epoch, without one renewal.
	renewals := st.renewals.Load()
	clock.Advance(testRenew)
	asleep(t, clock)
	if n := st.renewals.Load() - renewals; n != 0 {
		t.Fatalf("the lapsed lease was renewed (%d renewals)", n)
	}
	if again := k.Status(); !again.Held || again.Epoch != held.Epoch+1 || again.Machine != 9 {
		t.Fatalf("re-claim %+v after %+v", again, held)
	}
}

// unavailableStore is a real store that answers ErrUnavailable while down is set.
type unavailableStore struct {
	*countingStore
	down atomic.Bool
}

func (s *unavailableStore) TableID(ctx context.Context) (string, error) {
	if s.down.Load() {
		return "", lease.ErrUnavailable
	}
	return s.Store.TableID(ctx)
}

// TestKeeperBacksOffWhileTheStoreIsDown: while renewals fail, the keeper retries with doubling
// waits (from a twentieth of the renew interval up to the interval, with jitter), the generator
// issues up to the fence and not past it, and the first renewal that succeeds moves the fence.
func TestKeeperBacksOffWhileTheStoreIsDown(t *testing.T) {
	st := &unavailableStore{countingStore: sqliteStore(t)}
	clock := fakeClock()
	k, gen := newKeeper(t, st, lease.Range{Lo: 2, Hi: 2}, clock)
	run(t, k)
	asleep(t, clock)
	held := k.Status()
	st.down.Store(true)
	clock.Advance(testRenew)
	var d time.Duration
	for backoff := testRenew / 20; ; backoff = min(2*backoff, testRenew) {
		d = asleep(t, clock)
		if d < backoff/2 || d >= backoff {
			t.Fatalf("retry after %v, want [%v, %v)", d, backoff/2, backoff)
		}
		if _, err := gen.Next(context.Background()); err != nil {
			t.Fatalf("before the fence, with the store down: %v", err)
		}
		if clock.Now().Add(d+testRenew).UnixMilli() >= held.FenceUnixMs {
			break
		}
		clock.Advance(d)
	}
	if s := k.Status(); s.FenceUnixMs != held.FenceUnixMs || !strings.Contains(s.Problem, "unavailable") {
		t.Fatalf("while the store is down: %+v", s)
	}
	// Nothing is issued at the fence (the wall clock steps there, and back).
	toFence := time.UnixMilli(held.FenceUnixMs).Sub(clock.Now())
	clock.Step(toFence)
	if _, err := gen.Next(context.Background()); !errors.Is(err, idcore.ErrFence) {
		t.Fatalf("at the fence with the store down: %v", err)
	}
	clock.Step(-toFence)
	// The store answers again: the next retry renews, and the fence moves.
	st.down.Store(false)
	clock.Advance(d)
	if d := asleep(t, clock); d != testRenew {
		t.Fatalf("after the renewal the keeper sleeps %v, want %v", d, testRenew)
	}
	s := k.Status()
	if want := clock.Now().Add(testLease - testMargin).UnixMilli(); s.FenceUnixMs != want || s.Problem != "" || s.Epoch != held.Epoch {
		t.Fatalf("after the store came back: %+v, want the fence at %d", s, want)
	}
	if _, err := gen.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestKeeperRejectsUnsafeSettings(t *testing.T) {
	gen, _ := idcore.NewGenerator(idcore.Settings{Health: clocktest.Synced()})
	st := sqliteStore(t)
	base := lease.Config{Store: st, Generator: gen, Range: lease.Range{Lo: 0, Hi: 3}}
	tests := []struct {
		name string
		mut  func(*lease.Config)
	}{
		{"renew above a third", func(c *lease.Config) { c.Lease, c.Renew = time.Minute, 21*time.Second }},
		{"margin equals lease", func(c *lease.Config) { c.FenceMargin = 5 * time.Minute }},
		{"negative margin", func(c *lease.Config) { c.FenceMargin = -time.Second }},
		{"no store", func(c *lease.Config) { c.Store = nil }},
		{"empty range", func(c *lease.Config) { c.Range = lease.Range{Lo: 4, Hi: 3} }},
		{"range past the layout", func(c *lease.Config) { c.Range = lease.Range{Lo: 0, Hi: 512} }},
		{"unknown layout", func(c *lease.Config) { c.Layout = "v9" }},
		{"reserved holder", func(c *lease.Config) { c.Holder = lease.QuarantineHolder }},
		{"reserved holder LIFTED", func(c *lease.Config) { c.Holder = lease.LiftedHolder }},
		{"reserved holder FENCED", func(c *lease.Config) { c.Holder = lease.FencedHolder }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mut(&c)
			if _, err := lease.NewKeeper(c); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := lease.NewKeeper(base); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
}

func TestParseRange(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want lease.Range
		ok   bool
	}{
		{"service", 511, lease.Range{Lo: 0, Hi: 63}, true},
		{"embedded", 511, lease.Range{Lo: 64, Hi: 511}, true},
		{"embedded", 1023, lease.Range{Lo: 64, Hi: 1023}, true},
		{"10-20", 511, lease.Range{Lo: 10, Hi: 20}, true},
		{"20-10", 511, lease.Range{}, false},
		{"0-512", 511, lease.Range{}, false},
		{"x", 511, lease.Range{}, false},
	} {
		got, err := lease.ParseRange(tt.in, tt.max)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseRange(%q, %d) = %v, %v", tt.in, tt.max, got, err)
		}
	}
}

// TestCheckTableAndRestoreFence: CheckTable refuses a restored table until FenceRestore has set
// every row to now + lease + margin with epoch + 1 and written the metadata row (model rules
// check_table and restore_fence).
func TestCheckTableAndRestoreFence(t *testing.T) {
	ctx := context.Background()
	s, err := sqlitelease.Open(ctx, filepath.Join(t.TempDir(), "l.db"), lease.TableV2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := lease.Settings{Lease: 5 * time.Minute, Renew: 10 * time.Second, Margin: 5 * time.Second}
	id, err := lease.CheckTable(ctx, s, h)
	if err != nil {
		t.Fatal(err)
	}
	if meta, _ := s.Meta(ctx); meta.TableID != id || meta.Rules != lease.DefaultRules(h.Lease, h.Renew, h.Margin) {
		t.Fatalf("first check wrote meta %+v, table is %q", meta, id)
	}
	now := time.Now()
	if _, err := s.Claim(ctx, 3, "a", now.UnixMilli(), now.Add(time.Minute).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	rows, _ := s.List(ctx)
	// A restore: the table comes back with its old rows, a new incarnation, and no metadata row.
	if err := s.Recreate(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if _, err := lease.CheckTable(ctx, s, h); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("rows without a metadata row: %v", err)
	}
	_ = s.SetMeta(ctx, lease.Meta{TableID: id, Rules: lease.DefaultRules(h.Lease, h.Renew, h.Margin)}) // the metadata row as backed up: it names the old table
	if _, err := lease.CheckTable(ctx, s, h); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("metadata naming the old table: %v", err)
	}
	// Eight numbers in the layout: the one row is fenced, and the seven numbers the restored
	// table has no row for (first claimed after the backup, or never) get a FENCED row each.
	// The fence takes the lease and the margin from the table's rules.
	n, _, err := lease.FenceRestore(ctx, s, now, 8)
	if err != nil || n != 8 {
		t.Fatalf("FenceRestore = %d, %v, want 8 rows", n, err)
	}
	absent, err := s.Get(ctx, 5)
	if err != nil || absent.Holder != lease.FencedHolder || absent.ExpiryUnixMs != now.Add(5*time.Minute+5*time.Second).UnixMilli() {
		t.Fatalf("a number without a row after the fence: %+v, %v", absent, err)
	}
	if _, err := s.Claim(ctx, 5, "gen-b", now.Add(time.Minute).UnixMilli(), now.Add(2*time.Minute).UnixMilli()); !errors.Is(err, lease.ErrTaken) {
		t.Fatalf("a claim of a number that had no row, before the fence's expiry: %v, want ErrTaken", err)
	}
	newID, err := lease.CheckTable(ctx, s, h)
	if err != nil || newID == id {
		t.Fatalf("after the fence: %q, %v", newID, err)
	}
	r, _ := s.Get(ctx, 3)
	if r.Epoch != 2 || r.ExpiryUnixMs != now.Add(5*time.Minute+5*time.Second).UnixMilli() {
		t.Fatalf("fenced row %+v", r)
	}
	holder, _, err := lease.WhoHeld(ctx, s, 3, now.Add(time.Second), time.Minute)
	if err != nil || holder == nil || holder.Kind != lease.KindFence {
		t.Fatalf("WhoHeld = %+v, %v", holder, err)
	}
}

// TestClaimForAStoppedGeneratorIsGivenBack: a number claimed after the generator stopped is
// released at once, and the history records the claim and its release.
func TestClaimForAStoppedGeneratorIsGivenBack(t *testing.T) {
	st := sqliteStore(t)
	k, gen := newKeeper(t, st, lease.Range{Lo: 7, Hi: 7}, nil)
	gen.Stop()
	if err := k.ClaimOnce(context.Background()); err == nil {
		t.Fatal("claimed for a stopped generator")
	}
	ctx := context.Background()
	row, err := st.Get(ctx, 7)
	if err != nil || row.ExpiryUnixMs > time.Now().UnixMilli() {
		t.Fatalf("the number was not given back: %+v, %v", row, err)
	}
	evs, err := st.History(ctx, 7, 0, time.Now().UnixMilli()+1000)
	if err != nil || len(evs) != 2 || evs[0].Kind != lease.KindClaim || evs[1].Kind != lease.KindRelease || evs[1].Epoch != evs[0].Epoch {
		t.Fatalf("history = %+v, %v", evs, err)
	}
}

// restoredDuringClaim is a real store on which the table is restored (its table ID changes)
// between the keeper's table check and its claim, as when a holder pauses in between.
type restoredDuringClaim struct {
	lease.Store
	claimed atomic.Bool
}

func (s *restoredDuringClaim) Claim(ctx context.Context, m int, h string, now, exp int64) (lease.Row, error) {
	s.claimed.Store(true)
	return s.Store.Claim(ctx, m, h, now, exp)
}

func (s *restoredDuringClaim) TableID(ctx context.Context) (string, error) {
	if s.claimed.Load() {
		return "a-restored-table", nil
	}
	return s.Store.TableID(ctx)
}

// TestClaimOnATableRestoredMeanwhile: a claim that lands on a table restored after the keeper's
// check is not used: no ID is issued under it (model rule claim_table_recheck).
func TestClaimOnATableRestoredMeanwhile(t *testing.T) {
	st := &restoredDuringClaim{Store: sqliteStore(t)}
	clock := fakeClock()
	k, gen := newKeeper(t, st, lease.Range{Lo: 1, Hi: 1}, clock)
	run(t, k)
	// The claim round fails; the keeper tries again within a renew interval.
	if d := asleep(t, clock); d < testRenew/2 || d >= testRenew {
		t.Fatalf("after the failed claim the keeper sleeps %v, want [%v, %v)", d, testRenew/2, testRenew)
	}
	if s := k.Status(); !st.claimed.Load() || !containsRestored(s.Problem) {
		t.Fatalf("the keeper never met the restore: %+v", s)
	}
	if s := k.Status(); s.Held {
		t.Fatalf("the keeper holds a number claimed on a restored table: %+v", s)
	}
	// The claim is in the history (it is written before the second table check, so that a table
	// restored to before its first claim is told from a new one), but no ID is issued under it.
	evs, err := st.History(context.Background(), 1, 0, clock.Now().Add(time.Hour).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != lease.KindClaim {
		t.Fatalf("history of the claim on the restored table: %+v, want the one claim event", evs)
	}
	if id, err := gen.Next(context.Background()); !errors.Is(err, idcore.ErrNoLease) {
		t.Fatalf("Next under a claim on a restored table: %v, %v; want no_lease", id, err)
	}
}

func containsRestored(problem string) bool {
	return problem != "" && (strings.Contains(problem, "restored") || strings.Contains(problem, "changed"))
}

// TestKeeperSeriesStartAtZero: every claim and renewal result is exported from the first scrape.
func TestKeeperSeriesStartAtZero(t *testing.T) {
	k, _ := newKeeper(t, sqliteStore(t), lease.Range{Lo: 1, Hi: 1}, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(k.Collectors()...)
	if n, err := testutil.GatherAndCount(reg, "idgen_lease_claims_total", "idgen_lease_renewals_total"); err != nil || n != 9 {
		t.Fatalf("%d series before any claim (%v), want 9: every result at zero", n, err)
	}
}
