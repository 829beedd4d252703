// Command registry is the region registry service (see services/registry/README.md).
package main

import (
	"context"
	"log/slog"
	"net"
	"os"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/registry/internal/config"
	"github.com/idgen/idgen/services/registry/internal/server"
)

func main() {
	cfg, err := config.Parse(os.Args[1:], config.Getenv, os.Stderr)
	serve.Main("registry", err, cfg.LogLevel, func(ctx context.Context, log *slog.Logger) error { return run(ctx, cfg, log) })
}

func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	// The store is open and seeded before the port is: a load balancer checking that the port
	// accepts connections sees it only once the registry can serve.
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		srv.Close()
		return err
	}
	if cfg.HealthListen != "" {
		hl, err := net.Listen("tcp", cfg.HealthListen)
		if err != nil {
			l.Close()
			srv.Close()
			return err
		}
		// The health listener closes after the API's: its /healthz says draining through the
		// whole deregistration delay.
		hctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := srv.ServeHealth(hctx, hl); err != nil {
				log.Error("health listener stopped", "error", err.Error())
			}
		}()
		defer func() { stop(); <-done }()
	}
	return srv.Serve(ctx, l)
}
