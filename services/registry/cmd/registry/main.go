// Command registry is the region registry service (see services/registry/README.md).
package main

import (
	"context"
	"fmt"
	"github.com/idgen/idgen/libs/svc/serve"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/idgen/idgen/services/registry/internal/server"
)

func main() {
	serve.SetGC()
	cfg, err := server.ParseConfig(os.Args[1:], os.Getenv, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(2)
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("service", "registry")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if path, ok := strings.CutPrefix(cfg.Store, "sqlite:"); ok {
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		log.Error("listen", "error", err.Error())
		os.Exit(1)
	}
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		log.Error("registry stopped", "error", err.Error())
		os.Exit(1)
	}
	if err := srv.Serve(ctx, l); err != nil {
		log.Error("registry stopped", "error", err.Error())
		os.Exit(1)
	}
}
