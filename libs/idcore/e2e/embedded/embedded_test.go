package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/idcore/embedded"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func openSQLite(t *testing.T, path, table string) *sqlitelease.Store {
	t.Helper()
	s, err := sqlitelease.Open(context.Background(), path, table)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func startNode(t *testing.T, cfg embedded.Config) *embedded.Node {
	t.Helper()
	if cfg.Health == nil {
		cfg.Health = clocktest.Synced()
	}
	if cfg.Lease == 0 {
		cfg.Lease, cfg.Renew, cfg.FenceMargin = 3*time.Second, 200*time.Millisecond, 500*time.Millisecond
	}
	n, err := embedded.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	return n
}

func ready(t *testing.T, n *embedded.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestNodesShareOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leases.db")
	cfg := func() embedded.Config {
		return embedded.Config{Region: 3, Range: "64-65", Stores: map[string]lease.Store{"v2": openSQLite(t, path, lease.TableV2)}}
	}
	a, b := startNode(t, cfg()), startNode(t, cfg())
	ready(t, a)
	ready(t, b)
	ma, mb := a.Leases()[0].Machine, b.Leases()[0].Machine
	if ma == mb {
		t.Fatalf("two nodes hold machine %d", ma)
	}
	// A third finds no free number and does not issue.
	c := startNode(t, cfg())
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		s := c.Leases()[0]
		return strings.Contains(s.Problem, lease.ErrNoFreeNumber.Error()),
			fmt.Sprintf("third node: %+v, want it to find no free number", s)
	})
	if _, err := c.Next(context.Background()); !errors.Is(err, idcore.ErrNoLease) && !errors.Is(err, idcore.ErrLayoutNotConfigured) {
		t.Fatalf("third node: %v", err)
	}
	// Close releases at once: the third takes a's number within a renew interval or so.
	lastA, _ := a.Next(context.Background())
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	ready(t, c)
	if took := time.Since(closed); took > 2*time.Second {
		t.Fatalf("the released number took %v to be claimed", took)
	}
	if got := c.Leases()[0].Machine; got != ma {
		t.Fatalf("third node holds %d, want the released %d", got, ma)
	}
	idc, err := c.Next(context.Background())
	if err != nil || idc.Timestamp() <= lastA.Timestamp() {
		t.Fatalf("new holder's first id %d (ts %d) not above the old holder's last (ts %d): %v", idc, idc.Timestamp(), lastA.Timestamp(), err)
	}
	d, _ := idcore.ScheduleV2().Decode(idc)
	if d.Region != 3 || d.Machine != ma {
		t.Fatalf("decoded %+v", d)
	}
}

func TestReleaseSetsExpiryToNow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leases.db")
	st := openSQLite(t, path, lease.TableV2)
	n := startNode(t, embedded.Config{Range: "100-100", Stores: map[string]lease.Store{"v2": st}})
	ready(t, n)
	id, _ := n.Next(context.Background())
	held := n.Leases()[0]
	row, _ := st.Get(context.Background(), 100)
	if row.ExpiryUnixMs != held.ExpiryUnixMs || row.Holder != held.Holder || row.Epoch != held.Epoch {
		t.Fatalf("the keeper's view %+v differs from the row %+v", held, row)
	}
	if held.FenceUnixMs != held.ExpiryUnixMs-500 {
		t.Fatalf("fence %d is not the written expiry %d minus the margin", held.FenceUnixMs, held.ExpiryUnixMs)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	row, _ = st.Get(context.Background(), 100)
	if row.ExpiryUnixMs < id.Time().UnixMilli() || row.ExpiryUnixMs > time.Now().UnixMilli() {
		t.Fatalf("released expiry %d, last id at %d, now %d", row.ExpiryUnixMs, id.Time().UnixMilli(), time.Now().UnixMilli())
	}
	if _, err := n.Next(context.Background()); !errors.Is(err, idcore.ErrNoLease) {
		t.Fatalf("after Close: %v", err)
	}
	evs, err := st.History(context.Background(), 100, 0, time.Now().UnixMilli()+1)
	if err != nil || len(evs) != 2 || evs[0].Kind != lease.KindClaim || evs[1].Kind != lease.KindRelease {
		t.Fatalf("history = %+v, %v", evs, err)
	}
}

