// Command public-id is the public-ID service's internal API, for the company's services (see
// services/public-id/README.md). The customer gateway is cmd/public-id-gateway.
package main

import (
	"context"
	"log/slog"
	"net"
	"os"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/public-id/internal/config"
	"github.com/idgen/idgen/services/public-id/internal/server"
)

func main() {
	cfg, err := config.Parse(os.Args[1:], config.Getenv, os.Stderr)
	serve.Main("public-id", err, cfg.LogLevel, func(ctx context.Context, log *slog.Logger) error { return run(ctx, cfg, log) })
}

func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	api, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	return srv.Serve(ctx, api)
}
