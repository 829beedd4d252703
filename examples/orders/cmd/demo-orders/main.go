// Command demo-orders runs the example order service (package orders): orders keyed by internal
// IDs taken from the generators through idclient, customers handed public IDs published through
// the public-ID service's Connect API. In the local stack it is the orders upstream of the demo,
// read by customers through the gateway.
//
// Its generators come from the topology's client config (--client-config: the JSON that
// `terraform output -json client_config` prints, or the file the local stack writes from the
// topology module's plan) and its region (--region): idclient.ReadClientConfig, then ConfigFor
// gives it its region's endpoints, then its peer's. There is no flag for a list of generators of
// its own: a caller's peer is the one the regions are laid out with.
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
	Listen, DB, ClientConfig, Region, PublicIDs string
	serve.Process                               // --log-level, --deregistration-delay, --drain
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("demo-orders", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:7005", "address")
	fs.StringVar(&c.DB, "db", ".idgen/demo-orders.db", "SQLite file of customers and orders")
	fs.StringVar(&c.ClientConfig, "client-config", ".idgen/client_config.json", "the topology's client config (terraform output -json client_config; make run writes this one): the generators of each region's callers")
	fs.StringVar(&c.Region, "region", "", "the region it runs in: its IDs come from this region's generators, then its peer's (required)")
	// No default: a copy of this command that is not told where the public-ID service is stops,
	// rather than publishing to whatever listens on a local port.
	fs.StringVar(&c.PublicIDs, "public-ids", "", "the public-ID service's internal API, http:// or https:// URL (required; make run's is http://127.0.0.1:7003)")
	// A demo upstream of the local stack only: no load balancer to wait for.
	c.Process.RegisterFlags(fs, 5*time.Second, 0)
	if err := flagenv.Parse(fs, args, getenv); err != nil {
		return c, err
	}
	errs := []error{c.Process.Check()}
	if c.DB == "" {
		errs = append(errs, errors.New("--db is empty"))
	}
	if c.ClientConfig == "" {
		errs = append(errs, errors.New("--client-config is empty: want the topology's client config file"))
	}
	if c.Region == "" {
		errs = append(errs, errors.New("--region is required: the region it runs in (its client config entry)"))
	}
	if c.PublicIDs == "" {
		errs = append(errs, errors.New("--public-ids is required: the public-ID service's internal API URL (make run's is http://127.0.0.1:7003)"))
	} else if u, err := url.Parse(c.PublicIDs); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--public-ids %q: want an http:// or https:// URL", c.PublicIDs))
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
	// The endpoints from the topology's client config only: the region's own, then its peer's.
	cc, err := idclient.ReadClientConfig(cfg.ClientConfig)
	if err != nil {
		return err
	}
	icfg, err := cc.ConfigFor(cfg.Region, idclient.Config{Logger: log})
	if err != nil {
		return err
	}
	ids, err := idclient.New(icfg)
	if err != nil {
		return err
	}
	log.Info("demo-orders: generators from the client config", "client_config", cfg.ClientConfig, "region", cfg.Region,
		"endpoints", strings.Join(icfg.Endpoints, ", "))
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
