package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/testenv"
)

// restoreOnClaim replaces the table, as the restore-backup fault does, between a keeper's check
// of the table and its claim: a holder paused there.
type restoreOnClaim struct {
	lease.Store
	once    sync.Once
	restore func() error
	err     error
}

func (s *restoreOnClaim) Claim(ctx context.Context, m int, holder string, now, expiry int64) (lease.Row, error) {
	s.once.Do(func() { s.err = s.restore() })
	if s.err != nil {
		return lease.Row{}, s.err
	}
	return s.Store.Claim(ctx, m, holder, now, expiry)
}

// TestClaimRacingARestore: a claim checked against the table a restore replaces lands in the
// restored table; the keeper checks again, holds nothing and issues nothing. The check the run
// makes before the restore's fence counts that row as such a claim and passes, and fails on a claim
// checked against the restored table.
func TestClaimRacingARestore(t *testing.T) {
	ctx := context.Background()
	d := testenv.StartDynaliteWithTables(t, "", dynamolease.Tables(lease.TableV2, lease.TableHistory))
	db, err := dynamolease.NewClient(ctx, d.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	st := dynamolease.New(db, lease.TableV2, lease.TableHistory)
	keeper := func(s lease.Store, m int, holder string) (*lease.Keeper, *idcore.Generator) {
		gen, err := idcore.NewGenerator(idcore.Settings{Health: clocktest.Synced()})
		if err != nil {
			t.Fatal(err)
		}
		k, err := lease.NewKeeper(lease.Config{Store: s, Generator: gen, Range: lease.Range{Lo: m, Hi: m}, Holder: holder,
			Lease: leaseLen, Renew: renew, FenceMargin: margin})
		if err != nil {
			t.Fatal(err)
		}
		return k, gen
	}
	// The first holder writes the metadata row; the backup holds it and no lease row.
	first, _ := keeper(st, 64, "first")
	if err := first.ClaimOnce(ctx); err != nil {
		t.Fatal(err)
	}
	scan, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: ptr(lease.TableV2), ConsistentRead: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	var backup []map[string]types.AttributeValue
	for _, it := range scan.Items {
		if isMeta(it) {
			backup = append(backup, it)
		}
	}
	old, _ := st.TableID(ctx)
	from := time.Now().Add(-leaseLen)

	racer := &restoreOnClaim{Store: st, restore: func() error { return replaceTable(ctx, db, backup, func() {}, func() {}) }}
	k, gen := keeper(racer, 65, "racer")
	if err := k.ClaimOnce(ctx); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("a claim that landed in the restored table: %v, want ErrRestored", err)
	}
	if st := k.Status(); st.Held {
		t.Fatalf("the racing keeper holds %+v", st)
	}
	if _, err := gen.Next(ctx); err == nil {
		t.Fatal("the racing keeper's generator issued an ID")
	}
	restored, _ := st.TableID(ctx)
	rows, err := st.List(ctx)
	if err != nil || len(rows) != 1 || rows[0].Machine != 65 || rows[0].Holder != "racer" || restored == old {
		t.Fatalf("the restored table (%s, was %s) holds %+v, %v; want the racing claim's row", restored, old, rows, err)
	}
	g := &group{name: "dynamo", store: st, machines: []int{64, 65}}
	passed, raced, err := claimsOnRestore(ctx, g, from, time.Now(), restored, rows)
	if err != nil || len(passed) != 0 || raced != 1 {
		t.Fatalf("claimsOnRestore = %+v, %d, %v; want none checked against the restored table, 1 raced", passed, raced, err)
	}

	// A claim checked against the restored table, before its fence, is what fails the run.
	if err := st.AppendHistory(ctx, lease.Event{Machine: 64, AtUnixMs: time.Now().UnixMilli(), Kind: lease.KindClaim,
		Holder: "bad", Epoch: 1, TableID: restored}); err != nil {
		t.Fatal(err)
	}
	passed, _, err = claimsOnRestore(ctx, g, from, time.Now().Add(time.Millisecond), restored, rows)
	if err != nil || len(passed) != 1 || passed[0].Holder != "bad" {
		t.Fatalf("claimsOnRestore = %+v, %v; want the claim checked against the restored table", passed, err)
	}
}
