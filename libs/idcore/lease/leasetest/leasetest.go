// Package leasetest is the conformance suite of the lease.Store contract. Every driver runs it:
//
//	func TestConformance(t *testing.T) {
//		leasetest.Run(t, leasetest.Driver{New: newEmptyStore, Unavailable: newStoreWhoseServerIsDown,
//			Sibling: otherTableSameHistory, Restore: emptyTableNewID})
//	}
package leasetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore/lease"
)

// Driver is what the suite needs of a driver.
type Driver struct {
	// New returns a store on an empty, never used table with an empty history.
	New func(t *testing.T) lease.Store
	// Unavailable returns a store on a table that existed but whose storage can no longer be
	// reached (the server process stopped, the file's store closed): every call on it must fail
	// with lease.ErrUnavailable.
	Unavailable func(t *testing.T) lease.Store
	// Sibling returns a store on another, empty lease table that shares s's history table (the
	// v1 and v2 tables of a v1-v2 schedule).
	Sibling func(t *testing.T, s lease.Store) lease.Store
	// Restore puts back s's lease table as a restore of a backup taken before its first claim
	// does: empty, no metadata row, a new table ID, the history left as it is. It returns the
	// store to use from then on (s itself where the driver allows).
	Restore func(t *testing.T, s lease.Store) lease.Store
}

