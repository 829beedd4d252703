package regions

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
)

// Open opens the store of every region of f on DynamoDB (dynamomap), each client signing for its
// own region, and returns the cross-region store. The local region's table is checked at once
// (DescribeTable); the others' are not, so that a process starts while another region is down.
func Open(ctx context.Context, f File, o Options) (*Store, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	stores := map[string]mapping.Replica{}
	closeAll := func() {
		for _, st := range stores {
			st.Close()
		}
	}
	for _, r := range f.Regions {
		if r.Absent {
			continue
		}
		db, err := dynamo.NewClient(ctx, r.Endpoint)
		if err != nil {
			closeAll()
			return nil, err
		}
		name := r.Name
		db = dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.Region = name })
		st, err := dynamomap.Open(ctx, dynamomap.Target{Endpoint: r.Endpoint, Table: r.Table},
			dynamomap.Options{Client: db, NoDescribe: r.Name != f.Region})
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("regions: %s: %w", r.Name, err)
		}
		stores[r.Name] = st
	}
	s, err := New(ctx, f, stores, o)
	if err != nil {
		closeAll()
		return nil, err
	}
	return s, nil
}
