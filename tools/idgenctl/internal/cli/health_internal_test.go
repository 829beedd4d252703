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
	"github.com/idgen/idgen/libs/svc/healthz"
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
	report := func(machine int, epoch int64) *healthz.Generator {
		return &healthz.Generator{Leases: []healthz.Lease{{Layout: "v2", Held: true, Machine: machine, Epoch: epoch}}}
	}
	tables := map[string]lease.Store{}
	if got := o.leaseLost(ctx, tables, report(3, row.Epoch)); got != "" {
		t.Fatalf("a lease the table agrees with: %q", got)
	}
	if _, err := st.Quarantine(ctx, 3); err != nil {
		t.Fatal(err)
	}
	got := o.leaseLost(ctx, tables, report(3, row.Epoch))
	if want := fmt.Sprintf("v2:3 epoch %d, the table has epoch %d (QUARANTINED)", row.Epoch, row.Epoch+1); got != want {
		t.Fatalf("after a quarantine: %q, want %q", got, want)
	}
	if got := o.leaseLost(ctx, tables, report(4, 1)); !strings.Contains(got, "no row") {
		t.Fatalf("a number the table does not have: %q", got)
	}
}
