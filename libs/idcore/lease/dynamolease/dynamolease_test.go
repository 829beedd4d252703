package dynamolease_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/lease/leasetest"
	"github.com/idgen/idgen/libs/testenv"
)

func TestConformance(t *testing.T) {
	srv := testenv.StartDynalite(t, "")
	ctx := context.Background()
	db, err := dynamolease.NewClient(ctx, srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	leasetest.Run(t, func(t *testing.T) lease.Store {
		i := n.Add(1)
		leases, history := fmt.Sprintf("%s-%d", lease.TableV2, i), fmt.Sprintf("%s-%d", lease.TableHistory, i)
		if err := dynamolease.CreateTables(ctx, db, leases, history); err != nil {
			t.Fatal(err)
		}
		return dynamolease.New(db, leases, history)
	})
}
