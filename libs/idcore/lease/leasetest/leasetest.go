// Package leasetest is the conformance suite of the lease.Store contract. Every driver runs it:
//
//	func TestConformance(t *testing.T) {
//		leasetest.Run(t, newEmptyStore, newStoreWhoseServerIsDown)
//	}
package leasetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore/lease"
)

// Run runs the suite; newStore must return a store on an empty, never used table, and
// unavailable a store on a table that existed but whose storage can no longer be reached (the
// server process stopped, the file's store closed): every call on it must fail with
// lease.ErrUnavailable.
func Run(t *testing.T, newStore, unavailable func(t *testing.T) lease.Store) {
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
		if err := s.InitMeta(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := s.InitMeta(ctx, "other"); !errors.Is(err, lease.ErrTaken) {
			t.Fatalf("second InitMeta: %v", err)
		}
		if got, err := s.Meta(ctx); err != nil || got != id {
			t.Fatalf("Meta = %q, %v", got, err)
		}
		for _, m := range []int{5, 0, 63} {
			mustClaim(t, s, m, "a", now, now+lease5m)
		}
		rows, err := s.List(ctx)
		if err != nil || len(rows) != 3 || rows[0].Machine != 0 || rows[1].Machine != 5 || rows[2].Machine != 63 {
			t.Fatalf("List = %+v, %v (want 0, 5, 63 and no metadata row)", rows, err)
		}
		if err := s.SetMeta(ctx, "new-table"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Meta(ctx); err != nil || got != "new-table" {
			t.Fatalf("Meta after SetMeta = %q, %v", got, err)
		}
		if _, err := s.Get(ctx, 12); !errors.Is(err, lease.ErrNotFound) {
			t.Fatalf("Get of an absent row: %v", err)
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
			{"InitMeta", func() error { return s.InitMeta(ctx, "t") }},
			{"SetMeta", func() error { return s.SetMeta(ctx, "t") }},
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
