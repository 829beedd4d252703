package serve

import (
	"context"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
)

// statusServiceUnknown is grpc.health.v1's SERVICE_UNKNOWN, which only Watch sends.
const statusServiceUnknown grpchealth.Status = 3

// HealthChecker is a grpchealth.StaticChecker that follows the gRPC health protocol for a
// service it does not know: Check answers NOT_FOUND, and Watch sends SERVICE_UNKNOWN and keeps
// the stream open (the service may be registered later), where the static checker ends it.
type HealthChecker struct{ *grpchealth.StaticChecker }

// NewHealthChecker returns a checker that knows the given services (and "", the server).
func NewHealthChecker(services ...string) HealthChecker {
	return HealthChecker{grpchealth.NewStaticChecker(services...)}
}

// Check implements grpchealth.Checker.
func (h HealthChecker) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	resp, err := h.StaticChecker.Check(ctx, req)
	if connect.CodeOf(err) == connect.CodeNotFound {
		if info, ok := connect.CallInfoForHandlerContext(ctx); ok && strings.HasSuffix(info.Spec().Procedure, "/Watch") {
			return &grpchealth.CheckResponse{Status: statusServiceUnknown}, nil
		}
	}
	return resp, err
}

// Watch implements grpchealth.Watcher: a service the checker does not know is watched too, so
// its stream stays open (with SERVICE_UNKNOWN, from Check) until the client ends it.
func (h HealthChecker) Watch(ctx context.Context, req *grpchealth.CheckRequest, onChange func()) (func(), error) {
	stop, err := h.StaticChecker.Watch(ctx, req, onChange)
	if connect.CodeOf(err) == connect.CodeNotFound {
		return func() {}, nil
	}
	return stop, err
}
