package dynamostore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

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
		return newStore(t, srv, fmt.Sprintf("%s-%d", store.TableName, i.Add(1)))
	}, func(t *testing.T) store.Store {
		// A server of its own, stopped once the table holds a seeded registry.
		down := testenv.StartDynalite(t, "")
		s := newStore(t, down, store.TableName)
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
