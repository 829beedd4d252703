package mapstore_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/mapstore"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/prometheus/client_golang/prometheus"
)

// TestDynamoDB: --store dynamodb:URL opens the table --dynamodb-table names, durable, behind the
// cache; a missing table is an error at start-up.
func TestDynamoDB(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartDynaliteWithTables(t, "", dynamomap.Tables("mappings"))
	parse := func(args ...string) mapstore.Flags {
		var f mapstore.Flags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		f.Register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := f.Check(); err != nil {
			t.Fatal(err)
		}
		return f
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if f := parse("--store", "dynamodb:"+srv.Endpoint); f.DynamoDBTable != dynamomap.DefaultTable {
		t.Fatalf("--dynamodb-table defaults to %q", f.DynamoDBTable)
	} else if _, err := mapstore.Open(ctx, f, log, prometheus.NewRegistry()); err == nil {
		t.Fatal("a missing table opened")
	}
	o, err := mapstore.Open(ctx, parse("--store", "dynamodb:"+srv.Endpoint, "--dynamodb-table", "mappings"), log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if v, why := o.Volatile(); v || o.Health() != nil {
		t.Fatalf("a DynamoDB store is volatile: %s", why)
	}
	pub, err := o.Mappings.Publish(ctx, 42, func() (string, error) { return "ord_mapstoretest", nil })
	if err != nil || pub != "ord_mapstoretest" {
		t.Fatalf("Publish = %q, %v", pub, err)
	}
	if _, ok := o.Store.(*dynamomap.Store); !ok {
		t.Fatalf("the store is a %T", o.Store)
	}
	if got, err := o.Mappings.Resolve(ctx, pub); err != nil || got != 42 {
		t.Fatalf("Resolve = %d, %v", got, err)
	}
	if _, err := o.Mappings.Resolve(ctx, "ord_none"); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Resolve of an unknown public ID: %v", err)
	}
}
