// Package mappingtest is the conformance suite of the mapping.Store contract.
package mappingtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/publicid"
)

// Run runs the suite; newStore returns a store (it may share data with earlier ones: the suite
// uses fresh internal IDs per test via base), and unavailable a store whose storage can no
// longer be reached (the server process stopped, the file's store closed): every call on it must
// fail with mapping.ErrUnavailable.
func Run(t *testing.T, newStore, unavailable func(t *testing.T) mapping.Store) {
	ctx := context.Background()
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}
	fresh := func() (string, error) { return maker.New("ord") }
	var base atomic.Int64
	base.Store(1_000_000_000)
	next := func() int64 { return base.Add(1000) }

	t.Run("PublishAndResolve", func(t *testing.T) {
		s := newStore(t)
		in := next()
		pub, err := s.Publish(ctx, in, fresh)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Resolve(ctx, pub)
		if err != nil || got != in {
			t.Fatalf("Resolve(%s) = %d, %v; want %d", pub, got, err, in)
		}
		if _, err := s.Resolve(ctx, "ord_nosuchthing"); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("unknown public id: %v", err)
		}
	})

	t.Run("Lookup", func(t *testing.T) {
		s := newStore(t)
		in := next()
		if pub, err := s.Lookup(ctx, in); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("Lookup before any publish = %q, %v; want ErrNotFound", pub, err)
		}
		if pub, err := s.Lookup(ctx, in); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("Lookup made a public ID: %q, %v", pub, err)
		}
		pub, err := s.Publish(ctx, in, fresh)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Lookup(ctx, in)
		if err != nil || got != pub {
			t.Fatalf("Lookup after publish = %q, %v; want %s", got, err, pub)
		}
	})

	t.Run("IdempotentNeverOverwrites", func(t *testing.T) {
		s := newStore(t)
		in := next()
		first, err := s.Publish(ctx, in, fresh)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			again, err := s.Publish(ctx, in, fresh)
			if err != nil || again != first {
				t.Fatalf("second publish = %s, %v; want the first %s", again, err, first)
			}
		}
		// A public ID that collides with an existing one is never overwritten: another is taken.
		other := next()
		calls := 0
		pub, err := s.Publish(ctx, other, func() (string, error) {
			calls++
			if calls == 1 {
				return first, nil
			}
			return fresh()
		})
		if err != nil || pub == first || calls != 2 {
			t.Fatalf("publish with a colliding public id = %s, %v after %d tries", pub, err, calls)
		}
		if got, err := s.Resolve(ctx, first); err != nil || got != in {
			t.Fatalf("the first mapping was overwritten: %s → %d, %v", first, got, err)
		}
	})

	t.Run("ConcurrentPublishOneWinner", func(t *testing.T) {
		s := newStore(t)
		for round := range 20 {
			in := next()
			var wg sync.WaitGroup
			var mu sync.Mutex
			got := map[string]int{}
			for range 16 {
				wg.Go(func() {
					pub, err := s.Publish(ctx, in, fresh)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					got[pub]++
					mu.Unlock()
				})
			}
			wg.Wait()
			if len(got) != 1 {
				t.Fatalf("round %d: 16 concurrent publishes of one internal id gave %d public ids: %v", round, len(got), got)
			}
			for pub := range got {
				if r, err := s.Resolve(ctx, pub); err != nil || r != in {
					t.Fatalf("winner %s resolves to %d, %v", pub, r, err)
				}
			}
		}
	})

	t.Run("ManyInternalIDs", func(t *testing.T) {
		s := newStore(t)
		seen := map[string]int64{}
		start := next()
		for i := range int64(300) {
			pub, err := s.Publish(ctx, start+i, fresh)
			if err != nil {
				t.Fatal(err)
			}
			if prev, dup := seen[pub]; dup {
				t.Fatalf("%s given to %d and %d", pub, prev, start+i)
			}
			seen[pub] = start + i
		}
		for pub, in := range seen {
			if got, err := s.Resolve(ctx, pub); err != nil || got != in {
				t.Fatal(fmt.Errorf("%s resolves to %d, %v; want %d", pub, got, err, in))
			}
		}
	})

	t.Run("Unavailable", func(t *testing.T) {
		s := unavailable(t)
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		in := next()
		for _, c := range []struct {
			name string
			call func() error
		}{
			{"Publish", func() error { _, err := s.Publish(ctx, in, fresh); return err }},
			{"Lookup", func() error { _, err := s.Lookup(ctx, in); return err }},
			{"Resolve", func() error { _, err := s.Resolve(ctx, "ord_nosuchthing"); return err }},
		} {
			if err := c.call(); !errors.Is(err, mapping.ErrUnavailable) {
				t.Errorf("%s on an unreachable store: err = %v, want ErrUnavailable", c.name, err)
			} else if err == mapping.ErrUnavailable {
				t.Errorf("%s: %v is the bare sentinel; it must wrap the native error", c.name, err)
			}
		}
		// The caller's own failure is never taken for the store's.
		mine := errors.New("no public ID today")
		if _, err := newStore(t).Publish(ctx, next(), func() (string, error) { return "", mine }); !errors.Is(err, mine) || errors.Is(err, mapping.ErrUnavailable) {
			t.Errorf("Publish with a failing newPublic: %v, want that error and not ErrUnavailable", err)
		}
	})
}
