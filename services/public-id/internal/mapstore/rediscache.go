package mapstore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/rediscache"
	"github.com/prometheus/client_golang/prometheus"
)

// CacheFlags are the settings of the regional Redis cache of resolved mappings
// (mapping/rediscache), between the store (behind its deadline) and the in-process cache.
type CacheFlags struct {
	URL     string // redis://… or rediss://…; "" for none
	CA      string
	Timeout time.Duration // the bound of every call to the cache's Redis
	TTL     time.Duration
}

func (c *CacheFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "cache-redis", "", "redis:// or rediss:// (TLS) URL of the region's Redis cache of resolved mappings, shared by every process of the region, in front of the store; empty for none")
	fs.StringVar(&c.CA, "cache-redis-ca", "", "PEM file of the CA that issued the cache Redis's certificate (rediss://); default: system roots")
	fs.DurationVar(&c.Timeout, "cache-redis-timeout", rediscache.DefaultTimeout, "the bound of every call to the cache's Redis: past it (or on an error) the call goes to the store, and Redis is not asked for a second")
	fs.DurationVar(&c.TTL, "cache-redis-ttl", rediscache.DefaultTTL, "life of a mapping in the cache's Redis (whole seconds): mappings never change, so it only bounds the memory of those nobody asks for")
}

func (c CacheFlags) check() error {
	switch {
	case c.URL != "" && !strings.HasPrefix(c.URL, "redis://") && !strings.HasPrefix(c.URL, "rediss://"):
		return errors.New("--cache-redis: want a redis:// or rediss:// URL")
	case c.CA != "" && !strings.HasPrefix(c.URL, "rediss://"):
		return errors.New("--cache-redis-ca: a CA file is for a rediss:// --cache-redis")
	case c.Timeout <= 0:
		return fmt.Errorf("--cache-redis-timeout %v: want a positive duration", c.Timeout)
	case c.TTL < time.Second || c.TTL%time.Second != 0:
		return fmt.Errorf("--cache-redis-ttl %v: want whole seconds, at least one", c.TTL)
	}
	return nil
}

// wrap puts the Redis cache in front of inner when --cache-redis names one; durability is the
// store's own (inner, behind its deadline, does not report it).
func (c CacheFlags) wrap(ctx context.Context, inner mapping.Store, durability mapping.Durability, log *slog.Logger, reg prometheus.Registerer) (mapping.Store, error) {
	if c.URL == "" {
		return inner, nil
	}
	return rediscache.Open(ctx, rediscache.Target{URL: c.URL, CAFile: c.CA}, inner,
		rediscache.Options{Timeout: c.Timeout, TTL: c.TTL, Durability: durability, Registerer: reg, Logger: log})
}
