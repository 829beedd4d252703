package dynamo

import (
	"context"
	"errors"
	"net"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Unavailable reports whether err means DynamoDB could not serve the call now, so that a retry
// (later, or elsewhere) may succeed: throttling, a server fault, a missing table (a deployment
// still under way, or a restore), a network error, a deadline or cancellation, or any failure
// that is not an answer from the service at all (connection refused or reset, the SDK's retry
// quota spent). An answer that rejects the request itself (a failed condition, a validation
// error, access denied) is not unavailability. A nil err is not unavailable.
//
// Each store maps what this reports to its own portable error, once, at its boundary.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var (
		rnf *types.ResourceNotFoundException
		thr *types.ProvisionedThroughputExceededException
		lim *types.RequestLimitExceeded
		ise *types.InternalServerError
		ne  net.Error
		ae  smithy.APIError
	)
	switch {
	case errors.As(err, &rnf), errors.As(err, &thr), errors.As(err, &lim), errors.As(err, &ise), errors.As(err, &ne),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return true
	case errors.As(err, &ae):
		return ae.ErrorFault() == smithy.FaultServer || throttleCodes[ae.ErrorCode()]
	}
	return true
}

// throttleCodes are the error codes with which DynamoDB refuses a call for the caller's rate.
var throttleCodes = map[string]bool{
	"ThrottlingException":                    true,
	"ProvisionedThroughputExceededException": true,
	"RequestLimitExceeded":                   true,
	"TransactionInProgressException":         true,
}
