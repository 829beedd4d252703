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
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		l.Close()
		return err
	}
	if cfg.HealthListen != "" {
		hl, err := net.Listen("tcp", cfg.HealthListen)
		if err != nil {
			l.Close()
			return err
		}
		go func() {
			if err := serve.Serve(ctx, hl, srv.HealthHandler(), nil, cfg.Drain, log.With("listener", "health"), nil); err != nil {
				log.Error("health listener stopped", "error", err.Error())
			}
		}()
	}
	return srv.Serve(ctx, l)
}
