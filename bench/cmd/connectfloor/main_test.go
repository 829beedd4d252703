package main

import (
	"context"
	"log/slog"
	"net"
	"testing"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/svc/serve"
)

// The floor answers Generate with its constant ID in every protocol the benchmarks call it with
// (Connect JSON and proto, gRPC), over h2c on the services' server.
func TestGenerateEveryProtocol(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.Serve(ctx, l, handler(), nil, serve.Shutdown{}, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() { cancel(); <-done })
	url := "http://" + l.Addr().String()
	for name, opts := range map[string][]connect.ClientOption{
		"connect-json": {connect.WithProtoJSON()}, "connect-proto": nil, "grpc": {connect.WithGRPC()},
	} {
		c := idgenv1connect.NewIdServiceClient(idclient.H2CClient(), url, opts...)
		resp, err := c.Generate(context.Background(), connect.NewRequest(&idgenv1.GenerateRequest{}))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp.Msg.GetId() != id {
			t.Errorf("%s: id %d, want %d", name, resp.Msg.GetId(), id)
		}
	}
}