func TestScheduleV1V2HoldsBothNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leases.db")
	n := startNode(t, embedded.Config{
		Schedule: idcore.ScheduleV1V2(), Region: 2, Range: "embedded",
		Stores: map[string]lease.Store{"v1": openSQLite(t, path, lease.TableV1), "v2": openSQLite(t, path, lease.TableV2)},
	})
	ready(t, n)
	// Ready says the current (v1) period's number is held; the v2 keeper claims on its own.
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		for _, s := range n.Leases() {
			if !s.Held {
				return false, fmt.Sprintf("not held: %+v", s)
			}
		}
		return true, ""
	})
	got := map[string]int{}
	for _, s := range n.Leases() {
		got[s.Layout] = s.Machine
	}
	if got["v1"] < 64 || got["v1"] > 1023 || got["v2"] < 64 || got["v2"] > 511 {
		t.Fatalf("numbers held: %v", got)
	}
	id, _ := n.Next(context.Background())
	if d, _ := n.Generator().Schedule().Decode(id); d.Layout != "v1" || d.Machine != got["v1"] {
		t.Fatalf("before 2028 the id is %+v", d)
	}
}

func TestStartRejects(t *testing.T) {
	st := openSQLite(t, filepath.Join(t.TempDir(), "l.db"), lease.TableV2)
	v2 := map[string]lease.Store{"v2": st}
	tests := []struct {
		name string
		cfg  embedded.Config
	}{
		{"no store for v1", embedded.Config{Schedule: idcore.ScheduleV1V2(), Stores: v2}},
		{"renew above a third of the lease", embedded.Config{Stores: v2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, FenceMargin: 100 * time.Millisecond}},
		{"margin not below lease minus renew", embedded.Config{Stores: v2, Lease: 3 * time.Second, Renew: time.Second, FenceMargin: 2 * time.Second}},
		{"range beyond the layout", embedded.Config{Stores: v2, Range: "500-600"}},
		{"bad range", embedded.Config{Stores: v2, Range: "lots"}},
		{"region beyond the layout", embedded.Config{Stores: v2, Region: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n, err := embedded.Start(context.Background(), tt.cfg); err == nil {
				n.Close(context.Background())
				t.Fatal("accepted")
			}
		})
	}
}

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	n := startNode(t, embedded.Config{Range: "70-70", Registerer: reg,
		Stores: map[string]lease.Store{"v2": openSQLite(t, filepath.Join(t.TempDir(), "l.db"), lease.TableV2)}})
	ready(t, n)
	claimed := n.Leases()[0]
	testenv.Eventually(t, 10*time.Second, func() (bool, string) { // a renewal
		s := n.Leases()[0]
		return s.ExpiryUnixMs > claimed.ExpiryUnixMs, fmt.Sprintf("no renewal: %+v", s)
	})
	for _, want := range []string{"idgen_generator_ids_issued_total", "idgen_lease_claims_total", "idgen_lease_renewals_total", "idgen_generator_fence_remaining_seconds", "idgen_clock_healthy"} {
		if n, err := testutil.GatherAndCount(reg, want); err != nil || n == 0 {
			t.Errorf("metric %s not registered (%d series, %v)", want, n, err)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestStartRefusesOtherRules: a node whose lease differs from the rules a first node wrote into
// the table refuses to start, naming both values; one with the table's settings starts.
func TestStartRefusesOtherRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leases.db")
	first := startNode(t, embedded.Config{Range: "64-64", Stores: map[string]lease.Store{"v2": openSQLite(t, path, lease.TableV2)}})
	ready(t, first)
	n, err := embedded.Start(context.Background(), embedded.Config{Range: "65-65", Health: clocktest.Synced(),
		Stores: map[string]lease.Store{"v2": openSQLite(t, path, lease.TableV2)},
		Lease:  20 * time.Minute, Renew: 10 * time.Second, FenceMargin: 5 * time.Second})
	if err == nil {
		n.Close(context.Background())
		t.Fatal("a node with a 20-minute lease started on a table whose rules say 3 s")
	}
	if !errors.Is(err, lease.ErrRules) || !strings.Contains(err.Error(), "lease 20m0s (the table's: 3s)") || !strings.Contains(err.Error(), "fence margin 5s (the table's: 500ms)") {
		t.Fatalf("the refusal does not name both values: %v", err)
	}
	ready(t, startNode(t, embedded.Config{Range: "65-65", Stores: map[string]lease.Store{"v2": openSQLite(t, path, lease.TableV2)}}))
}
