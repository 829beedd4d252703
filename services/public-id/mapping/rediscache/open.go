package rediscache

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/conn/tlsca"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/redis/go-redis/v9"
)

// Target names the cache's Redis for Open.
type Target struct {
	// URL is redis://[user:password@]host:port[/db][?options] or rediss://… for TLS (the server
	// verified against the system roots, or CAFile), as go-redis parses it.
	URL string
	// CAFile is a PEM bundle that verifies the server's certificate (rediss:// only).
	CAFile string
}

// checkTimeout bounds Open's reading of the server's eviction settings.
const checkTimeout = 2 * time.Second

// Open connects to t and returns a cache on it in front of inner (see New), then reads the
// server's eviction settings and logs a warning when they do not bound the cache. A Redis that
// does not answer is no error (every call then goes to the store until it does); a bad URL or
// CA file is. Errors never repeat the URL, which may hold a password. On an error inner is left
// open.
func Open(ctx context.Context, t Target, inner mapping.Store, o Options) (*Store, error) {
	rdb, err := t.client()
	if err != nil {
		return nil, err
	}
	s, err := New(inner, rdb, o)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	s.checkEviction(cctx)
	return s, nil
}

// client is a go-redis client on t whose calls end at their context's deadline (socket reads
// and writes included) and are never retried: a failed call goes to the store.
func (t Target) client() (*redis.Client, error) {
	if !strings.HasPrefix(t.URL, "redis://") && !strings.HasPrefix(t.URL, "rediss://") {
		return nil, errors.New("rediscache: the cache's Redis is a redis:// or rediss:// (TLS) URL")
	}
	opt, err := redis.ParseURL(t.URL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("rediscache: Redis URL: %w", err)
	}
	if t.CAFile != "" {
		if opt.TLSConfig == nil {
			return nil, errors.New("rediscache: a CA file is for TLS connections: use a rediss:// URL")
		}
		pool, err := tlsca.Pool(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("rediscache: CA file: %w", err)
		}
		opt.TLSConfig.RootCAs = pool
	}
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1
	opt.DialerRetries = 1
	return redis.NewClient(opt), nil
}

// Eviction policies that bound the cache: every cache key has a TTL, so volatile-* evicts them
// too (and spares the mapping store's keys, which have none, where one Redis serves both).
var bounding = map[string]bool{"allkeys-lru": true, "allkeys-lfu": true, "volatile-lru": true, "volatile-lfu": true}

// checkEviction logs a warning when the server's settings, where CONFIG GET may read them, let
// the cache grow without bound or evict by anything but use.
func (s *Store) checkEviction(ctx context.Context) {
	conf, err := s.rdb.ConfigGet(ctx, "maxmemory*").Result()
	var refused redis.Error // the server answered with an error: NOPERM, CONFIG renamed away
	switch {
	case errors.As(err, &refused):
		s.log.Info("the Redis cache's eviction settings cannot be read (CONFIG GET refused); it must run with maxmemory set and maxmemory-policy allkeys-lru or allkeys-lfu (volatile-lru or volatile-lfu when it holds the mapping store too)",
			"error", err.Error())
		return
	case err != nil:
		s.log.Warn("the Redis cache does not answer; every call goes to the mapping store until it does", "error", err.Error())
		return
	}
	policy, limit := conf["maxmemory-policy"], conf["maxmemory"]
	if !bounding[policy] {
		s.log.Warn("the Redis cache's maxmemory-policy is not an LRU or LFU policy: set allkeys-lru or allkeys-lfu (volatile-lru or volatile-lfu when it holds the mapping store too), or a full Redis refuses the cache's writes (noeviction) or evicts at random",
			"maxmemory-policy", policy)
	}
	if limit == "0" {
		s.log.Warn("the Redis cache has no maxmemory: it grows with the mappings asked for within the TTL and evicts nothing; set maxmemory",
			"maxmemory", limit)
	}
}
