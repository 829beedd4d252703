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
	leasetest.Run(t, openStore, func(t *testing.T) lease.Store {
		s := openStore(t)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func openStore(t *testing.T) lease.Store {
	t.Helper()
	s, err := sqlitelease.Open(context.Background(), filepath.Join(t.TempDir(), "leases.db"), lease.TableV2)
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
