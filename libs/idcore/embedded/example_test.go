package embedded_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/embedded"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
)

// An application that makes its own IDs: a lease file on the host, a number from the embedded
// range, and IDs with no network call. (Development machines have no disciplined clock, so the
// example runs in warn mode; production uses the default, strict.)
func ExampleStart() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, err := sqlitelease.Open(ctx, filepath.Join(dir, "leases.db"), lease.TableV2)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	node, err := embedded.Start(ctx, embedded.Config{
		Region:     2, // eu-west-1
		Stores:     map[string]lease.Store{"v2": store},
		ClockCheck: idcore.ClockWarn,
	})
	if err != nil {
		panic(err)
	}
	defer node.Close(ctx) // stops issuing, then releases the number
	if err := node.WaitReady(ctx); err != nil {
		panic(err)
	}
	id, _ := node.Next(ctx)
	d, _ := node.Generator().Schedule().Decode(id)
	fmt.Println(d.Layout, d.Region, d.Machine >= 64)
	// Output: v2 2 true
}
