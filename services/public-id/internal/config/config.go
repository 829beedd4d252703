// Package config reads the settings of the public-ID programs from flags, each with an IDGEN_*
// environment fallback (flag wins), and validates them before anything listens: Parse the
// internal API's (cmd/public-id), ParseGateway the customer gateway's (cmd/public-id-gateway).
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/svc/storespec"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/internal/mapstore"
)

// Config is the internal API's configuration. Defaults are in the flag definitions.
type Config struct {
	Listen          string // the internal API
	Region          string // its name labels every idgen_* series
	Resources       string // comma-separated resource prefixes the internal API publishes
	DefaultResource string
	mapstore.Flags  // --store, --redis-ca, --redis-replicas, --accept-volatile-store, --redis-durability-check, --mapping-cache-bytes, --cache-redis…
	auth.Edge       // --callers, --tls-cert, --tls-key, --client-ca, --insecure-dev
	serve.Process   // --log-level, --deregistration-delay, --drain
	serve.Browsers  // --cors-origins
}

// Parse reads the internal API's args (without the program name) and the environment (getenv);
// the usage names each flag's environment variable.
func Parse(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("public-id", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:7003", "internal API address")
	fs.StringVar(&c.Region, "region", "us-east-1", "the region the service runs in, named in the region label of every idgen_* series it exports")
	c.Flags.Register(fs)
	fs.StringVar(&c.Resources, "resources", "ord", "resource prefixes the internal API publishes, comma-separated")
	fs.StringVar(&c.DefaultResource, "default-resource", "ord", "prefix when a publish names none")
	c.Edge.RegisterFlags(fs, "callers file of the internal API", "plaintext internal API with one default caller")
	c.Process.RegisterFlags(fs, 5*time.Second, serve.DefaultDeregistrationDelay)
	c.Browsers.RegisterFlags(fs)
	if err := flagenv.Parse(fs, args, getenv); err != nil {
		return c, err
	}
	c.Process.DevDefaults(fs, getenv, c.InsecureDev)
	return c, c.Validate()
}

// Validate checks the combination of settings.
func (c Config) Validate() error {
	var errs []error
	for _, err := range []error{c.Flags.Check(), c.Edge.Check(), c.Process.Check()} {
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
	}
	return errors.Join(errs...)
}

// GatewayConfig is the customer gateway's configuration. Defaults are in the flag definitions.
type GatewayConfig struct {
	Listen           string // customers, through the edge load balancer that terminates TLS
	MetricsListen    string // /metrics and /healthz for the operator; "" for none
	Region           string
	Routes           string // the route table (JSON file)
	RatePerClient    float64
	RateRedis        string        // the Redis of the region's shared rate limits; "" for in-process
	RateRedisCA      string        // the CA of its certificate (rediss://); "" for the system roots
	RateRedisTimeout time.Duration // the bound of every check in RateRedis
	TrustedProxies   []netip.Prefix
	IDsSince         time.Time
	APIKeyHeader     string   // limit by this header's key instead of the client's address; "" for none
	RequestIDHeader  string   // the header a trusted proxy sets the request ID in; "" for none (the gateway makes every one)
	CORSOrigins      []string // origins whose pages may call the customer routes
	CompressMin      int      // the smallest body sent gzip; negative for none
	CacheControl     string   // a success's Cache-Control when neither route nor upstream gives one
	MemoryLimit      int64    // the process's Go memory limit; 0: derived from the body budget; negative: none
	mapstore.Flags            // --store, --redis-ca, --redis-replicas, --accept-volatile-store, --redis-durability-check, --mapping-cache-bytes, --cache-redis…
	serve.Process             // --log-level, --deregistration-delay, --drain
}

// ParseGateway reads the gateway's args (without the program name) and the environment
// (getenv); the usage names each flag's environment variable.
func ParseGateway(args []string, getenv func(string) string, stderr io.Writer) (GatewayConfig, error) {
	var c GatewayConfig
	fs := flag.NewFlagSet("public-id-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:7004", "customer address (plaintext HTTP: the edge load balancer terminates TLS)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", "127.0.0.1:7006", "address of /metrics and /healthz for the operator, never the customers' listener; empty for none")
	fs.StringVar(&c.Region, "region", "us-east-1", "the region the gateway runs in, named in the region label of every idgen_* series it exports")
	fs.StringVar(&c.Routes, "routes", "", "route table (JSON); required")
	c.Flags.Register(fs)
	fs.Float64Var(&c.RatePerClient, "rate-per-client", 50, "requests per second per client IP (IPv6: per /64); 0 for none")
	fs.StringVar(&c.RateRedis, "rate-redis", "", "the Redis (redis:HOST:PORT, or a redis:// or rediss:// (TLS) URL) that keeps the per-client rates (--rate-per-client and the routes' rate_per_client) for every gateway that names it, so a region's gateways allow a client the rate once, not once each; keys rate:rl:*; a check that fails or outlasts --rate-redis-timeout is made by the gateway's own limiter instead, at the same rate; empty: in-process")
	fs.StringVar(&c.RateRedisCA, "rate-redis-ca", "", "PEM file of the CA that issued the --rate-redis server's certificate (rediss://); default: system roots")
	fs.DurationVar(&c.RateRedisTimeout, "rate-redis-timeout", 50*time.Millisecond, "the bound of every rate check in --rate-redis; past it (or on an error) the request is checked by the gateway's own limiter and counted in idgen_gateway_rate_store_errors_total")
	fs.Func("trusted-proxies", "comma-separated addresses and CIDR ranges of the proxies in front of the gateway whose X-Forwarded-For names the client; default none", func(v string) error {
		var err error
		c.TrustedProxies, err = gateway.ParseTrustedProxies(v)
		return err
	})
	fs.Func("ids-since", "date (2006-01-02) from which a number in a plain response field is taken for an internal ID and refused; default 30 days after the epoch", func(v string) error {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return fmt.Errorf("want a date such as 2026-02-01")
		}
		c.IDsSince = t
		return nil
	})
	fs.StringVar(&c.APIKeyHeader, "api-key-header", "", "request header holding a customer's API key (X-Api-Key): requests that carry one through a --trusted-proxies peer are rate limited per key instead of per client address; empty for none")
	fs.StringVar(&c.RequestIDHeader, "request-id-header", "X-Request-Id", "the header in which a proxy of --trusted-proxies sets the request ID, which the gateway then keeps (the proxy must overwrite a customer's); empty: the gateway makes every request ID (behind a load balancer such as an AWS ALB, which passes a customer's X-Request-Id on)")
	fs.Func("cors-origins", "comma-separated exact origins (https://app.example.com) whose pages may call the customer routes; default none", func(v string) error {
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				c.CORSOrigins = append(c.CORSOrigins, o)
			}
		}
		return nil
	})
	fs.IntVar(&c.CompressMin, "compress-min-size", 1024, "smallest rebuilt body, in bytes, sent gzip to a customer who accepts it; negative for none")
	fs.StringVar(&c.CacheControl, "cache-control", "private, no-cache", "Cache-Control of a 200 whose route and upstream give none (redirects and 204s get no-store)")
	fs.Int64Var(&c.MemoryLimit, "memory-limit", 0, "the process's Go memory limit in bytes (GOMEMLIMIT wins when set); 0: what the gateway holds, read every second (the body budget, the rewrite slots, its rate tables and mapping cache as full as they are, an allowance and headroom: 46 MiB when they are empty); negative: none")
	c.Process.RegisterFlags(fs, 5*time.Second, serve.DefaultDeregistrationDelay)
	if err := flagenv.Parse(fs, args, getenv); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the combination of settings.
