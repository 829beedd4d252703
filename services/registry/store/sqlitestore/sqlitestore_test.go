package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/idgen/idgen/services/registry/store"
	"github.com/idgen/idgen/services/registry/store/sqlitestore"
	"github.com/idgen/idgen/services/registry/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, openStore, func(t *testing.T) store.Store {
		s := openStore(t)
		if err := s.Seed(context.Background(), nil, "v2"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "registry.db"))
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
