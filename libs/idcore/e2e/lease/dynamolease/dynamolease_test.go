package dynamolease_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/lease/leasetest"
	"github.com/idgen/idgen/libs/testenv"
)

func TestConformance(t *testing.T) {
	srv := testenv.StartDynalite(t, "")
	var n atomic.Int64
	leasetest.Run(t, leasetest.Driver{
		New: func(t *testing.T) lease.Store {
			return newStore(t, srv, fmt.Sprint(n.Add(1)))
		},
		Unavailable: func(t *testing.T) lease.Store {
			// A server of its own, stopped once the tables exist: every call meets a closed port.
			down := testenv.StartDynalite(t, "")
			s := newStore(t, down, "down")
			down.Stop()
			return s
		},
		// The v1 table beside the v2 one, sharing its history table.
		Sibling: func(t *testing.T, s lease.Store) lease.Store {
			ts := s.(*store)
			v1 := ts.leases + "-v1"
			if err := dynamolease.CreateTables(context.Background(), ts.db, v1, ts.history); err != nil {
				t.Fatal(err)
			}
			return &store{Store: dynamolease.New(ts.db, v1, ts.history), db: ts.db, leases: v1, history: ts.history}
		},
		// A DynamoDB restore: the table deleted and made anew under its name (a new TableId),
		// the history table left alone.
		Restore: func(t *testing.T, s lease.Store) lease.Store {
			ts := s.(*store)
			ctx := context.Background()
			if err := dynamolease.DeleteTable(ctx, ts.db, ts.leases); err != nil {
				t.Fatal(err)
			}
			if err := dynamolease.CreateTables(ctx, ts.db, ts.leases, ts.history); err != nil {
				t.Fatal(err)
			}
			return s
		},
	})
}

// store is a driver's store with its client and table names.
type store struct {
	*dynamolease.Store
	db              *dynamodb.Client
	leases, history string
}

func newStore(t *testing.T, srv *testenv.Dynalite, suffix string) lease.Store {
	t.Helper()
	ctx := context.Background()
	db, err := dynamolease.NewClient(ctx, srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	leases, history := lease.TableV2+"-"+suffix, lease.TableHistory+"-"+suffix
	if err := dynamolease.CreateTables(ctx, db, leases, history); err != nil {
		t.Fatal(err)
	}
	return &store{Store: dynamolease.New(db, leases, history), db: db, leases: leases, history: history}
}
