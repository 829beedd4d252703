// Package config reads the public-ID service's settings from flags, each with an IDGEN_*
// environment fallback (flag wins), and validates them before anything listens.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"time"

	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/svc/storespec"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
)

// Config is the public-ID service's configuration. Defaults are in the flag definitions.
type Config struct {
	Listen              string // the internal API
	Region              string // its name labels every idgen_* series
	GatewayListen       string // the customer gateway; "" for none
	Store               string // sqlite:PATH, redis:HOST:PORT, redis://…, rediss://…, redis-cluster:…
	RedisCA             string
	RedisReplicas       int
	AcceptVolatileStore bool
	RedisCheckEvery     time.Duration // how often the Redis store re-reads its nodes' persistence
	MappingCacheBytes   uint64        // the in-process cache of resolved mappings; 0 for none
	Routes              string        // the gateway's route table (JSON file); "" for no gateway
	Resources           string        // comma-separated resource prefixes the internal API publishes
	DefaultResource     string
	RatePerClient       float64
	TrustedProxies      []netip.Prefix
	IDsSince            time.Time
	auth.Edge           // --callers, --tls-cert, --tls-key, --client-ca, --insecure-dev
	serve.Process       // --log-level, --deregistration-delay, --drain
	serve.Browsers      // --cors-origins
}

// Parse reads args (without the program name) and the environment (getenv); the usage names each
// flag's environment variable.
func Parse(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("public-id", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:7003", "internal API address")
	fs.StringVar(&c.GatewayListen, "gateway-listen", "127.0.0.1:7004", "customer gateway address; empty for none")
	fs.StringVar(&c.Region, "region", "us-east-1", "the region the service runs in, named in the region label of every idgen_* series it exports")
	fs.StringVar(&c.Store, "store", "sqlite:.idgen/public-ids.db", "sqlite:PATH; redis:HOST:PORT or a redis:// or rediss:// (TLS) URL; redis-cluster:HOST:PORT,… or redis-cluster:URL")
	fs.StringVar(&c.RedisCA, "redis-ca", "", "PEM file of the CA that issued the Redis servers' certificates (rediss://); default: system roots")
	fs.IntVar(&c.RedisReplicas, "redis-replicas", 0, "replicas each publish waits for with WAITAOF (Redis 7.2+)")
	fs.BoolVar(&c.AcceptVolatileStore, "accept-volatile-store", false, "run on a Redis that can lose acknowledged mappings (AOF off, or an fsync policy that cannot be confirmed), at start-up and when it turns so while the service runs, instead of refusing to start and then refusing publishes (store_volatile); logged and exported as idgen_publicid_store_volatile")
	fs.DurationVar(&c.RedisCheckEvery, "redis-durability-check", 10*time.Second, "how often the Redis store re-reads the persistence of every node that takes writes (INFO persistence, CONFIG GET appendfsync), as at start-up; a store found volatile refuses publishes (store_volatile) unless --accept-volatile-store")
	fs.Uint64Var(&c.MappingCacheBytes, "mapping-cache-bytes", 32<<20, "bytes of the in-process cache of resolved mappings the internal API and the gateway share (each entry: its strings plus 128 bytes); only mappings the store answered durably are kept, never misses; 0 for none")
	fs.StringVar(&c.Routes, "routes", "", "gateway route table (JSON)")
	fs.StringVar(&c.Resources, "resources", "ord", "resource prefixes the internal API publishes, comma-separated")
	fs.StringVar(&c.DefaultResource, "default-resource", "ord", "prefix when a publish names none")
	fs.Float64Var(&c.RatePerClient, "rate-per-client", 50, "gateway requests per second per client IP (IPv6: per /64); 0 for none")
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
	_, storeErr := c.StoreSpec()
	var replicasErr error
	if c.RedisReplicas < 0 {
		replicasErr = fmt.Errorf("--redis-replicas %d: want 0 or more", c.RedisReplicas)
	}
	var checkErr error
	if c.RedisCheckEvery <= 0 {
		checkErr = fmt.Errorf("--redis-durability-check %v: want a positive duration", c.RedisCheckEvery)
	}
	var errs []error
	for _, err := range []error{storeErr, replicasErr, checkErr, c.Edge.Check(), c.Process.Check()} {
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
	}
	return errors.Join(errs...)
}

// StoreSpec returns --store parsed: SQLite, Redis or Redis Cluster.
func (c Config) StoreSpec() (storespec.Spec, error) {
	return storespec.Parse("--store", c.Store, storespec.SQLite, storespec.Redis, storespec.RedisCluster)
}

// Getenv is os.Getenv, for main.
var Getenv = os.Getenv