// Run runs the suite.
func Run(t *testing.T, d Driver) {
	newStore, unavailable := d.New, d.Unavailable
	ctx := context.Background()
	const now = 1_800_000_000_000
	const lease5m = 300_000

	t.Run("ClaimAbsentRow", func(t *testing.T) {
		s := newStore(t)
		r, err := s.Claim(ctx, 7, "a", now, now+lease5m)
		if err != nil {
			t.Fatal(err)
		}
		want := lease.Row{Machine: 7, Holder: "a", ExpiryUnixMs: now + lease5m, Epoch: 1}
		if r != want {
			t.Fatalf("claim returned %+v, want %+v", r, want)
		}
		if got, err := s.Get(ctx, 7); err != nil || got != want {
			t.Fatalf("Get = %+v, %v", got, err)
		}
	})

	t.Run("ClaimHeldRowIsRefused", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, 3, "a", now, now+lease5m)
		for _, at := range []int64{now + 1, now + lease5m} { // not expired; exactly at expiry (condition is <)
			if _, err := s.Claim(ctx, 3, "b", at, at+lease5m); !errors.Is(err, lease.ErrTaken) {
				t.Fatalf("claim at %d of a row expiring at %d: err = %v, want ErrTaken", at, now+lease5m, err)
			}
		}
		if r := mustGet(t, s, 3); r.Holder != "a" || r.Epoch != 1 {
			t.Fatalf("a refused claim changed the row: %+v", r)
		}
	})

	t.Run("ClaimExpiredRowBumpsEpoch", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, 3, "a", now, now+lease5m)
		at := int64(now + lease5m + 1)
		r, err := s.Claim(ctx, 3, "b", at, at+lease5m)
		if err != nil || r.Holder != "b" || r.Epoch != 2 || r.ExpiryUnixMs != at+lease5m {
			t.Fatalf("claim of an expired row = %+v, %v", r, err)
		}
	})

	t.Run("Renew", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, 1, "a", now, now+lease5m)
		if err := s.Renew(ctx, 1, "a", 1, now+lease5m+10_000); err != nil {
			t.Fatal(err)
		}
		if r := mustGet(t, s, 1); r.ExpiryUnixMs != now+lease5m+10_000 || r.Epoch != 1 {
			t.Fatalf("after renew: %+v", r)
		}
		for _, tt := range []struct {
			name    string
			machine int
			holder  string
			epoch   int64
			expiry  int64
		}{
			{"other holder", 1, "b", 1, now + lease5m + 20_000},
			{"other epoch", 1, "a", 2, now + lease5m + 20_000},
			{"not later", 1, "a", 1, now + lease5m + 10_000},
			{"earlier", 1, "a", 1, now},
			{"absent row", 2, "a", 1, now + lease5m},
		} {
			if err := s.Renew(ctx, tt.machine, tt.holder, tt.epoch, tt.expiry); !errors.Is(err, lease.ErrLost) {
				t.Errorf("%s: err = %v, want ErrLost", tt.name, err)
			}
		}
		if r := mustGet(t, s, 1); r.ExpiryUnixMs != now+lease5m+10_000 {
			t.Fatalf("a refused renewal changed the row: %+v", r)
		}
	})

	t.Run("Release", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, 4, "a", now, now+lease5m)
		if err := s.Release(ctx, 4, "a", 2, now+5); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("release with the wrong epoch: %v", err)
		}
		if err := s.Release(ctx, 4, "a", 1, now+5); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Claim(ctx, 4, "b", now+5, now+lease5m); !errors.Is(err, lease.ErrTaken) {
			t.Fatalf("claim at the released expiry: %v", err)
		}
		if r, err := s.Claim(ctx, 4, "b", now+6, now+lease5m); err != nil || r.Epoch != 2 {
			t.Fatalf("claim after release: %+v, %v", r, err)
		}
	})

	t.Run("QuarantineAndLift", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, 9, "a", now, now+lease5m)
		q, err := s.Quarantine(ctx, 9)
		if err != nil || !q.Quarantined() || q.ExpiryUnixMs != lease.QuarantineExpiryUnixMs || q.Epoch != 2 {
			t.Fatalf("quarantine = %+v, %v", q, err)
		}
		if err := s.Renew(ctx, 9, "a", 1, now+lease5m+1); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("renewal of a quarantined number: %v", err)
		}
		if _, err := s.Claim(ctx, 9, "b", lease.QuarantineExpiryUnixMs-1, lease.QuarantineExpiryUnixMs+1); !errors.Is(err, lease.ErrTaken) {
			t.Fatalf("claim of a quarantined number: %v", err)
		}
		if q, err := s.Quarantine(ctx, 10); err != nil || !q.Quarantined() || q.Epoch != 1 {
			t.Fatalf("quarantine of an absent number = %+v, %v", q, err)
		}
		if _, err := s.Lift(ctx, 11, now); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("lift of a number never quarantined: %v", err)
		}
		l, err := s.Lift(ctx, 9, now+10)
		if err != nil || l.Holder != lease.LiftedHolder || l.Epoch != 3 || l.ExpiryUnixMs != now+10 {
			t.Fatalf("lift = %+v, %v", l, err)
		}
		if r, err := s.Claim(ctx, 9, "b", now+11, now+lease5m); err != nil || r.Epoch != 4 {
			t.Fatalf("claim after lift = %+v, %v", r, err)
		}
	})

	t.Run("ListAndMeta", func(t *testing.T) {
		s := newStore(t)
		id, err := s.TableID(ctx)
		if err != nil || id == "" {
			t.Fatalf("TableID = %q, %v", id, err)
		}
		if again, err := s.TableID(ctx); err != nil || again != id {
			t.Fatalf("TableID changed: %q then %q, %v", id, again, err)
		}
		if _, err := s.Meta(ctx); !errors.Is(err, lease.ErrNotFound) {
			t.Fatalf("Meta of a new table: %v", err)
		}
		if err := s.InitMeta(ctx, lease.Meta{TableID: id, Rules: rules20m}); err != nil {
			t.Fatal(err)
		}
		if err := s.InitMeta(ctx, lease.Meta{TableID: "other"}); !errors.Is(err, lease.ErrTaken) {
			t.Fatalf("second InitMeta: %v", err)
		}
		if got, err := s.Meta(ctx); err != nil || got != (lease.Meta{TableID: id, Rules: rules20m}) {
			t.Fatalf("Meta = %+v, %v", got, err)
		}
		for _, m := range []int{5, 0, 63} {
			mustClaim(t, s, m, "a", now, now+lease5m)
		}
		rows, err := s.List(ctx)
		if err != nil || len(rows) != 3 || rows[0].Machine != 0 || rows[1].Machine != 5 || rows[2].Machine != 63 {
			t.Fatalf("List = %+v, %v (want 0, 5, 63 and no metadata row)", rows, err)
		}
		if err := s.SetMeta(ctx, lease.Meta{TableID: "new-table"}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Meta(ctx); err != nil || got != (lease.Meta{TableID: "new-table", Rules: rules20m}) {
			t.Fatalf("Meta after SetMeta without rules = %+v, %v (want the rules kept)", got, err)
		}
		if _, err := s.Get(ctx, 12); !errors.Is(err, lease.ErrNotFound) {
			t.Fatalf("Get of an absent row: %v", err)
		}
	})

	t.Run("Rules", func(t *testing.T) {
		s := newStore(t)
		if err := s.InitRules(ctx, rules20m); !errors.Is(err, lease.ErrTaken) {
			t.Fatalf("InitRules without a metadata row: %v, want ErrTaken", err)
		}
		// A metadata row from before rules were kept: InitRules writes them once.
		if err := s.InitMeta(ctx, lease.Meta{TableID: "t1"}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Meta(ctx); err != nil || got != (lease.Meta{TableID: "t1"}) {
			t.Fatalf("Meta without rules = %+v, %v", got, err)
		}
		if err := s.InitRules(ctx, rules20m); err != nil {
			t.Fatal(err)
		}
		if err := s.InitRules(ctx, rules3s); !errors.Is(err, lease.ErrTaken) {
			t.Fatalf("second InitRules: %v, want ErrTaken", err)
		}
		if err := s.SetRules(ctx, rules3s, rules3s); !errors.Is(err, lease.ErrTaken) {
			t.Fatalf("SetRules from rules the row does not hold: %v, want ErrTaken", err)
		}
		if err := s.SetRules(ctx, rules20m, rules3s); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMeta(ctx, lease.Meta{TableID: "t2", Rules: rules20m}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Meta(ctx); err != nil || got != (lease.Meta{TableID: "t2", Rules: rules20m}) {
			t.Fatalf("Meta after SetMeta with rules = %+v, %v", got, err)
		}
	})

	t.Run("SecondHolderWithOtherSettingsIsRefused", func(t *testing.T) {
		s := newStore(t)
		first := lease.Settings{Lease: 20 * time.Minute, Renew: 10 * time.Second, Margin: 5 * time.Second}
		id, err := lease.CheckTable(ctx, s, first)
		if err != nil {
			t.Fatal(err)
		}
		meta, err := s.Meta(ctx)
		if err != nil || meta.TableID != id || meta.Rules != lease.DefaultRules(first.Lease, first.Renew, first.Margin) {
			t.Fatalf("the first holder wrote %+v, %v", meta, err)
		}
		second := lease.Settings{Lease: 3 * time.Second, Renew: 500 * time.Millisecond, Margin: 500 * time.Millisecond}
		_, err = lease.CheckTable(ctx, s, second)
		if !errors.Is(err, lease.ErrRules) {
			t.Fatalf("a holder with a 3 s lease on a table whose rules say 20 min: %v, want ErrRules", err)
		}
		for _, want := range []string{"lease 3s (the table's: 20m0s)", "fence margin 500ms (the table's: 5s)", "renew 500ms"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal %q does not name %q", err, want)
			}
		}
		if _, err := lease.CheckTable(ctx, s, lease.Settings{Lease: 20 * time.Minute, Renew: 30 * time.Second, Margin: 5 * time.Second}); err != nil {
			t.Fatalf("a holder with the table's lease and margin, renewing within its bounds: %v", err)
		}
	})

	t.Run("LiftWaitsTheTablesLeaseAndMargin", func(t *testing.T) {
		s := newStore(t)
		if restored, err := lease.InitTable(ctx, s, rules20m, time.UnixMilli(now), "test"); err != nil || restored {
			t.Fatalf("InitTable = %v, %v", restored, err)
		}
		mustClaim(t, s, 6, "a", now, now+20*60_000)
		if _, err := s.Quarantine(ctx, 6); err != nil {
			t.Fatal(err)
		}
		liftAt := int64(now + 60_000)
		row, rules, err := lease.Lift(ctx, s, 6, time.UnixMilli(liftAt))
		if err != nil || rules != rules20m {
			t.Fatalf("Lift = %+v, %+v, %v", row, rules, err)
		}
		// Not a default, not a flag: the table's 20 minutes and 5 s.
		if want := liftAt + (20*time.Minute + 5*time.Second).Milliseconds(); row.ExpiryUnixMs != want || row.Holder != lease.LiftedHolder {
			t.Fatalf("lifted row %+v, want expiry lift + 20m + 5s = %d", row, want)
		}
		for _, at := range []int64{liftAt + 5*60_000 + 5_000 + 1, row.ExpiryUnixMs} {
			if _, err := s.Claim(ctx, 6, "b", at, at+60_000); !errors.Is(err, lease.ErrTaken) {
				t.Fatalf("claim %d ms after the lift: %v, want ErrTaken until 20 min and the margin have passed", at-liftAt, err)
			}
		}
		if _, err := s.Claim(ctx, 6, "b", row.ExpiryUnixMs+1, row.ExpiryUnixMs+60_000); err != nil {
			t.Fatalf("claim after the lift's expiry: %v", err)
		}
	})

	t.Run("HistoryNamesItsTable", func(t *testing.T) {
		s := newStore(t)
		if has, err := s.HasHistory(ctx); err != nil || has {
			t.Fatalf("HasHistory of a new store = %v, %v; want false", has, err)
		}
		other := d.Sibling(t, s)
		if err := other.AppendHistory(ctx, lease.Event{Machine: 4, AtUnixMs: now, Kind: lease.KindClaim, Holder: "v1", Epoch: 1, TableID: "other-id"}); err != nil {
			t.Fatal(err)
		}
		if has, err := s.HasHistory(ctx); err != nil || has {
			t.Fatalf("HasHistory with only the other table's event = %v, %v; want false", has, err)
		}
		if evs, err := s.History(ctx, 4, now, now); err != nil || len(evs) != 0 {
			t.Fatalf("History shows the other table's events: %+v, %v", evs, err)
		}
		if err := s.AppendHistory(ctx, lease.Event{Machine: 4, AtUnixMs: now, Kind: lease.KindClaim, Holder: "v2", Epoch: 1, TableID: "this-id"}); err != nil {
			t.Fatal(err)
		}
		if has, err := s.HasHistory(ctx); err != nil || !has {
			t.Fatalf("HasHistory after an append = %v, %v; want true", has, err)
		}
		evs, err := s.History(ctx, 4, now, now+10)
		if err != nil || len(evs) != 1 || evs[0].Holder != "v2" || evs[0].TableID != "this-id" || evs[0].Table == "" {
			t.Fatalf("History = %+v, %v; want this table's one event, named", evs, err)
		}
		if evs, err := other.History(ctx, 4, now, now+10); err != nil || len(evs) != 1 || evs[0].Holder != "v1" || evs[0].Table == evs[0].TableID {
			t.Fatalf("the other table's History = %+v, %v", evs, err)
		}
		// A rules event keeps its rules.
		if err := s.AppendHistory(ctx, lease.Event{Machine: lease.MetaMachine, AtUnixMs: now, Kind: lease.KindRules, Holder: "test", Rules: rules20m}); err != nil {
			t.Fatal(err)
		}
		if evs, err := s.History(ctx, lease.MetaMachine, now, now+10); err != nil || len(evs) != 1 || evs[0].Rules != rules20m {
			t.Fatalf("the rules event read back: %+v, %v", evs, err)
		}
	})

	t.Run("RestoreOfABackupBeforeTheFirstClaimIsFenced", func(t *testing.T) {
		s := newStore(t)
		h := lease.Settings{Lease: 20 * time.Minute, Renew: 10 * time.Second, Margin: 5 * time.Second}
		// The sibling table's first claimer is not misled by this table's history (the v1 and v2
		// tables of a v1-v2 schedule share one).
		sib := d.Sibling(t, s)
		id, err := lease.CheckTable(ctx, s, h)
		if err != nil {
			t.Fatal(err)
		}
		r := mustClaim(t, s, 3, "gen-a", now, now+20*60_000)
		if err := s.AppendHistory(ctx, lease.Event{Machine: 3, AtUnixMs: now, Kind: lease.KindClaim, Holder: "gen-a", Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs, TableID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := lease.CheckTable(ctx, sib, h); err != nil {
			t.Fatalf("the sibling table's first claim, beside this table's history: %v", err)
		}
		// The restore of a backup taken before that claim: an empty table, a new ID, no
		// metadata row; the history (a table of its own) keeps the claim and the rules.
		s = d.Restore(t, s)
		if _, err := lease.CheckTable(ctx, s, h); !errors.Is(err, lease.ErrRestored) {
			t.Fatalf("an empty table beside a history with its claim: %v, want ErrRestored", err)
		}
		if _, err := s.Meta(ctx); !errors.Is(err, lease.ErrNotFound) {
			t.Fatalf("the check wrote a metadata row on the restored table: %v", err)
		}
		// The restore fence, with no lease given: the rules come back from the history.
		fenceAt := time.UnixMilli(now + 1000)
		n, rules, err := lease.FenceRestore(ctx, s, fenceAt, 8)
		if err != nil || n != 8 || rules != lease.DefaultRules(h.Lease, h.Renew, h.Margin) {
			t.Fatalf("FenceRestore = %d, %+v, %v; want 8 fenced rows under the table's rules", n, rules, err)
		}
		newID, err := lease.CheckTable(ctx, s, h)
		if err != nil || newID == id {
			t.Fatalf("after the fence: %q, %v", newID, err)
		}
		if meta, err := s.Meta(ctx); err != nil || meta.Rules != rules {
			t.Fatalf("the fence's metadata row: %+v, %v; want the rules back in it", meta, err)
		}
		until := fenceAt.Add(20*time.Minute + 5*time.Second).UnixMilli()
		if _, err := s.Claim(ctx, 3, "gen-b", until, until+60_000); !errors.Is(err, lease.ErrTaken) {
			t.Fatalf("a claim of gen-a's number at the fence's expiry: %v, want ErrTaken", err)
		}
		if _, err := s.Claim(ctx, 3, "gen-b", until+1, until+60_000); err != nil {
			t.Fatalf("a claim after the fence's expiry: %v", err)
		}
	})

	t.Run("FenceAll", func(t *testing.T) {
		s := newStore(t)
		mustClaim(t, s, 1, "a", now, now+lease5m)
		mustClaim(t, s, 2, "b", now, now+lease5m)
		if _, err := s.Quarantine(ctx, 3); err != nil {
			t.Fatal(err)
		}
		n, err := s.FenceAll(ctx, now+999_999)
		if err != nil || n != 2 {
			t.Fatalf("FenceAll = %d, %v (want 2)", n, err)
		}
		for _, m := range []int{1, 2} {
			if r := mustGet(t, s, m); r.ExpiryUnixMs != now+999_999 || r.Epoch != 2 {
				t.Fatalf("row %d after the fence: %+v", m, r)
			}
		}
		if r := mustGet(t, s, 3); !r.Quarantined() || r.Epoch != 1 {
			t.Fatalf("the fence touched a quarantined row: %+v", r)
		}
		if err := s.Renew(ctx, 1, "a", 1, now+2_000_000); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("renewal across a fence: %v", err)
		}
	})

	t.Run("History", func(t *testing.T) {
		s := newStore(t)
		evs := []lease.Event{
			{Machine: 4, AtUnixMs: now, Kind: lease.KindClaim, Holder: "a", Epoch: 1, ExpiryUnixMs: now + lease5m},
			{Machine: 4, AtUnixMs: now, Kind: lease.KindRelease, Holder: "a", Epoch: 1, ExpiryUnixMs: now}, // same ms
			{Machine: 4, AtUnixMs: now + 50, Kind: lease.KindClaim, Holder: "b", Epoch: 2, ExpiryUnixMs: now + 50 + lease5m},
			{Machine: 5, AtUnixMs: now + 10, Kind: lease.KindQuarantine, Holder: lease.QuarantineHolder, Epoch: 1, ExpiryUnixMs: lease.QuarantineExpiryUnixMs},
		}
		for _, ev := range evs {
			if err := s.AppendHistory(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.History(ctx, 4, now, now+100)
		if err != nil || len(got) != 3 {
			t.Fatalf("History = %+v, %v (want 3 events, both of the same millisecond kept)", got, err)
		}
		if got[0].Kind != lease.KindClaim || got[1].Kind != lease.KindRelease || got[2].Holder != "b" {
			t.Fatalf("History order: %+v", got)
		}
		if got, err := s.History(ctx, 4, now+40, now+100); err != nil || len(got) != 1 {
			t.Fatalf("History from now+40 = %+v, %v", got, err)
		}
	})

	t.Run("ConcurrentClaimsOneWinner", func(t *testing.T) {
		s := newStore(t)
		for round := range 5 {
			at := int64(now + round*(lease5m+1))
			var wins, taken int
			var mu sync.Mutex
			var wg sync.WaitGroup
			for g := range 12 {
				wg.Go(func() {
					_, err := s.Claim(ctx, 0, string(rune('a'+g)), at+1, at+1+lease5m)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						wins++
					case errors.Is(err, lease.ErrTaken):
						taken++
					default:
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if wins != 1 || taken != 11 {
				t.Fatalf("round %d: %d winners, %d refused (want 1 and 11)", round, wins, taken)
			}
			if r := mustGet(t, s, 0); r.Epoch != int64(round+1) {
				t.Fatalf("round %d: epoch %d", round, r.Epoch)
			}
		}
	})

	t.Run("Unavailable", func(t *testing.T) {
		s := unavailable(t)
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		calls := []struct {
			name string
			call func() error
		}{
			{"Claim", func() error { _, err := s.Claim(ctx, 1, "a", now, now+lease5m); return err }},
			{"Renew", func() error { return s.Renew(ctx, 1, "a", 1, now+lease5m) }},
			{"Release", func() error { return s.Release(ctx, 1, "a", 1, now) }},
			{"Get", func() error { _, err := s.Get(ctx, 1); return err }},
			{"List", func() error { _, err := s.List(ctx); return err }},
			{"Quarantine", func() error { _, err := s.Quarantine(ctx, 1); return err }},
			{"Lift", func() error { _, err := s.Lift(ctx, 1, now); return err }},
			{"FenceAll", func() error { _, err := s.FenceAll(ctx, now); return err }},
			{"TableID", func() error { _, err := s.TableID(ctx); return err }},
			{"Meta", func() error { _, err := s.Meta(ctx); return err }},
			{"InitMeta", func() error { return s.InitMeta(ctx, lease.Meta{TableID: "t"}) }},
			{"InitRules", func() error { return s.InitRules(ctx, rules20m) }},
			{"SetRules", func() error { return s.SetRules(ctx, rules20m, rules3s) }},
			{"SetMeta", func() error { return s.SetMeta(ctx, lease.Meta{TableID: "t"}) }},
			{"HasHistory", func() error { _, err := s.HasHistory(ctx); return err }},
			{"AppendHistory", func() error {
				return s.AppendHistory(ctx, lease.Event{Machine: 1, AtUnixMs: now, Kind: lease.KindClaim, Holder: "a", Epoch: 1})
			}},
			{"History", func() error { _, err := s.History(ctx, 1, now, now+1); return err }},
		}
		for _, c := range calls {
			if err := c.call(); !errors.Is(err, lease.ErrUnavailable) {
				t.Errorf("%s on an unreachable store: err = %v, want ErrUnavailable", c.name, err)
			} else if err == lease.ErrUnavailable {
				t.Errorf("%s: %v is the bare sentinel; it must wrap the native error", c.name, err)
			}
		}
	})
}

// Two tables' rules: a 20-minute lease (renewals 40 s to 6 min 40 s, margin 5 s), and a 3 s one.
var (
	rules20m = lease.Rules{Lease: 20 * time.Minute, RenewMin: 40 * time.Second, RenewMax: 400 * time.Second, Margin: 5 * time.Second}
	rules3s  = lease.Rules{Lease: 3 * time.Second, RenewMin: 100 * time.Millisecond, RenewMax: time.Second, Margin: 500 * time.Millisecond}
)

func mustClaim(t *testing.T, s lease.Store, m int, holder string, now, expiry int64) lease.Row {
	t.Helper()
	r, err := s.Claim(context.Background(), m, holder, now, expiry)
	if err != nil {
		t.Fatalf("claim %d: %v", m, err)
	}
	return r
}

func mustGet(t *testing.T, s lease.Store, m int) lease.Row {
	t.Helper()
	r, err := s.Get(context.Background(), m)
	if err != nil {
		t.Fatalf("get %d: %v", m, err)
	}
	return r
}
