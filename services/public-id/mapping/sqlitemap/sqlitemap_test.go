package sqlitemap_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/mappingtest"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
)

func TestConformance(t *testing.T) {
	mappingtest.Run(t, func(t *testing.T) mapping.Store {
		return openStore(t, filepath.Join(t.TempDir(), "m.db"))
	}, func(t *testing.T) mapping.Store {
		s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func openStore(t *testing.T, path string) *sqlitemap.Store {
	t.Helper()
	s, err := sqlitemap.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// TestLockedFileIsUnavailable: another process holding the file's write lock past the caller's
// deadline makes a publish fail with ErrUnavailable, while reads (WAL) still answer.
func TestLockedFileIsUnavailable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s, holder := openStore(t, path), openStore(t, path)
	n := 0
	fresh := func() (string, error) { n++; return "ord_" + string(rune('a'+n)), nil }
	if _, err := holder.Publish(ctx, 1, fresh); err != nil {
		t.Fatal(err)
	}
	release := sqlitemap.HoldWriteLock(t, holder)
	defer release()
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := s.Publish(dctx, 2, fresh); !errors.Is(err, mapping.ErrUnavailable) {
		t.Fatalf("publish while another connection holds the write lock: %v, want ErrUnavailable", err)
	}
	if got, err := s.Lookup(ctx, 1); err != nil || got != "ord_b" {
		t.Fatalf("Lookup under the lock = %q, %v", got, err)
	}
}

// TestTokenSweep: expired tokens are deleted by the GetToken that finds one and by the sweep, in
// batches; tokens within their ttl stay. The store's clock is moved by hand.
func TestTokenSweep(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	sqlitemap.SetClock(s, func() time.Time { return now })
	const n = 2500 // more than two batches
	for i := range n {
		if err := s.PutToken(ctx, fmt.Sprintf("tok_%d", i), []byte("v"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutToken(ctx, "tok_kept", []byte("kept"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := sqlitemap.Sweep(ctx, s); err != nil || got != 0 {
		t.Fatalf("a sweep before any expiry deleted %d, %v", got, err)
	}
	now = now.Add(time.Minute) // expires_at is now: expired
	if _, err := s.GetToken(ctx, "tok_0"); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("GetToken at its expiry: %v, want ErrNotFound", err)
	}
	if got := sqlitemap.TokenRows(t, s); got != n {
		t.Fatalf("%d rows after the GetToken that found an expired one, want %d (it deletes its row)", got, n)
	}
	if got, err := sqlitemap.Sweep(ctx, s); err != nil || got != n-1 {
		t.Fatalf("the sweep deleted %d, %v; want the %d expired rows", got, err, n-1)
	}
	if v, err := s.GetToken(ctx, "tok_kept"); err != nil || string(v) != "kept" {
		t.Fatalf("a token within its ttl after the sweep: %q, %v", v, err)
	}
	if got := sqlitemap.TokenRows(t, s); got != 1 {
		t.Fatalf("%d rows after the sweep, want 1", got)
	}
}
