package main

import (
	"context"
	"errors"
	"net"
	"testing"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
)

// grpc-go answers Generate, by the descriptor written here, to the gRPC client the benchmarks
// use (connect-go's, over h2c), and refuses the IdService's other methods as unimplemented.
func TestGenerateOverGRPC(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer()
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	c := idgenv1connect.NewIdServiceClient(idclient.H2CClient(), "http://"+l.Addr().String(), connect.WithGRPC())
	resp, err := c.Generate(context.Background(), connect.NewRequest(&idgenv1.GenerateRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Msg.GetId() != id {
		t.Errorf("id %d, want %d", resp.Msg.GetId(), id)
	}
	_, err = c.GenerateBatch(context.Background(), connect.NewRequest(&idgenv1.GenerateBatchRequest{Count: 2}))
	if ce := new(connect.Error); !errors.As(err, &ce) || ce.Code() != connect.CodeUnimplemented {
		t.Errorf("GenerateBatch: %v, want unimplemented", err)
	}
}
