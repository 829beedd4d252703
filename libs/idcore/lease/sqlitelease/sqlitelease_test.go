package sqlitelease_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/leasetest"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
)

func TestConformance(t *testing.T) {
	leasetest.Run(t, leasetest.Driver{
		New: func(t *testing.T) lease.Store {
			return openStore(t, filepath.Join(t.TempDir(), "leases.db"), lease.TableV2)
		},
		Unavailable: func(t *testing.T) lease.Store {
			s := openStore(t, filepath.Join(t.TempDir(), "leases.db"), lease.TableV2)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return s
		},
		// The v1 table in the same file: one history table for both.
		Sibling: func(t *testing.T, s lease.Store) lease.Store {
			return openStore(t, s.(*store).path, lease.TableV1)
		},
		Restore: func(t *testing.T, s lease.Store) lease.Store {
			if err := s.(*store).Recreate(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			return s
		},
	})
}

// store is a driver's store with the file it is in.
type store struct {
	*sqlitelease.Store
	path string
}

func openStore(t *testing.T, path, table string) lease.Store {
	t.Helper()
	s, err := sqlitelease.Open(context.Background(), path, table)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &store{Store: s, path: path}
}
