package server

import (
	"context"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
)

// rpc implements idgen.v1.PublicIdService over Connect, gRPC and gRPC-Web.
type rpc struct{ s *Server }

func (r *rpc) Publish(ctx context.Context, req *connect.Request[idgenv1.PublishRequest]) (*connect.Response[idgenv1.PublishResponse], error) {
	pub, err := r.s.publish(ctx, req.Msg.GetInternalId(), req.Msg.GetResource())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&idgenv1.PublishResponse{PublicId: pub}), nil
}

func (r *rpc) Resolve(ctx context.Context, req *connect.Request[idgenv1.ResolveRequest]) (*connect.Response[idgenv1.ResolveResponse], error) {
	in, err := r.s.resolve(ctx, req.Msg.GetPublicId())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&idgenv1.ResolveResponse{InternalId: in}), nil
}
