// Command public-id is the public-ID service: the internal API and the customer gateway (see
// services/public-id/README.md).
package main

import (
	"context"
	"fmt"
	"github.com/idgen/idgen/libs/svc/serve"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/idgen/idgen/services/public-id/internal/server"
)

func main() {
	serve.SetGC()
	cfg, err := server.ParseConfig(os.Args[1:], os.Getenv, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "public-id:", err)
		os.Exit(2)
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("service", "public-id")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("public-id stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg server.Config, log *slog.Logger) error {
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	api, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	var gw net.Listener
	if cfg.GatewayListen != "" && srv.Gateway() != nil {
		if gw, err = net.Listen("tcp", cfg.GatewayListen); err != nil {
			return err
		}
	}
	return srv.Serve(ctx, api, gw)
}
