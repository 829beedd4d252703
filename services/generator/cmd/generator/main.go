// Command generator is the ID generator service (see services/generator/README.md).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/generator/internal/config"
	"github.com/idgen/idgen/services/generator/internal/server"
)

func main() {
	serve.SetGC()
	cfg, err := config.Parse(os.Args[1:], config.Getenv, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "generator:", err)
		os.Exit(2)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		fmt.Fprintln(os.Stderr, "generator: --log-level:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("service", "generator")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("generator stopped", "error", err.Error())
		os.Exit(1)
	}
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
