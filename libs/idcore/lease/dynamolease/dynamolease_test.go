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
	var n atomic.Int64
	leasetest.Run(t, func(t *testing.T) lease.Store {
		return newStore(t, srv, fmt.Sprint(n.Add(1)))
	}, func(t *testing.T) lease.Store {
		// A server of its own, stopped once the tables exist: every call meets a closed port.
		down := testenv.StartDynalite(t, "")
		s := newStore(t, down, "down")
		down.Stop()
		return s
	})
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
	return dynamolease.New(db, leases, history)
}
