// Package mappingtest is the conformance suite of the mapping.Store contract.
package mappingtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
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

	var handles atomic.Int64
	handle := func() string { return fmt.Sprintf("tok_test%d_%d", time.Now().UnixNano(), handles.Add(1)) }

	t.Run("Tokens", func(t *testing.T) {
		s := newStore(t)
		// The value comes back byte for byte: binary, NUL, invalid UTF-8, empty, 8 KiB.
		for _, value := range [][]byte{[]byte("eyJhZnRlciI6MTIwOTUwNDYwODkwOTE2ODZ9"), {0, 0xff, '\n', 0xc3}, {}, []byte(strings.Repeat("v", 8<<10))} {
			h := handle()
			if err := s.PutToken(ctx, h, value, time.Hour); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetToken(ctx, h)
			if err != nil || !bytes.Equal(got, value) {
				t.Fatalf("GetToken after PutToken(%q) = %q, %v", value, got, err)
			}
		}
		if v, err := s.GetToken(ctx, handle()); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("GetToken of an unknown handle = %q, %v; want ErrNotFound", v, err)
		}
		// Never overwritten: a second put of a handle is refused, the first value kept.
		h := handle()
		if err := s.PutToken(ctx, h, []byte("first"), time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.PutToken(ctx, h, []byte("second"), time.Hour); !errors.Is(err, mapping.ErrTokenTaken) {
			t.Fatalf("a second PutToken of one handle: %v, want ErrTokenTaken", err)
		}
		if got, err := s.GetToken(ctx, h); err != nil || string(got) != "first" {
			t.Fatalf("after a refused second put: %q, %v; want the first value", got, err)
		}
		// Tokens and mappings are apart: a handle spelled like a public ID is no mapping of it.
		in := next()
		pub, err := s.Publish(ctx, in, fresh)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := s.GetToken(ctx, pub); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("GetToken of a public ID = %q, %v; want ErrNotFound", v, err)
		}
		if err := s.PutToken(ctx, pub, []byte("x"), time.Hour); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Resolve(ctx, pub); err != nil || got != in {
			t.Fatalf("a token under a public ID's spelling changed its mapping: %d, %v", got, err)
		}
		for _, ttl := range []time.Duration{0, -time.Second} {
			if err := s.PutToken(ctx, handle(), []byte("x"), ttl); err == nil || errors.Is(err, mapping.ErrUnavailable) {
				t.Errorf("PutToken with ttl %v: %v, want the caller's error", ttl, err)
			}
		}
	})

	t.Run("TokenExpiry", func(t *testing.T) {
		s := newStore(t)
		const ttl = 100 * time.Millisecond
		short, long, sub := handle(), handle(), handle()
		start := time.Now()
		if err := s.PutToken(ctx, short, []byte("short"), ttl); err != nil {
			t.Fatal(err)
		}
		if err := s.PutToken(ctx, sub, []byte("sub"), time.Microsecond); err != nil { // rounded up to 1 ms
			t.Fatal(err)
		}
		if err := s.PutToken(ctx, long, []byte("long"), time.Minute); err != nil {
			t.Fatal(err)
		}
		// The token was put after start, so a GetToken that answers before start+ttl must find it;
		// one that answers later (a slow machine) may or may not.
		got, err := s.GetToken(ctx, short)
		if time.Since(start) < ttl && (err != nil || string(got) != "short") {
			t.Fatalf("GetToken within its ttl = %q, %v", got, err)
		}
		time.Sleep(time.Until(start.Add(ttl + 50*time.Millisecond)))
		for _, h := range []string{short, sub} {
			if v, err := s.GetToken(ctx, h); !errors.Is(err, mapping.ErrNotFound) {
				t.Fatalf("GetToken after its ttl = %q, %v; want ErrNotFound", v, err)
			}
		}
		if got, err := s.GetToken(ctx, long); err != nil || string(got) != "long" {
			t.Fatalf("a token within its ttl beside expired ones = %q, %v", got, err)
		}
		// An expired handle may be put again.
		if err := s.PutToken(ctx, short, []byte("again"), time.Minute); err != nil {
			t.Fatalf("PutToken of an expired handle: %v", err)
		}
		if got, err := s.GetToken(ctx, short); err != nil || string(got) != "again" {
			t.Fatalf("GetToken of a handle put again = %q, %v", got, err)
		}
	})

	t.Run("Secret", func(t *testing.T) {
		s := newStore(t)
		name := fmt.Sprintf("test-%d", time.Now().UnixNano()) // the store may keep earlier tests' secrets
		// Concurrent first calls all get the one value stored first; later calls get it again.
		var wg sync.WaitGroup
		got := make([][]byte, 16)
		for i := range got {
			wg.Go(func() {
				v, err := s.Secret(ctx, name, 32)
				if err != nil {
					t.Error(err)
				}
				got[i] = v
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		first := got[0]
		if len(first) != 32 || bytes.Equal(first, make([]byte, 32)) {
			t.Fatalf("Secret(%q, 32) = %x: want 32 random bytes", name, first)
		}
		for _, v := range got {
			if !bytes.Equal(v, first) {
				t.Fatalf("concurrent Secret calls got %x and %x: want the one value stored first", first, v)
			}
		}
		if v, err := s.Secret(ctx, name, 32); err != nil || !bytes.Equal(v, first) {
			t.Fatalf("Secret again = %x, %v; want %x", v, err, first)
		}
		// Another name, another secret; apart from tokens and mappings.
		other, err := s.Secret(ctx, name+"-other", 32)
		if err != nil || bytes.Equal(other, first) {
			t.Fatalf("another name's secret = %x, %v; want another value than %x", other, err, first)
		}
		if v, err := s.GetToken(ctx, name); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("GetToken of a secret's name = %q, %v; want ErrNotFound", v, err)
		}
		// The caller's errors: another size than the stored one, a size that is not positive.
		if v, err := s.Secret(ctx, name, 16); err == nil || errors.Is(err, mapping.ErrUnavailable) {
			t.Errorf("Secret of another size = %x, %v; want the caller's error", v, err)
		}
		for _, size := range []int{0, -1} {
			if v, err := s.Secret(ctx, name+"-size", size); err == nil || errors.Is(err, mapping.ErrUnavailable) {
				t.Errorf("Secret of size %d = %x, %v; want the caller's error", size, v, err)
			}
		}
	})

	t.Run("Unavailable", func(t *testing.T) {
		s := unavailable(t)
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		in := next()
		var wg sync.WaitGroup
		for _, c := range []struct {
			name string
			call func() error
		}{
			{"Publish", func() error { _, err := s.Publish(ctx, in, fresh); return err }},
			{"Lookup", func() error { _, err := s.Lookup(ctx, in); return err }},
			{"Resolve", func() error { _, err := s.Resolve(ctx, "ord_nosuchthing"); return err }},
			{"PutToken", func() error { return s.PutToken(ctx, handle(), []byte("v"), time.Minute) }},
			{"GetToken", func() error { _, err := s.GetToken(ctx, handle()); return err }},
			{"Secret", func() error { _, err := s.Secret(ctx, handle(), 32); return err }},
		} {
			// At once: a client's retries against a closed port take seconds per call.
			wg.Go(func() {
				if err := c.call(); !errors.Is(err, mapping.ErrUnavailable) {
					t.Errorf("%s on an unreachable store: err = %v, want ErrUnavailable", c.name, err)
				} else if err == mapping.ErrUnavailable {
					t.Errorf("%s: %v is the bare sentinel; it must wrap the native error", c.name, err)
				}
			})
		}
		wg.Wait()
		// The caller's own failure is never taken for the store's.
		mine := errors.New("no public ID today")
		if _, err := newStore(t).Publish(ctx, next(), func() (string, error) { return "", mine }); !errors.Is(err, mine) || errors.Is(err, mapping.ErrUnavailable) {
			t.Errorf("Publish with a failing newPublic: %v, want that error and not ErrUnavailable", err)
		}
	})
}
