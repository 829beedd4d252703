package sqlitemap_test

import (
	"context"
	"errors"
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
