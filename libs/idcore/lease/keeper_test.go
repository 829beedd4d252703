package lease_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func newKeeper(t *testing.T, st lease.Store, r lease.Range, clock idcore.Clock) (*lease.Keeper, *idcore.Generator) {
	t.Helper()
	gen, err := idcore.NewGenerator(idcore.Settings{Clock: clock, Health: clocktest.Synced()})
	if err != nil {
		t.Fatal(err)
	}
	k, err := lease.NewKeeper(lease.Config{Store: st, Generator: gen, Range: r, Clock: clock,
		Lease: 3 * time.Second, Renew: 100 * time.Millisecond, FenceMargin: 500 * time.Millisecond})
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
	deadline := time.Now().Add(5 * time.Second)
	for k.Status().Held != want {
		if time.Now().After(deadline) {
			t.Fatalf("held never became %v: %+v", want, k.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return k.Status()
}

func TestKeeperRenewsOncePerInterval(t *testing.T) {
	st := sqliteStore(t)
	k, _ := newKeeper(t, st, lease.Range{Lo: 1, Hi: 1}, nil)
	run(t, k)
	first := waitHeld(t, k, true)
	st.renewals.Store(0)
	time.Sleep(1050 * time.Millisecond)
	n := st.renewals.Load()
	// At most one per interval (more would be a renewal storm); a busy machine may run late.
	if n < 5 || n > 11 {
		t.Fatalf("%d renewals in 1.05 s at a 100 ms interval", n)
	}
	now := k.Status()
	if now.Machine != first.Machine || now.Epoch != first.Epoch || now.ExpiryUnixMs <= first.ExpiryUnixMs {
		t.Fatalf("renewals did not extend the same lease: %+v then %+v", first, now)
	}
	t.Logf("%d renewals per second at renew=100ms: %0.f store writes per minute at the default 10 s", n, 60/10.0)
}

func TestKeeperDropsALostLeaseAtOnce(t *testing.T) {
	st := sqliteStore(t)
	k, gen := newKeeper(t, st, lease.Range{Lo: 5, Hi: 6}, nil)
	run(t, k)
	held := waitHeld(t, k, true)
	if _, err := st.Quarantine(context.Background(), held.Machine); err != nil {
		t.Fatal(err)
	}
	// The next renewal fails its condition: the number is dropped and the other one claimed.
	deadline := time.Now().Add(3 * time.Second)
	for k.Status().Machine == held.Machine {
		if time.Now().After(deadline) {
			t.Fatalf("still holds the quarantined number: %+v", k.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
	now := waitHeld(t, k, true)
	if now.Machine == held.Machine {
		t.Fatalf("claimed the quarantined number again")
	}
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
	clock := &steppable{Clock: idcore.SystemClock()}
	k, gen := newKeeper(t, st, lease.Range{Lo: 9, Hi: 9}, clock)
	run(t, k)
	held := waitHeld(t, k, true)
	st.watchEpoch.Store(held.Epoch)
	clock.jump(3 * time.Second) // past the fence (expiry − 500 ms)
	if _, err := gen.Next(context.Background()); !errors.Is(err, idcore.ErrFence) && !errors.Is(err, idcore.ErrNoLease) {
		t.Fatalf("past the fence: %v", err)
	}
	// It claims again (its own expired row) under a new epoch, without one renewal of the old one.
	deadline := time.Now().Add(5 * time.Second)
	for k.Status().Epoch == held.Epoch {
		if time.Now().After(deadline) {
			t.Fatalf("no new claim: %+v", k.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A renewal sent on the jumped clock would ask for an expiry about 3 s beyond the real
	// clock's lease; renewals sent just before the jump ask for at most now + lease.
	if exp := st.watchedExpiry.Load(); exp > time.Now().Add(3*time.Second).UnixMilli() {
		t.Fatalf("the lapsed lease was renewed (to %d)", exp)
	}
	if again := k.Status(); again.Epoch != held.Epoch+1 || again.Machine != 9 {
		t.Fatalf("re-claim %+v after %+v", again, held)
	}
}

// steppable is the system clock with a wall-clock offset the test can change.
type steppable struct {
	idcore.Clock
	off atomic.Int64
}

func (s *steppable) jump(d time.Duration) { s.off.Store(int64(d)) }
func (s *steppable) Now() time.Time       { return s.Clock.Now().Add(time.Duration(s.off.Load())) }

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
	id, err := lease.CheckTable(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if meta, _ := s.Meta(ctx); meta != id {
		t.Fatalf("first check wrote meta %q, table is %q", meta, id)
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
	if _, err := lease.CheckTable(ctx, s); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("rows without a metadata row: %v", err)
	}
	_ = s.SetMeta(ctx, id) // the metadata row as backed up: it names the old table
	if _, err := lease.CheckTable(ctx, s); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("metadata naming the old table: %v", err)
	}
	n, err := lease.FenceRestore(ctx, s, now, 5*time.Minute, 5*time.Second)
	if err != nil || n != 1 {
		t.Fatalf("FenceRestore = %d, %v", n, err)
	}
	newID, err := lease.CheckTable(ctx, s)
	if err != nil || newID == id {
		t.Fatalf("after the fence: %q, %v", newID, err)
	}
	r, _ := s.Get(ctx, 3)
	if r.Epoch != 2 || r.ExpiryUnixMs != now.Add(5*time.Minute+5*time.Second).UnixMilli() {
		t.Fatalf("fenced row %+v", r)
	}
	holder, _, err := lease.WhoHeld(ctx, s, 3, now.Add(time.Second), time.Minute)
	if err != nil || holder == nil || holder.Kind != "fence" {
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
	if err != nil || len(evs) != 2 || evs[0].Kind != "claim" || evs[1].Kind != "release" || evs[1].Epoch != evs[0].Epoch {
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
	k, gen := newKeeper(t, st, lease.Range{Lo: 1, Hi: 1}, nil)
	run(t, k)
	deadline := time.Now().Add(time.Second)
	for !st.claimed.Load() || !containsRestored(k.Status().Problem) {
		if time.Now().After(deadline) {
			t.Fatalf("the keeper never met the restore: %+v", k.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s := k.Status(); s.Held {
		t.Fatalf("the keeper holds a number claimed on a restored table: %+v", s)
	}
	// The claim never took effect: it is not in the history (a claim is recorded before any ID
	// can be issued under it), so no ID was issued under it.
	evs, err := st.History(context.Background(), 1, 0, time.Now().Add(time.Hour).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == "claim" {
			t.Fatalf("a claim on the restored table was put to use: %+v", ev)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if id, err := gen.Next(ctx); err == nil {
		t.Fatalf("an ID was issued under a claim on a restored table: %v", id)
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
