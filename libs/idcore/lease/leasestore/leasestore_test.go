package leasestore_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/leasestore"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	st, err := leasestore.Open(ctx, "sqlite", filepath.Join(t.TempDir(), "l.db"), lease.TableV2)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Claim(ctx, 1, "a", 1, 2); err != nil {
		t.Fatalf("a claim on the opened SQLite table: %v", err)
	}
	if _, err := leasestore.Open(ctx, "redis", "127.0.0.1:6379", lease.TableV2); err == nil || !strings.Contains(err.Error(), `"redis"`) {
		t.Fatalf("an unknown kind: %v", err)
	}
}
