package sqlitemap

import (
	"context"
	"testing"
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
