package dynamostore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/registry/store"
	"github.com/idgen/idgen/services/registry/store/dynamostore"
	"github.com/idgen/idgen/services/registry/store/storetest"
)

func TestConformance(t *testing.T) {
	srv := testenv.StartDynalite(t, "")
	db, err := dynamolease.NewClient(context.Background(), srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var i atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		table := fmt.Sprintf("%s-%d", store.TableName, i.Add(1))
		if err := dynamostore.CreateTable(context.Background(), db, table); err != nil {
			t.Fatal(err)
		}
		return dynamostore.New(db, table)
	})
}
