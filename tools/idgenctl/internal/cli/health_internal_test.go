package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
)

// TestHealthComparesTheLeaseTable: a generator learns of a quarantine only at its next renewal;
// until then health reads the lease table and reports the lease lost, not ok.
func TestHealthComparesTheLeaseTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "leases-us-east-1.db")
	st, err := sqlitelease.Open(ctx, path, lease.TableV2)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	row, err := st.Claim(ctx, 3, "gen-a", now, now+60_000)
	if err != nil {
		t.Fatal(err)
	}
	o := &opts{stderr: io.Discard, leaseStore: "sqlite:" + path, region: "us-east-1"}
	healthz := func(epoch int64) map[string]any {
		return map[string]any{"leases": []any{map[string]any{"layout": "v2", "held": true, "machine": float64(3), "epoch": float64(epoch)}}}
	}
	tables := map[string]lease.Store{}
	if got := o.leaseLost(ctx, tables, healthz(row.Epoch)); got != "" {
		t.Fatalf("a lease the table agrees with: %q", got)
	}
	if _, err := st.Quarantine(ctx, 3); err != nil {
		t.Fatal(err)
	}
	got := o.leaseLost(ctx, tables, healthz(row.Epoch))
	if want := fmt.Sprintf("v2:3 epoch %d, the table has epoch %d (QUARANTINED)", row.Epoch, row.Epoch+1); got != want {
		t.Fatalf("after a quarantine: %q, want %q", got, want)
	}
	if got := o.leaseLost(ctx, tables, map[string]any{"leases": []any{map[string]any{"layout": "v2", "held": true, "machine": float64(4), "epoch": float64(1)}}}); !strings.Contains(got, "no row") {
		t.Fatalf("a number the table does not have: %q", got)
	}
}
