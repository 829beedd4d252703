package sqlitelease_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
)

func open(t *testing.T) *sqlitelease.Store {
	t.Helper()
	s, err := sqlitelease.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"), lease.TableV2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestClaimOnlyWhenAbsentOrExpired: Store.Claim succeeds only when the row is absent or its
// lease_expiry < :now, and then writes expiry and epoch + 1 (model rule store_claim).
func TestClaimOnlyWhenAbsentOrExpired(t *testing.T) {
	s, ctx := open(t), context.Background()
	r, err := s.Claim(ctx, 1, "a", 100, 200)
	if err != nil || r.Epoch != 1 || r.ExpiryUnixMs != 200 || r.Holder != "a" {
		t.Fatalf("claim of an absent row: %+v %v", r, err)
	}
	if _, err := s.Claim(ctx, 1, "b", 200, 300); !errors.Is(err, lease.ErrTaken) {
		t.Fatalf("claim at :now = expiry: %v, want ErrTaken", err)
	}
	r, err = s.Claim(ctx, 1, "b", 201, 301)
	if err != nil || r.Epoch != 2 || r.Holder != "b" {
		t.Fatalf("claim after expiry: %+v %v", r, err)
	}
}

// TestRenewOnlyOwnEpochAndLater: Store.Renew succeeds only for the same holder and epoch and a
// later expiry; it never lowers the expiry (model rule store_renew).
func TestRenewOnlyOwnEpochAndLater(t *testing.T) {
	s, ctx := open(t), context.Background()
	r, _ := s.Claim(ctx, 1, "a", 100, 200)
	if err := s.Renew(ctx, 1, "a", r.Epoch, 200); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renewal to the same expiry: %v, want ErrLost", err)
	}
	if err := s.Renew(ctx, 1, "a", r.Epoch, 150); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renewal lowering the expiry: %v, want ErrLost", err)
	}
	if err := s.Renew(ctx, 1, "b", r.Epoch, 300); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renewal by another holder: %v, want ErrLost", err)
	}
	if err := s.Renew(ctx, 1, "a", r.Epoch+1, 300); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renewal of another epoch: %v, want ErrLost", err)
	}
	if err := s.Renew(ctx, 1, "a", r.Epoch, 300); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.Get(ctx, 1); g.ExpiryUnixMs != 300 || g.Epoch != r.Epoch {
		t.Fatalf("after renewal: %+v", g)
	}
}

// TestReleaseOnlyOwnEpoch: Store.Release writes the expiry only for the same holder and epoch
// (model rule store_release).
func TestReleaseOnlyOwnEpoch(t *testing.T) {
	s, ctx := open(t), context.Background()
	r, _ := s.Claim(ctx, 1, "a", 100, 200)
	if err := s.Release(ctx, 1, "a", r.Epoch+1, 120); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("release of another epoch: %v", err)
	}
	if err := s.Release(ctx, 1, "b", r.Epoch, 120); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("release by another holder: %v", err)
	}
	if err := s.Release(ctx, 1, "a", r.Epoch, 120); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.Get(ctx, 1); g.ExpiryUnixMs != 120 {
		t.Fatalf("after release: %+v", g)
	}
}

// TestQuarantineBlocksClaimAndRenew: Store.Quarantine sets holder QUARANTINED, expiry 2100 and
// epoch + 1: the holder's renewal fails and nobody claims (model rule quarantine).
func TestQuarantineBlocksClaimAndRenew(t *testing.T) {
	s, ctx := open(t), context.Background()
	r, _ := s.Claim(ctx, 1, "a", 100, 200)
	q, err := s.Quarantine(ctx, 1)
	if err != nil || q.Holder != lease.QuarantineHolder || q.ExpiryUnixMs != lease.QuarantineExpiryUnixMs || q.Epoch != r.Epoch+1 {
		t.Fatalf("quarantine: %+v %v", q, err)
	}
	if err := s.Renew(ctx, 1, "a", r.Epoch, 300); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renewal of a quarantined number: %v", err)
	}
	if _, err := s.Claim(ctx, 1, "b", 1_000_000, 1_000_100); !errors.Is(err, lease.ErrTaken) {
		t.Fatalf("claim of a quarantined number: %v", err)
	}
}
