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
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "registry.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
