// Command demo-orders runs the example order service (package orders): orders keyed by internal
// IDs taken from a generator through idclient, customers handed public IDs published through the
// public-ID service's Connect API. In the local stack it is the orders upstream of the demo, read
// by customers through the gateway.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idgen/idgen/examples/orders"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/prometheus/client_golang/prometheus"
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
	fs.StringVar(&c.Generator, "generator", "http://127.0.0.1:7001", "generator URLs the IDs come from, comma-separated: the local region's first, then its peer")
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
		for _, v := range strings.Split(f.v, ",") {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("%s %q: want an http:// or https:// URL", f.name, v))
			}
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
	ids, err := idclient.New(idclient.Config{Endpoints: strings.Split(cfg.Generator, ","), Logger: log})
	if err != nil {
		return err
	}
	defer ids.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(ids.Collectors()...)
	pub := idgenv1connect.NewPublicIdServiceClient(&http.Client{Timeout: 5 * time.Second}, cfg.PublicIDs)
	svc, err := orders.New(ctx, cfg.DB, orders.Options{IDs: ids, PublicIDs: pub, Metrics: reg, Logger: log})
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
