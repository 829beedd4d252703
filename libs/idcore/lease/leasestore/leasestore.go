// Package leasestore opens a lease table by the kind of its store, so that the generator, the
// operators' tool and the test processes choose a driver in one place.
package leasestore

import (
	"context"
	"fmt"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
)

// Open opens the lease table table (lease.TableV2 or lease.TableV1) with its history:
// kind "sqlite" with where the file's path, or kind "dynamodb" with where the endpoint URL.
func Open(ctx context.Context, kind, where, table string) (lease.Store, error) {
	switch kind {
	case "sqlite":
		return sqlitelease.Open(ctx, where, table)
	case "dynamodb":
		db, err := dynamolease.NewClient(ctx, where)
		if err != nil {
			return nil, err
		}
		return dynamolease.New(db, table, lease.TableHistory), nil
	}
	return nil, fmt.Errorf("lease store kind %q: want sqlite or dynamodb", kind)
}
