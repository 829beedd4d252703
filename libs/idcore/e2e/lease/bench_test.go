package lease_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
	"github.com/idgen/idgen/libs/testenv"
)

// countingStore counts the calls that write to the lease table.
type countingStore struct {
	lease.Store
	claims, renewals atomic.Int64
	// watchEpoch, when set, keeps the latest new expiry of the renewals sent with that epoch.
	watchEpoch, watchedExpiry atomic.Int64
}

func (c *countingStore) Claim(ctx context.Context, m int, h string, now, exp int64) (lease.Row, error) {
	c.claims.Add(1)
	return c.Store.Claim(ctx, m, h, now, exp)
}

func (c *countingStore) Renew(ctx context.Context, m int, h string, e, exp int64) error {
	c.renewals.Add(1)
	if w := c.watchEpoch.Load(); w != 0 && w == e {
		c.watchedExpiry.Store(max(c.watchedExpiry.Load(), exp))
	}
	return c.Store.Renew(ctx, m, h, e, exp)
}

func drivers(b *testing.B) map[string]func(b *testing.B) lease.Store {
	return map[string]func(b *testing.B) lease.Store{
		"sqlite": func(b *testing.B) lease.Store {
			s, err := sqlitelease.Open(context.Background(), filepath.Join(b.TempDir(), "l.db"), lease.TableV2)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		},
		"dynamodb": func(b *testing.B) lease.Store {
			srv := testenv.StartDynaliteWithTables(b, "", dynamolease.Tables(lease.TableV2, lease.TableHistory))
			db, err := dynamolease.NewClient(context.Background(), srv.Endpoint)
			if err != nil {
				b.Fatal(err)
			}
			return dynamolease.New(db, lease.TableV2, lease.TableHistory)
		},
	}
}

// BenchmarkClaim measures one claim round (table check, walk from a random start, conditional
// writes until one succeeds) in the embedded range 64–511 with 0%, 50% and 95% of it held.
func BenchmarkClaim(b *testing.B) {
	for _, name := range []string{"sqlite", "dynamodb"} {
		for _, pct := range []int{0, 50, 95} {
			b.Run(fmt.Sprintf("%s/taken=%d%%", name, pct), func(b *testing.B) {
				ctx := context.Background()
				st := &countingStore{Store: drivers(b)[name](b)}
				r := lease.Range{Lo: 64, Hi: 511}
				far := time.Now().Add(time.Hour).UnixMilli()
				if _, err := lease.CheckTable(ctx, st, lease.Settings{Lease: 5 * time.Minute, Renew: 10 * time.Second, Margin: 5 * time.Second}); err != nil { // a fresh table gets its metadata row
					b.Fatal(err)
				}
				for i := range r.Size() * pct / 100 {
					m := r.Lo + (i*7919)%r.Size() // spread over the range
					if _, err := st.Store.Claim(ctx, m, "other", time.Now().UnixMilli(), far); err != nil {
						b.Fatal(err)
					}
				}
				gen, _ := idcore.NewGenerator(idcore.Settings{Health: clocktest.Synced()})
				k, err := lease.NewKeeper(lease.Config{Store: st, Generator: gen, Range: r, Holder: "bench",
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				st.claims.Store(0)
				for b.Loop() {
					if err := k.ClaimOnce(ctx); err != nil {
						b.Fatal(err)
					}
					if err := k.Release(ctx, 0); err != nil && !errors.Is(err, lease.ErrLost) {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(st.claims.Load())/float64(b.N), "writes/claim")
			})
		}
	}
}
