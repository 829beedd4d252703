package mappingtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/publicid"
)

// RunReplica runs the suite of the mapping.Replica contract beyond Store's (which Run covers):
// Copy, Scan and notes. open returns a replica; the replicas of one call of RunReplica may share
// data (the suite uses fresh internal and public IDs per test), but Scan's test needs a replica
// that holds no mapping from outside this suite's tests of it, so open must give each call a store
// of its own (a new table, a new database).
func RunReplica(t *testing.T, open func(t *testing.T) mapping.Replica) {
	ctx := context.Background()
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}
	fresh := func() string {
		p, err := maker.New("ord")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var base atomic.Int64
	base.Store(2_000_000_000)
	next := func() int64 { return base.Add(1000) }

	resolves := func(t *testing.T, r mapping.Replica, public string, internal int64) {
		t.Helper()
		if got, err := r.Resolve(ctx, public); err != nil || got != internal {
			t.Fatalf("Resolve(%s) = %d, %v; want %d", public, got, err, internal)
		}
	}
	looksUp := func(t *testing.T, r mapping.Replica, internal int64, public string) {
		t.Helper()
		if got, err := r.Lookup(ctx, internal); err != nil || got != public {
			t.Fatalf("Lookup(%d) = %q, %v; want %s", internal, got, err, public)
		}
	}

	t.Run("CopyStoresBothDirections", func(t *testing.T) {
		r := open(t)
		in, pub := next(), fresh()
		got, err := r.Copy(ctx, in, pub)
		if err != nil || got != pub {
			t.Fatalf("Copy(%d, %s) = %q, %v; want %s", in, pub, got, err, pub)
		}
		resolves(t, r, pub, in)
		looksUp(t, r, in, pub)
		// Publish finds the copied mapping: no new public ID.
		if got, err := r.Publish(ctx, in, func() (string, error) { return fresh(), nil }); err != nil || got != pub {
			t.Fatalf("Publish after Copy = %q, %v; want the copied %s", got, err, pub)
		}
	})

	t.Run("CopyIdempotent", func(t *testing.T) {
		r := open(t)
		in, pub := next(), fresh()
		for i := range 3 {
			if got, err := r.Copy(ctx, in, pub); err != nil || got != pub {
				t.Fatalf("Copy #%d = %q, %v; want %s", i+1, got, err, pub)
			}
		}
		// A published mapping copied again (the copy of a copy coming back) is a no-op too.
		in2 := next()
		pub2, err := r.Publish(ctx, in2, func() (string, error) { return fresh(), nil })
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.Copy(ctx, in2, pub2); err != nil || got != pub2 {
			t.Fatalf("Copy of a published mapping = %q, %v; want %s", got, err, pub2)
		}
		resolves(t, r, pub, in)
		looksUp(t, r, in, pub)
		resolves(t, r, pub2, in2)
		looksUp(t, r, in2, pub2)
	})

	t.Run("CopyKeepsTheFirstPublicID", func(t *testing.T) {
		r := open(t)
		in := next()
		first, err := r.Publish(ctx, in, func() (string, error) { return fresh(), nil })
		if err != nil {
			t.Fatal(err)
		}
		// Another region gave in another public ID: both resolve, the first stays in's.
		other := fresh()
		got, err := r.Copy(ctx, in, other)
		if err != nil || got != first {
			t.Fatalf("Copy of another public ID of %d = %q, %v; want the first %s", in, got, err, first)
		}
		resolves(t, r, first, in)
		resolves(t, r, other, in)
		looksUp(t, r, in, first)
		if got, err := r.Copy(ctx, in, other); err != nil || got != first {
			t.Fatalf("the same Copy again = %q, %v; want %s", got, err, first)
		}
	})

	t.Run("CopyConflict", func(t *testing.T) {
		r := open(t)
		in, pub := next(), fresh()
		if _, err := r.Copy(ctx, in, pub); err != nil {
			t.Fatal(err)
		}
		// The same public ID for another internal ID: refused, nothing written.
		other := next()
		got, err := r.Copy(ctx, other, pub)
		if !errors.Is(err, mapping.ErrConflict) || errors.Is(err, mapping.ErrUnavailable) {
			t.Fatalf("Copy of a public ID mapped to another internal ID = %q, %v; want ErrConflict", got, err)
		}
		resolves(t, r, pub, in)
		if got, err := r.Lookup(ctx, other); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("a refused Copy wrote %d → %q (%v)", other, got, err)
		}
		// A published public ID is refused alike.
		in2 := next()
		pub2, err := r.Publish(ctx, in2, func() (string, error) { return fresh(), nil })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Copy(ctx, next(), pub2); !errors.Is(err, mapping.ErrConflict) {
			t.Fatalf("Copy over a published public ID: %v; want ErrConflict", err)
		}
		resolves(t, r, pub2, in2)
	})

	t.Run("CopyRefusesNonPublicIDs", func(t *testing.T) {
		r := open(t)
		for _, bad := range []string{"", "#i1", "Ord_x"} {
			if got, err := r.Copy(ctx, next(), bad); err == nil || errors.Is(err, mapping.ErrUnavailable) {
				t.Errorf("Copy of %q = %q, %v; want the caller's error", bad, got, err)
			}
		}
	})

	t.Run("Scan", func(t *testing.T) {
		r := open(t)
		want := map[string]int64{}
		start := next()
		for i := range int64(120) {
			in := start + i
			if i%2 == 0 {
				pub, err := r.Publish(ctx, in, func() (string, error) { return fresh(), nil })
				if err != nil {
					t.Fatal(err)
				}
				want[pub] = in
			} else {
				pub := fresh()
				if _, err := r.Copy(ctx, in, pub); err != nil {
					t.Fatal(err)
				}
				want[pub] = in
			}
		}
		// An internal ID with two public IDs is listed under each; tokens, secrets and notes are
		// not mappings.
		other := fresh()
		if _, err := r.Copy(ctx, start, other); err != nil {
			t.Fatal(err)
		}
		want[other] = start
		if err := r.PutToken(ctx, "ord_token", []byte("v"), time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Secret(ctx, "scan-secret", 16); err != nil {
			t.Fatal(err)
		}
		if err := r.SetNote(ctx, "scan-note", []byte("n")); err != nil {
			t.Fatal(err)
		}

		scanAll := func(t *testing.T, cursor string, limit int, stopAfter int) (map[string]int64, string) {
			t.Helper()
			seen := map[string]int64{}
			for pages := 0; ; pages++ {
				if stopAfter > 0 && pages == stopAfter {
					return seen, cursor
				}
				pairs, next, err := r.Scan(ctx, cursor, limit)
				if err != nil {
					t.Fatalf("Scan(%q, %d): %v", cursor, limit, err)
				}
				if len(pairs) > limit {
					t.Fatalf("Scan(%q, %d) gave %d pairs", cursor, limit, len(pairs))
				}
				for _, p := range pairs {
					if prev, dup := seen[p.Public]; dup && prev != p.Internal {
						t.Fatalf("%s listed as %d and %d", p.Public, prev, p.Internal)
					}
					seen[p.Public] = p.Internal
				}
				if next == "" {
					return seen, ""
				}
				if pages > 10*len(want)+10 {
					t.Fatalf("Scan did not end after %d pages", pages)
				}
				cursor = next
			}
		}
		for _, limit := range []int{1, 7, 50, 1000} {
			seen, _ := scanAll(t, "", limit, 0)
			if fmt.Sprint(seen) != fmt.Sprint(want) {
				t.Fatalf("Scan with limit %d listed %d pairs, want the %d mappings: missing %v, extra %v",
					limit, len(seen), len(want), diff(want, seen), diff(seen, want))
			}
		}
		// A scan stopped after some pages goes on from its cursor.
		first, cursor := scanAll(t, "", 9, 4)
		if cursor == "" {
			t.Fatal("a scan of 121 mappings with limit 9 ended after 4 pages")
		}
		rest, _ := scanAll(t, cursor, 9, 0)
		for p, in := range rest {
			first[p] = in
		}
		if fmt.Sprint(first) != fmt.Sprint(want) {
			t.Fatalf("a scan resumed from its cursor listed %d pairs, want %d: missing %v", len(first), len(want), diff(want, first))
		}
		if _, _, err := r.Scan(ctx, "not a cursor", 10); err == nil || errors.Is(err, mapping.ErrUnavailable) {
			t.Errorf("Scan of a bad cursor: %v; want the caller's error", err)
		}
		if _, _, err := r.Scan(ctx, "", 0); err == nil {
			t.Errorf("Scan with limit 0: want an error")
		}
	})

	t.Run("Notes", func(t *testing.T) {
		r := open(t)
		name := fmt.Sprintf("note-%d", time.Now().UnixNano())
		if v, err := r.Note(ctx, name); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("Note before SetNote = %q, %v; want ErrNotFound", v, err)
		}
		for _, v := range [][]byte{[]byte(`{"cursor":"abc"}`), {0, 0xff, '\n'}, []byte("second, overwriting"), {}} {
			if err := r.SetNote(ctx, name, v); err != nil {
				t.Fatal(err)
			}
			if got, err := r.Note(ctx, name); err != nil || !bytes.Equal(got, v) {
				t.Fatalf("Note after SetNote(%q) = %q, %v", v, got, err)
			}
		}
		// Apart from mappings, tokens and secrets of the same name.
		pub := fresh()
		if err := r.SetNote(ctx, pub, []byte("n")); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Resolve(ctx, pub); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("a note named like a public ID resolves: %v", err)
		}
		if v, err := r.GetToken(ctx, name); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("GetToken of a note's name = %q, %v", v, err)
		}
		if _, err := r.Note(ctx, "other-"+name); !errors.Is(err, mapping.ErrNotFound) {
			t.Fatalf("another name's note: %v; want ErrNotFound", err)
		}
	})
}

// diff lists the public IDs of a that b lacks or maps elsewhere (at most 5).
func diff(a, b map[string]int64) []string {
	var out []string
	for p, in := range a {
		if got, ok := b[p]; !ok || got != in {
			out = append(out, fmt.Sprintf("%s→%d", p, in))
			if len(out) == 5 {
				break
			}
		}
	}
	return out
}
