package sqlitemap

import (
	"context"
	"testing"
	"time"
)

// HoldWriteLock takes the file's write lock on one of s's connections, as another process's
// long transaction would, until release.
func HoldWriteLock(t *testing.T, s *Store) (release func()) {
	t.Helper()
	ctx := context.Background()
	c, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := c.ExecContext(ctx, `ROLLBACK`); err != nil {
			t.Error(err)
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}

// SetClock makes s read the time from now (token expiry and the sweep).
func SetClock(s *Store, now func() time.Time) { s.now = now }

// Sweep runs one sweep of expired tokens now and returns how many rows it deleted.
func Sweep(ctx context.Context, s *Store) (int64, error) { return s.sweep(ctx) }

// TokenRows counts the rows of the tokens table, expired ones included.
func TokenRows(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM tokens`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
