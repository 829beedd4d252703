package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/idgen/idgen/libs/conn/dynamo"
)

func TestUnavailable(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"throughput", &types.ProvisionedThroughputExceededException{}, true},
		{"request limit", &types.RequestLimitExceeded{}, true},
		{"table missing", &types.ResourceNotFoundException{}, true},
		{"internal server error", &types.InternalServerError{}, true},
		{"throttling code", &smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultClient}, true},
		{"server fault", &smithy.GenericAPIError{Code: "ServiceUnavailable", Fault: smithy.FaultServer}, true},
		{"deadline", fmt.Errorf("operation error: %w", context.DeadlineExceeded), true},
		{"network", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"not an answer", errors.New("retry quota exceeded"), true},
		{"condition failed", &types.ConditionalCheckFailedException{}, false},
		{"validation", &smithy.GenericAPIError{Code: "ValidationException", Fault: smithy.FaultClient}, false},
		{"access denied", &smithy.GenericAPIError{Code: "AccessDeniedException", Fault: smithy.FaultClient}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := dynamo.Unavailable(tt.err); got != tt.want {
				t.Errorf("Unavailable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestUnavailableNoServer calls a port where nothing listens: the SDK's error is unavailability.
func TestUnavailableNoServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := dynamo.NewClient(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "v"}}})
	if err == nil || !dynamo.Unavailable(err) {
		t.Fatalf("GetItem with no server: %v; want an error that Unavailable reports", err)
	}
}
