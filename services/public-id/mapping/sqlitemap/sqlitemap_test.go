package sqlitemap_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/mappingtest"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
)

func TestConformance(t *testing.T) {
	mappingtest.Run(t, func(t *testing.T) mapping.Store {
		s, err := sqlitemap.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
