package rediscache_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/deadline"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/mapping/mappingtest"
	"github.com/idgen/idgen/services/public-id/mapping/rediscache"
	"github.com/prometheus/client_golang/prometheus"
)

var tables atomic.Int64

// dynamoStore creates a table of its own on srv and returns the store on it.
func dynamoStore(t *testing.T, srv *testenv.Dynalite) *dynamomap.Store {
	t.Helper()
	db, err := dynamo.NewClient(ctx, srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("rediscache-%d", tables.Add(1))
	if err := dynamomap.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	s, err := dynamomap.Open(ctx, dynamomap.Target{Endpoint: srv.Endpoint, Table: table}, dynamomap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformanceDynamoDB: the contract holds with the cache in front of the store of record as
// the programs open it (DynamoDB behind its deadline, its durability passed on), on dynalite and
// a real Redis; a mapping the cache holds answers without the store.
func TestConformanceDynamoDB(t *testing.T) {
	srv := testenv.StartDynalite(t, "")
	r := testenv.StartRedis(t, t.TempDir(), "--appendonly", "no")
	front := func(t *testing.T, st *dynamomap.Store, reg prometheus.Registerer) *rediscache.Store {
		bounded, err := deadline.New(st, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return open(t, url(r), bounded, rediscache.Options{Timeout: time.Second, Durability: st, Registerer: reg})
	}
	mappingtest.Run(t, func(t *testing.T) mapping.Store {
		return front(t, dynamoStore(t, srv), nil)
	}, func(t *testing.T) mapping.Store {
		down := testenv.StartDynalite(t, "")
		c := front(t, dynamoStore(t, down), nil)
		down.Stop()
		return c
	})

	st := dynamoStore(t, srv)
	reg := prometheus.NewRegistry()
	c := front(t, st, reg)
	if v, why := c.Volatile(); v || !c.ReadsDurable() {
		t.Fatalf("DynamoDB behind the cache: volatile %v (%s), reads durable %v", v, why, c.ReadsDurable())
	}
	pub, err := c.Publish(ctx, 9601, maker(t))
	if err != nil {
		t.Fatal(err)
	}
	rediscache.Wait(c)
	srv.Freeze()
	defer srv.Thaw()
	if got, err := c.Resolve(ctx, pub); err != nil || got != 9601 || reads(reg, "resolve", "hit") != 1 {
		t.Fatalf("Resolve with DynamoDB frozen = %d, %v; want 9601 from Redis", got, err)
	}
}
