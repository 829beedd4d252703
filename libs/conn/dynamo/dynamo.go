// Package dynamo builds the DynamoDB client that every DynamoDB store of the repository uses.
package dynamo

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// MaxAttempts is how many times the client sends one call (the first try and one retry): a
// store's caller has its own retries and deadlines, so the SDK retries little.
const MaxAttempts = 2

// NewClient returns a DynamoDB client from the standard AWS configuration chain; a non-empty
// endpoint overrides the service URL. For a loopback endpoint (a local DynamoDB-compatible
// server) with no AWS_ACCESS_KEY_ID in the environment, it uses static placeholder credentials,
// which local servers accept, and never asks the EC2 instance metadata service; any other
// endpoint (https://dynamodb.eu-west-1.amazonaws.com) gets the standard chain, so a fleet host
// signs with its instance role. The region comes from the chain, else from an AWS endpoint's
// host name, else us-east-1.
func NewClient(ctx context.Context, endpoint string) (*dynamodb.Client, error) {
	opts := []func(*config.LoadOptions) error{config.WithRetryMaxAttempts(MaxAttempts)}
	if isLoopback(endpoint) && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		opts = append(opts,
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")),
			config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("dynamo: aws config: %w", err)
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

// Tables returns a table maker for a local DynamoDB server (dynalite.Options.Tables,
// testenv.StartDynaliteWithTables): on the endpoint it is given, through NewClient, it calls
// create for each table in order, and stops at the first error. A store driver passes its own
// CreateTable.
func Tables(create func(ctx context.Context, db *dynamodb.Client, table string) error, tables ...string) func(ctx context.Context, endpoint string) error {
	return func(ctx context.Context, endpoint string) error {
		db, err := NewClient(ctx, endpoint)
		if err != nil {
			return err
		}
		for _, t := range tables {
			if err := create(ctx, db, t); err != nil {
				return err
			}
		}
		return nil
	}
}
