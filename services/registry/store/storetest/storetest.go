// Package storetest is the conformance suite of the registry store contract.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/services/registry/store"
)

// Run runs the suite; newStore returns an empty, never seeded store, and unavailable a store whose
// storage can no longer be reached (the server process stopped, the file's store closed): every
// call on it must fail with store.ErrUnavailable.
func Run(t *testing.T, newStore, unavailable func(t *testing.T) store.Store) {
	ctx := context.Background()
	now := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)

	t.Run("SeedOnce", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Schedule(ctx); !errors.Is(err, store.ErrNotSeeded) {
			t.Fatalf("Schedule before Seed: %v, want ErrNotSeeded", err)
		}
		if _, err := s.NextNumber(ctx); !errors.Is(err, store.ErrNotSeeded) {
			t.Fatalf("NextNumber before Seed: %v, want ErrNotSeeded", err)
		}
		if _, err := s.Add(ctx, "sa-east-1", "us-east-1", now); !errors.Is(err, store.ErrNotSeeded) {
			t.Fatalf("Add before Seed: %v, want ErrNotSeeded", err)
		}
		if err := s.Seed(ctx, region.Defaults(), "v2"); err != nil {
			t.Fatal(err)
		}
		if err := s.Seed(ctx, region.Defaults()[:1], "v1-v2"); err != nil {
			t.Fatal(err)
		}
		rs, err := s.List(ctx)
		if err != nil || len(rs) != 5 || rs[2].Name != "eu-west-1" || rs[2].Number != 2 || rs[2].Peer != "us-east-1" {
			t.Fatalf("List = %+v, %v", rs, err)
		}
		if sch, err := s.Schedule(ctx); err != nil || sch != "v2" {
			t.Fatalf("schedule %q, %v after a second seed", sch, err)
		}
		if n, err := s.NextNumber(ctx); err != nil || n != 5 {
			t.Fatalf("next number %d, %v", n, err)
		}
	})

	t.Run("NumbersNeverReused", func(t *testing.T) {
		s := newStore(t)
		mustSeed(t, s, region.Defaults())
		if _, err := s.Retire(ctx, "ap-southeast-1", now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Retire(ctx, "ap-southeast-1", now); !errors.Is(err, store.ErrRetired) {
			t.Fatalf("second retire: %v", err)
		}
		if _, err := s.Retire(ctx, "nowhere-1", now); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("retire of an unknown region: %v", err)
		}
		r, err := s.Add(ctx, "sa-east-1", "us-east-1", now)
		if err != nil || r.Number != 5 || r.Status != region.Active {
			t.Fatalf("add after a retire = %+v, %v (want number 5: 4 is retired, not free)", r, err)
		}
		if _, err := s.Add(ctx, "ap-southeast-1", "x", now); !errors.Is(err, store.ErrExists) {
			t.Fatalf("re-adding a retired name: %v", err)
		}
		got, err := s.Get(ctx, "ap-southeast-1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != region.Retired || got.RetiredAt == nil || !got.RetiredAt.Equal(now) {
			t.Fatalf("retired region %+v", got)
		}
		for _, name := range []string{"r6", "r7"} {
			if _, err := s.Add(ctx, name, "us-east-1", now); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Add(ctx, "r8", "us-east-1", now); !errors.Is(err, store.ErrFull) {
			t.Fatalf("ninth region: %v", err)
		}
		if n, err := s.NextNumber(ctx); err != nil || n != 8 {
			t.Fatalf("next number %d, %v", n, err)
		}
	})

	t.Run("ConcurrentAddsOneNumberEach", func(t *testing.T) {
		s := newStore(t)
		mustSeed(t, s, region.Defaults()[:2])
		var mu sync.Mutex
		got := map[int]string{}
		var full int
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				r, err := s.Add(ctx, fmt.Sprintf("region-%d", i), "us-east-1", now)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					if prev, dup := got[r.Number]; dup {
						t.Errorf("number %d given to %s and %s", r.Number, prev, r.Name)
					}
					got[r.Number] = r.Name
				case errors.Is(err, store.ErrFull):
					full++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if len(got) != 6 || full != 4 {
			t.Fatalf("%d adds won numbers %v, %d refused as full (want 6 and 4)", len(got), got, full)
		}
	})

	t.Run("Audit", func(t *testing.T) {
		s := newStore(t)
		for i, a := range []string{"add", "retire"} {
			if err := s.Audit(ctx, store.AuditEntry{At: now.Add(time.Duration(i) * time.Second), Actor: "spiffe://t/svc/ops", Action: a, Detail: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		log, err := s.AuditLog(ctx)
		if err != nil || len(log) != 2 || log[0].Action != "add" || log[1].Action != "retire" || log[0].Actor != "spiffe://t/svc/ops" {
			t.Fatalf("AuditLog = %+v, %v", log, err)
		}
	})

	t.Run("Unavailable", func(t *testing.T) {
		s := unavailable(t)
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for _, c := range []struct {
			name string
			call func() error
		}{
			{"Seed", func() error { return s.Seed(ctx, region.Defaults(), "v2") }},
			{"List", func() error { _, err := s.List(ctx); return err }},
			{"Get", func() error { _, err := s.Get(ctx, "us-east-1"); return err }},
			{"Add", func() error { _, err := s.Add(ctx, "sa-east-1", "us-east-1", now); return err }},
			{"Retire", func() error { _, err := s.Retire(ctx, "us-east-1", now); return err }},
			{"Schedule", func() error { _, err := s.Schedule(ctx); return err }},
			{"NextNumber", func() error { _, err := s.NextNumber(ctx); return err }},
			{"Audit", func() error { return s.Audit(ctx, store.AuditEntry{At: now, Actor: "a", Action: "add", Detail: "x"}) }},
			{"AuditLog", func() error { _, err := s.AuditLog(ctx); return err }},
		} {
			if err := c.call(); !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%s on an unreachable store: err = %v, want ErrUnavailable", c.name, err)
			} else if err == store.ErrUnavailable {
				t.Errorf("%s: %v is the bare sentinel; it must wrap the native error", c.name, err)
			}
		}
	})
}

func mustSeed(t *testing.T, s store.Store, regions []region.Region) {
	t.Helper()
	if err := s.Seed(context.Background(), regions, "v2"); err != nil {
		t.Fatal(err)
	}
}
