// Command connectfloor is the connect-go floor of the generator's Connect benchmarks: the same
// RPC (idgen.v1.IdService/Generate, through the buf-generated handler of libs/api) answered
// with a constant ID by connect-go's stock handler (its default codecs, no options and no
// interceptors), served by the services' own http.Server settings and GC target (libs/svc/serve,
// as cmd/bare). What the generator spends over it on a call is the generator's; what this
// spends over cmd/bare is connect-go's own cost per call, for each protocol it speaks (Connect
// JSON and proto over HTTP/1.1 and h2c, gRPC over h2c). GET /healthz answers 200.
package main

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"net/http"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/svc/serve"
)

// id is the constant answer: an ID of the size the generator gives.
const id = 120460138153815040

type floor struct {
	idgenv1connect.UnimplementedIdServiceHandler
}

func (floor) Generate(context.Context, *connect.Request[idgenv1.GenerateRequest]) (*connect.Response[idgenv1.GenerateResponse], error) {
	return connect.NewResponse(&idgenv1.GenerateResponse{Id: id}), nil
}

// handler serves the IdService (Generate answered, the other methods unimplemented) and GET
// /healthz.
func handler() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(idgenv1connect.NewIdServiceHandler(floor{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return mux
}

func main() {
	addr := flag.String("listen", "127.0.0.1:7100", "address")
	flag.Parse()
	mux := handler()
	// serve.Main also sets the services' GC target, for a like-for-like floor.
	serve.Main("connectfloor", nil, "warn", func(ctx context.Context, log *slog.Logger) error {
		l, err := net.Listen("tcp", *addr)
		if err != nil {
			return err
		}
		return serve.Serve(ctx, l, mux, nil, serve.Shutdown{}, log)
	})
}