func (c GatewayConfig) Validate() error {
	var errs []error
	if c.Routes == "" {
		errs = append(errs, errors.New("config: --routes: the gateway serves the routes of a route table; name its file"))
	}
	for _, err := range []error{c.Flags.Check(), c.Process.Check()} {
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
	}
	if c.RateRedis != "" {
		if _, err := c.RateRedisSpec(); err != nil {
			errs = append(errs, fmt.Errorf("config: %w", err))
		} else if c.RateRedisCA != "" && !strings.HasPrefix(c.RateRedis, "rediss://") {
			errs = append(errs, errors.New("config: --rate-redis-ca is for a TLS connection: name the server with a rediss:// URL"))
		}
	} else if c.RateRedisCA != "" {
		errs = append(errs, errors.New("config: --rate-redis-ca is the CA of the --rate-redis server: name the server too"))
	}
	if c.RateRedisTimeout <= 0 {
		errs = append(errs, fmt.Errorf("config: --rate-redis-timeout %v: want a positive duration", c.RateRedisTimeout))
	}
	return errors.Join(errs...)
}

// RateRedisSpec returns --rate-redis parsed: a Redis by address or URL.
func (c GatewayConfig) RateRedisSpec() (storespec.Spec, error) {
	return storespec.Parse("--rate-redis", c.RateRedis, storespec.Redis)
}

// Getenv is os.Getenv, for main.
var Getenv = os.Getenv
