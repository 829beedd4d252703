package redismap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/idgen/idgen/libs/conn/tlsca"
	"github.com/redis/go-redis/v9"
)

// Target names a Redis deployment for Open.
type Target struct {
	// Addr is HOST:PORT, or a URL go-redis parses: redis://[user:password@]host:port[/db][?options]
	// or rediss://… for TLS (server verified against the system roots, or CAFile). For a cluster,
	// HOST:PORT,HOST:PORT,… or a URL with more nodes as ?addr=host:port&addr=….
	Addr string
	// Cluster selects Redis Cluster.
	Cluster bool
	// CAFile is a PEM bundle that verifies the server's certificate (rediss:// only), for servers
	// whose certificates a private CA issues.
	CAFile string
}

// Open connects to t and returns a store on it (New's checks included). Errors never repeat the
// URL, which may hold a password.
func Open(ctx context.Context, t Target, o Options) (*Store, error) {
	rdb, err := t.client()
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, rdb, o)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return s, nil
}

// NewClient is the go-redis client Open uses for t, for another use of a Redis named the same way
// (the gateway's shared rate limits): the URL parsed, CAFile's pool for TLS, and every call's
// context deadline bounding its socket reads and writes. Errors never repeat the URL.
func NewClient(t Target) (redis.UniversalClient, error) { return t.client() }

func (t Target) client() (redis.UniversalClient, error) {
	var copt *redis.ClusterOptions
	var opt *redis.Options
	var err error
	switch isURL := strings.Contains(t.Addr, "://"); {
	case t.Cluster && isURL:
		if copt, err = redis.ParseClusterURL(t.Addr); err != nil {
			return nil, urlError(err)
		}
	case t.Cluster:
		copt = &redis.ClusterOptions{Addrs: strings.Split(t.Addr, ",")}
	case isURL:
		if opt, err = redis.ParseURL(t.Addr); err != nil {
			return nil, urlError(err)
		}
	default:
		opt = &redis.Options{Addr: t.Addr}
	}
	var tlsConf *tls.Config // set by go-redis for rediss:// URLs
	if opt != nil {
		tlsConf = opt.TLSConfig
	} else {
		tlsConf = copt.TLSConfig
	}
	if t.CAFile != "" {
		if tlsConf == nil {
			return nil, errors.New("redismap: a CA file is for TLS connections: use a rediss:// URL")
		}
		pool, err := tlsca.Pool(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("redismap: CA file: %w", err)
		}
		tlsConf.RootCAs = pool
	}
	// A call's context deadline bounds its reads and writes on the socket too (go-redis ignores it
	// otherwise, and a frozen server holds a call for its read timeout and retries).
	if opt != nil {
		opt.ContextTimeoutEnabled = true
		return redis.NewClient(opt), nil
	}
	copt.ContextTimeoutEnabled = true
	return redis.NewClusterClient(copt), nil
}

// urlError drops the URL (and any password in it) from a parse error.
func urlError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("redismap: Redis URL: %w", err)
}
