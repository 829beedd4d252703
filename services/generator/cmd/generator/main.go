// Command generator is the ID generator service (see services/generator/README.md).
package main

import (
	"context"
	"log/slog"
	"net"
	"os"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/generator/internal/config"
	"github.com/idgen/idgen/services/generator/internal/server"
)

func main() {
	cfg, err := config.Parse(os.Args[1:], config.Getenv, os.Stderr)
	serve.Main("generator", err, cfg.LogLevel, func(ctx context.Context, log *slog.Logger) error { return run(ctx, cfg, log) })
}

func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	listen := func() (net.Listener, error) { return l, nil }
	var hl net.Listener
	if cfg.HealthListen != "" {
		// The API address is listened on again once the generator is ready (Server.Serve): this
		// first listen only makes a port in use fail the start before a number is claimed.
		l.Close()
		listen = func() (net.Listener, error) { return net.Listen("tcp", cfg.Listen) }
		if hl, err = net.Listen("tcp", cfg.HealthListen); err != nil {
			return err
		}
	}
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		if hl != nil {
			hl.Close()
		}
		l.Close()
		return err
	}
	return srv.Serve(ctx, listen, hl)
}
