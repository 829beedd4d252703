package server

import (
	"context"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/serve"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// rpc implements idgen.v1.IdService over Connect, gRPC and gRPC-Web.
type rpc struct{ s *Server }

// rpcOptions are every service's Connect options; batches of IDs compress, single IDs do not.
func rpcOptions(s *Server) []connect.HandlerOption {
	return serve.ConnectOptions(maxBody, s.metrics.RequestMetrics)
}

func toConnect(err error) error { return errs.Connect(err) }

func (r *rpc) Generate(ctx context.Context, _ *connect.Request[idgenv1.GenerateRequest]) (*connect.Response[idgenv1.GenerateResponse], error) {
	var buf [1]idcore.ID
	ids, err := r.s.issue(ctx, 1, buf[:0])
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&idgenv1.GenerateResponse{Id: int64(ids[0])}), nil
}

func (r *rpc) GenerateBatch(ctx context.Context, req *connect.Request[idgenv1.GenerateBatchRequest]) (*connect.Response[idgenv1.GenerateBatchResponse], error) {
	n := int(req.Msg.GetCount())
	if n < 1 || n > MaxBatch {
		return nil, toConnect(apierr.BadRequest("count is %d: want 1 to %d", n, MaxBatch))
	}
	ids, err := r.s.issue(ctx, n, make([]idcore.ID, 0, n))
	if err != nil {
		return nil, toConnect(err)
	}
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return connect.NewResponse(&idgenv1.GenerateBatchResponse{Ids: out}), nil
}

func (r *rpc) Decode(ctx context.Context, req *connect.Request[idgenv1.DecodeRequest]) (*connect.Response[idgenv1.DecodeResponse], error) {
	if res := auth.FromContext(ctx); res.Err != nil {
		return nil, toConnect(res.Err)
	}
	if req.Msg.GetId() < 0 {
		return nil, toConnect(apierr.BadRequest("id %d is negative", req.Msg.GetId()))
	}
	if req.Msg.GetId() == 0 {
		// proto3 cannot tell {} from {"id": "0"}; 0 is no ID a generator issues in practice.
		return nil, toConnect(apierr.BadRequest(`"id" is missing or 0: want the ID to decode`))
	}
	d, err := r.s.sched.Decode(idcore.ID(req.Msg.GetId()))
	if err != nil {
		return nil, toConnect(apierr.BadRequest("%v", err))
	}
	out := &idgenv1.DecodeResponse{Id: int64(d.ID), Layout: d.Layout, CreatedAt: timestamppb.New(d.Time),
		Machine: int32(d.Machine), Sequence: int32(d.Sequence)}
	if d.HasRegion {
		name, num := r.s.regionName(d.Region), int32(d.Region)
		out.Region, out.RegionNumber = &name, &num
	}
	return connect.NewResponse(out), nil
}
