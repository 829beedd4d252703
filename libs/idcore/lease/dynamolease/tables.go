package dynamolease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idgen/idgen/libs/conn/dynamo"
)

// NewClient returns the repository's DynamoDB client (dynamo.NewClient): the standard AWS chain,
// endpoint overriding the service URL, placeholder credentials for a local server.
func NewClient(ctx context.Context, endpoint string) (*dynamodb.Client, error) {
	return dynamo.NewClient(ctx, endpoint)
}

// Tables returns CreateTables of leaseTable and historyTable on the endpoint it is given, through
// NewClient: the table maker of a local DynamoDB server (dynalite.Options.Tables,
// testenv.StartDynaliteWithTables).
func Tables(leaseTable, historyTable string) func(ctx context.Context, endpoint string) error {
	return func(ctx context.Context, endpoint string) error {
		db, err := NewClient(ctx, endpoint)
		if err != nil {
			return err
		}
		return CreateTables(ctx, db, leaseTable, historyTable)
	}
}

// CreateTables creates a lease table and the history table, when missing, with the key schemas of
// docs/leases.md#tables, and waits until they are active. For development and tests: in
// production Terraform creates the tables (with point-in-time recovery and the history TTL).
func CreateTables(ctx context.Context, db *dynamodb.Client, leaseTable, historyTable string) error {
	specs := []*dynamodb.CreateTableInput{{
		TableName:            &leaseTable,
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(KeyMachineID), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(KeyMachineID), KeyType: types.KeyTypeHash}},
	}, {
		TableName:   &historyTable,
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(KeyMachineID), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String(KeyAt), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(KeyMachineID), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(KeyAt), KeyType: types.KeyTypeRange},
		},
	}}
	for _, in := range specs {
		_, err := db.CreateTable(ctx, in)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("dynamolease: create %s: %w", *in.TableName, err)
		}
		w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay, o.MaxDelay = 50*time.Millisecond, 500*time.Millisecond
		})
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, 2*time.Minute); err != nil {
			return fmt.Errorf("dynamolease: wait for %s: %w", *in.TableName, err)
		}
	}
	return nil
}

// DeleteTable deletes a table and waits until it is gone (tests of a restore).
func DeleteTable(ctx context.Context, db *dynamodb.Client, table string) error {
	if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
		return fmt.Errorf("dynamolease: delete %s: %w", table, err)
	}
	w := dynamodb.NewTableNotExistsWaiter(db, func(o *dynamodb.TableNotExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 500*time.Millisecond
	})
	return w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &table}, 2*time.Minute)
}
