// Command registry is the region registry service (see services/registry/README.md).
package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/registry/internal/server"
)

func main() {
	cfg, err := server.ParseConfig(os.Args[1:], os.Getenv, os.Stderr)
	serve.Main("registry", err, cfg.LogLevel, func(ctx context.Context, log *slog.Logger) error { return run(ctx, cfg, log) })
}

func run(ctx context.Context, cfg server.Config, log *slog.Logger) error {
	if path, ok := strings.CutPrefix(cfg.Store, "sqlite:"); ok {
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		l.Close()
		return err
	}
	return srv.Serve(ctx, l)
}
