// Command demo-orders is the orders upstream of the local stack's demo (package
// internal/demoorders): orders keyed by internal IDs from a generator, customers handed public
// IDs from the public-ID service, read by customers through the gateway.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/public-id/internal/demoorders"
)

type config struct {
	Listen, DB, Generator, PublicIDs string
	serve.Process                    // --log-level, --deregistration-delay, --drain
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("demo-orders", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:7005", "address")
	fs.StringVar(&c.DB, "db", ".idgen/demo-orders.db", "SQLite file of customers and orders")
	fs.StringVar(&c.Generator, "generator", "http://127.0.0.1:7001", "generator REST API the IDs come from")
	fs.StringVar(&c.PublicIDs, "public-ids", "http://127.0.0.1:7003", "public-ID service internal API")
	// A demo upstream of the local stack only: no load balancer to wait for.
	c.Process.RegisterFlags(fs, 5*time.Second, 0)
	if err := flagenv.Parse(fs, args, getenv); err != nil {
		return c, err
	}
	errs := []error{c.Process.Check()}
	if c.DB == "" {
		errs = append(errs, errors.New("--db is empty"))
	}
	for _, f := range []struct{ name, v string }{{"--generator", c.Generator}, {"--public-ids", c.PublicIDs}} {
		if u, err := url.Parse(f.v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s %q: want an http:// or https:// URL", f.name, f.v))
		}
	}
	return c, errors.Join(errs...)
}

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv, os.Stderr)
	serve.Main("demo-orders", err, cfg.LogLevel, func(ctx context.Context, log *slog.Logger) error { return run(ctx, cfg, log) })
}

func run(ctx context.Context, cfg config, log *slog.Logger) error {
	if err := os.MkdirAll(filepath.Dir(cfg.DB), 0o755); err != nil {
		return err
	}
	svc, err := demoorders.New(ctx, cfg.DB, demoorders.Options{Generator: cfg.Generator, PublicIDs: cfg.PublicIDs, Logger: log})
	if err != nil {
		return err
	}
	defer svc.Close()
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	return serve.Serve(ctx, l, svc, nil, cfg.Shutdown(nil), log)
}
