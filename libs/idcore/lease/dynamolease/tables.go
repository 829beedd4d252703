package dynamolease

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// NewClient returns a DynamoDB client from the standard AWS configuration chain; a non-empty
// endpoint overrides the service URL. For a loopback endpoint (a local DynamoDB-compatible
// server) with no AWS_ACCESS_KEY_ID in the environment, it uses static placeholder credentials,
// which local servers accept, and never asks the EC2 instance metadata service; any other
// endpoint (https://dynamodb.eu-west-1.amazonaws.com) gets the standard chain, so a fleet host
// signs with its instance role. The region comes from the chain, else from an AWS endpoint's
// host name, else us-east-1.
func NewClient(ctx context.Context, endpoint string) (*dynamodb.Client, error) {
	opts := []func(*config.LoadOptions) error{config.WithRetryMaxAttempts(2)}
	if isLoopback(endpoint) && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		opts = append(opts,
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")),
			config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("dynamolease: aws config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = endpointRegion(endpoint)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

// isLoopback says whether an endpoint URL names this machine.
func isLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// endpointRegion reads the region of an AWS endpoint (dynamodb.REGION.amazonaws.com), else
// us-east-1.
func endpointRegion(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		parts := strings.Split(u.Hostname(), ".")
		if len(parts) >= 4 && parts[0] == "dynamodb" && parts[2] == "amazonaws" {
			return parts[1]
		}
	}
	return "us-east-1"
}

// CreateTables creates a lease table and the history table, when missing, with the key schemas of
// SPEC §3, and waits until they are active. For development and tests: in production Terraform
// creates the tables (with point-in-time recovery and the history TTL).
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
