package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/registry/store"
	"github.com/idgen/idgen/services/registry/store/dynamostore"
	"github.com/idgen/idgen/services/registry/store/storetest"
)

func TestConformance(t *testing.T) {
	srv := testenv.StartDynalite(t, "")
	var i atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		return newStore(t, srv, fmt.Sprintf("%s-%d", region.RegistryTable, i.Add(1)))
	}, func(t *testing.T) store.Store {
		// A server of its own, stopped once the table holds a seeded registry.
		down := testenv.StartDynalite(t, "")
		s := newStore(t, down, region.RegistryTable)
		if err := s.Seed(context.Background(), region.Defaults(), "v2"); err != nil {
			t.Fatal(err)
		}
		down.Stop()
		return s
	})
}

func newStore(t *testing.T, srv *testenv.Dynalite, table string) store.Store {
	t.Helper()
	ctx := context.Background()
	db, err := dynamo.NewClient(ctx, srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamostore.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	return dynamostore.New(db, table)
}

// killAfter is an HTTP client that, once the store has answered the nth write (PutItem,
// UpdateItem or TransactWriteItems), kills the store: a crash between two writes.
type killAfter struct {
	n      int
	writes int
	kill   func()
}

func (k *killAfter) Do(req *http.Request) (*http.Response, error) {
	target := req.Header.Get("X-Amz-Target")
	resp, err := http.DefaultClient.Do(req)
	if strings.HasSuffix(target, ".PutItem") || strings.HasSuffix(target, ".UpdateItem") || strings.HasSuffix(target, ".TransactWriteItems") {
		if k.writes++; k.writes == k.n && k.kill != nil {
			k.kill()
			k.kill = nil
		}
	}
	return resp, err
}

// oldSeed is Seed as it was: the counter item, then each region item, one PutItem each.
func oldSeed(ctx context.Context, db *dynamodb.Client, table string, regions []region.Region, schedule string) error {
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table,
		Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "counter"}, "next": &types.AttributeValueMemberN{Value: fmt.Sprint(len(regions))},
			"schedule": &types.AttributeValueMemberS{Value: schedule}}}); err != nil {
		return err
	}
	for _, r := range regions {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "region#" + r.Name}, "number": &types.AttributeValueMemberN{Value: fmt.Sprint(r.Number)},
			"name": &types.AttributeValueMemberS{Value: r.Name}, "peer": &types.AttributeValueMemberS{Value: r.Peer},
			"status": &types.AttributeValueMemberS{Value: r.Status}, "added_at": &types.AttributeValueMemberN{Value: "0"}}}); err != nil {
			return err
		}
	}
	return nil
}

// TestSeedIsAllOrNothing: the store is killed after each write of the old Seed's order (the
// counter, then region after region) and started again: the old order leaves a seeded registry
// with regions missing; Seed, one transaction, leaves no registry or all of it, and seeding again
// completes it.
func TestSeedIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	regions := region.Defaults()
	for _, old := range []bool{true, false} {
		for n := 1; n <= 3; n++ {
			name := fmt.Sprintf("new/killed after write %d", n)
			if old {
				name = fmt.Sprintf("old order/killed after write %d", n)
			}
			t.Run(name, func(t *testing.T) {
				srv := testenv.StartDynaliteWithTables(t, t.TempDir(), dynamostore.Tables(region.RegistryTable))
				base, err := dynamo.NewClient(ctx, srv.Endpoint)
				if err != nil {
					t.Fatal(err)
				}
				k := &killAfter{n: n, kill: srv.Kill}
				db := dynamodb.New(base.Options(), func(o *dynamodb.Options) { o.HTTPClient = k; o.Retryer = aws.NopRetryer{} })
				var serr error
				if old {
					serr = oldSeed(ctx, db, region.RegistryTable, regions, "v2")
				} else {
					serr = dynamostore.New(db, region.RegistryTable).Seed(ctx, regions, "v2")
				}
				if k.kill != nil {
					srv.Stop() // Seed made fewer writes than n: stopped after it instead
				}
				srv.Restart(t)
				st := dynamostore.New(base, region.RegistryTable)
				list, lerr := st.List(ctx)
				_, scherr := st.Schedule(ctx)
				if lerr != nil {
					t.Fatal(lerr)
				}
				partial := scherr == nil && len(list) < len(regions)
				switch {
				case old && !partial:
					t.Fatalf("the old order, killed after write %d: %d regions, schedule %v; want a partial registry (the harness must kill between writes)", n, len(list), scherr)
				case old:
					return
				case partial:
					t.Fatalf("Seed killed after write %d left a partial registry: seeded, %d of %d regions (seed error %v)", n, len(list), len(regions), serr)
				case scherr == nil && len(list) != len(regions):
					t.Fatalf("Seed: %d regions", len(list))
				case scherr != nil && (!errors.Is(scherr, store.ErrNotSeeded) || len(list) != 0):
					t.Fatalf("after the kill: schedule %v, %d regions; want no registry at all", scherr, len(list))
				}
				// Seeding again, as the registry does at start-up, completes it (or changes nothing).
				if err := st.Seed(ctx, regions, "v2"); err != nil {
					t.Fatal(err)
				}
				if list, err := st.List(ctx); err != nil || len(list) != len(regions) {
					t.Fatalf("after seeding again: %d regions, %v", len(list), err)
				}
			})
		}
	}
}
