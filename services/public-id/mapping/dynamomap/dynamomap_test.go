package dynamomap_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/mapping/mappingtest"
)

var tables atomic.Int64

// calls records the DynamoDB operations a client sends.
type calls struct{ m sync.Map }

// client returns a client of srv that records its operations in c (nil: none).
func (c *calls) client(t *testing.T, srv *testenv.Dynalite) *dynamodb.Client {
	t.Helper()
	db, err := dynamo.NewClient(context.Background(), srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if c == nil {
		return db
	}
	return dynamodb.New(db.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("record", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.m.Store(awsmiddleware.GetOperationName(ctx), true)
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
		})
	})
}

// newTable creates a table of its own on srv and returns the store on it, its calls recorded in
// c (the table's creation apart).
func newTable(t *testing.T, srv *testenv.Dynalite, c *calls) *dynamomap.Store {
	t.Helper()
	ctx := context.Background()
	table := fmt.Sprintf("%s-%d", dynamomap.DefaultTable, tables.Add(1))
	if err := dynamomap.CreateTable(ctx, (*calls)(nil).client(t, srv), table); err != nil {
		t.Fatal(err)
	}
	s, err := dynamomap.Open(ctx, dynamomap.Target{Table: table}, dynamomap.Options{Client: c.client(t, srv)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs both suites, Store's and Replica's, and checks that the driver sends
// only the operations its package doc lists (those IAM grants through Actions).
func TestConformance(t *testing.T) {
	srv := testenv.StartDynalite(t, "")
	var c calls
	t.Run("Store", func(t *testing.T) {
		mappingtest.Run(t, func(t *testing.T) mapping.Store {
			return newTable(t, srv, &c)
		}, func(t *testing.T) mapping.Store {
			// A server of its own, stopped once the table exists: every call meets a closed port.
			down := testenv.StartDynalite(t, "")
			s := newTable(t, down, &c)
			down.Stop()
			return s
		})
	})
	t.Run("Replica", func(t *testing.T) {
		mappingtest.RunReplica(t, func(t *testing.T) mapping.Replica { return newTable(t, srv, &c) })
	})
	// The operations and the IAM actions that authorize them (a transaction's Puts: PutItem).
	allowed := map[string]string{"DescribeTable": "dynamodb:DescribeTable", "GetItem": "dynamodb:GetItem", "PutItem": "dynamodb:PutItem",
		"TransactWriteItems": "dynamodb:PutItem", "Scan": "dynamodb:Scan"}
	needed := map[string]bool{}
	c.m.Range(func(k, _ any) bool {
		action, ok := allowed[k.(string)]
		if !ok {
			t.Errorf("the driver called %s, which its package doc does not list", k)
		}
		needed[action] = true
		return true
	})
	if len(needed) != len(dynamomap.Actions) {
		t.Errorf("the driver needs the actions %v; dynamomap.Actions lists %v", needed, dynamomap.Actions)
	}
	for _, a := range dynamomap.Actions {
		if !needed[a] {
			t.Errorf("dynamomap.Actions lists %s, which no call needs", a)
		}
	}
}

func TestDurability(t *testing.T) {
	s := newTable(t, testenv.StartDynalite(t, ""), nil)
	if v, why := s.Volatile(); v || !s.ReadsDurable() {
		t.Fatalf("Volatile() = %v, %q; ReadsDurable() = %v: want a durable store", v, why, s.ReadsDurable())
	}
}

func TestClosed(t *testing.T) {
	s := newTable(t, testenv.StartDynalite(t, ""), nil)
	s.Close()
	if _, err := s.Resolve(context.Background(), "ord_x"); !errors.Is(err, mapping.ErrUnavailable) {
		t.Fatalf("Resolve on a closed store: %v; want ErrUnavailable", err)
	}
}

// TestOpenChecksTheTable: a missing table, or one with another key schema, is a clear error at
// Open.
func TestOpenChecksTheTable(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartDynalite(t, "")
	db, err := dynamo.NewClient(ctx, srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dynamomap.Open(ctx, dynamomap.Target{Endpoint: srv.Endpoint, Table: "missing"}, dynamomap.Options{})
	if err == nil || !strings.Contains(err.Error(), `table "missing" does not exist`) {
		t.Fatalf("Open of a missing table: %v", err)
	}
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("numbered"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	_, err = dynamomap.Open(ctx, dynamomap.Target{Endpoint: srv.Endpoint, Table: "numbered"}, dynamomap.Options{Client: db})
	if err == nil || !strings.Contains(err.Error(), "key schema") || errors.Is(err, mapping.ErrUnavailable) {
		t.Fatalf("Open of a table with a numeric key: %v", err)
	}
}

// itemSize is an item's size by DynamoDB's rules (docs: "Item sizes and formats"): each
// attribute's name in UTF-8 bytes plus its value (a string's UTF-8 bytes, a binary's bytes, a
// number's 1 byte per two significant digits plus 1), plus 100 bytes of overhead per item.
func itemSize(t *testing.T, item map[string]types.AttributeValue) int {
	t.Helper()
	size := 100
	for name, v := range item {
		size += len(name)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			size += len(v.Value)
		case *types.AttributeValueMemberB:
			size += len(v.Value)
		case *types.AttributeValueMemberN:
			digits := strings.Trim(strings.NewReplacer("-", "", ".", "").Replace(v.Value), "0")
			size += (len(digits)+1)/2 + 1
		default:
			t.Fatalf("attribute %s: a %T", name, v)
		}
	}
	return size
}

// TestItemSizes pins the sizes the package doc gives for a typical mapping: a 28-character
// public ID and a 19-digit internal ID.
func TestItemSizes(t *testing.T) {
	pub, in := dynamomap.MappingItems(7_393_024_861_553_983_489, "ord_mbJjiLAQJJv7qQIlV1fpjDgd")
	ps, is := itemSize(t, pub), itemSize(t, in)
	doc, err := os.ReadFile("dynamomap.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("%d and %d bytes", ps, is), fmt.Sprintf("(%d bytes of storage per mapping", ps+is)} {
		if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), want) {
			t.Errorf("a typical mapping's items are %d and %d bytes (%d in all): the package doc lacks %q", ps, is, ps+is, want)
		}
	}
	if ps != 141 || is != 151 {
		t.Errorf("item sizes %d and %d, want 141 and 151", ps, is)
	}
}
