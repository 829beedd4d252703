// Command grpcfloor is the gRPC benchmark's second floor: grpc-go (google.golang.org/grpc, its
// own HTTP/2 server, what a team would pick instead of connect-go for gRPC) serving the same RPC,
// idgen.v1.IdService/Generate with libs/api's generated message types, answered with a constant
// ID. The service is described by hand (one unary method; libs/api has no grpc-go stubs), with
// grpc-go's default proto codec and no interceptors. It runs with the services' GC target
// (serve.Main), as cmd/bare and cmd/connectfloor do; it has no health endpoint: a client waits
// for its port to accept.
package main

import (
	"context"
	"flag"
	"log/slog"
	"net"

	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/svc/serve"
	"google.golang.org/grpc"
)

// id is the constant answer: an ID of the size the generator gives.
const id = 120460138153815040

// generate is the Generate method's handler as protoc-gen-go-grpc would write it.
func generate(_ any, ctx context.Context, dec func(any) error, intercept grpc.UnaryServerInterceptor) (any, error) {
	in := new(idgenv1.GenerateRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	h := func(context.Context, any) (any, error) { return &idgenv1.GenerateResponse{Id: id}, nil }
	if intercept == nil {
		return h(ctx, in)
	}
	return intercept(ctx, in, &grpc.UnaryServerInfo{FullMethod: "/idgen.v1.IdService/Generate"}, h)
}

var service = grpc.ServiceDesc{
	ServiceName: "idgen.v1.IdService",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Generate", Handler: generate}},
	Metadata:    "idgen/v1/ids.proto",
}

// newServer is grpc-go's server with the IdService's Generate, its defaults otherwise.
func newServer() *grpc.Server {
	s := grpc.NewServer()
	s.RegisterService(&service, struct{}{})
	return s
}

func main() {
	addr := flag.String("listen", "127.0.0.1:7100", "address")
	flag.Parse()
	serve.Main("grpcfloor", nil, "warn", func(ctx context.Context, log *slog.Logger) error {
		l, err := net.Listen("tcp", *addr)
		if err != nil {
			return err
		}
		s := newServer()
		go func() { <-ctx.Done(); s.GracefulStop() }()
		return s.Serve(l)
	})
}
