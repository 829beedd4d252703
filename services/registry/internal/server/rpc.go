package server

import (
	"context"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/idcore/region"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// rpc implements idgen.v1.RegistryService over Connect, gRPC and gRPC-Web.
type rpc struct{ s *Server }

func toProto(r region.Region) *idgenv1.Region {
	p := &idgenv1.Region{Name: r.Name, Number: int32(r.Number), Peer: r.Peer, Status: r.Status, AddedAt: timestamppb.New(r.AddedAt)}
	if r.RetiredAt != nil {
		p.RetiredAt = timestamppb.New(*r.RetiredAt)
	}
	return p
}

func (r *rpc) ListRegions(ctx context.Context, _ *connect.Request[idgenv1.ListRegionsRequest]) (*connect.Response[idgenv1.ListRegionsResponse], error) {
	rs, err := r.s.list(ctx)
	if err != nil {
		return nil, errs.Connect(err)
	}
	out := &idgenv1.ListRegionsResponse{}
	for _, x := range rs {
		out.Regions = append(out.Regions, toProto(x))
	}
	return connect.NewResponse(out), nil
}

func (r *rpc) GetRegion(ctx context.Context, req *connect.Request[idgenv1.GetRegionRequest]) (*connect.Response[idgenv1.GetRegionResponse], error) {
	x, err := r.s.get(ctx, req.Msg.GetName())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&idgenv1.GetRegionResponse{Region: toProto(x)}), nil
}

func (r *rpc) AddRegion(ctx context.Context, req *connect.Request[idgenv1.AddRegionRequest]) (*connect.Response[idgenv1.AddRegionResponse], error) {
	x, err := r.s.add(ctx, req.Msg.GetName(), req.Msg.GetPeer())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&idgenv1.AddRegionResponse{Region: toProto(x)}), nil
}

func (r *rpc) RetireRegion(ctx context.Context, req *connect.Request[idgenv1.RetireRegionRequest]) (*connect.Response[idgenv1.RetireRegionResponse], error) {
	x, err := r.s.retire(ctx, req.Msg.GetName())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&idgenv1.RetireRegionResponse{Region: toProto(x)}), nil
}

func (r *rpc) GetLayouts(ctx context.Context, _ *connect.Request[idgenv1.GetLayoutsRequest]) (*connect.Response[idgenv1.GetLayoutsResponse], error) {
	doc, err := r.s.layouts(ctx)
	if err != nil {
		return nil, errs.Connect(err)
	}
	out := &idgenv1.GetLayoutsResponse{Schedule: doc.Schedule}
	for _, p := range doc.Periods {
		lp := &idgenv1.LayoutPeriod{Layout: p.Layout, StartsAt: timestamppb.New(p.StartsAt)}
		for _, f := range p.Fields {
			lp.Fields = append(lp.Fields, &idgenv1.LayoutField{Name: f.Name, Bits: int32(f.Bits)})
		}
		out.Periods = append(out.Periods, lp)
	}
	return connect.NewResponse(out), nil
}
