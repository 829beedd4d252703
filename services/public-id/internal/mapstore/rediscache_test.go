package mapstore_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/mapstore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

func flags(t *testing.T, args ...string) mapstore.Flags {
	t.Helper()
	var f mapstore.Flags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCacheRedis: with --cache-redis, a mapping published through the programs' store is
// written to the region's Redis, and resolves from it while the store's durability is what the
// store reports.
func TestCacheRedis(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	f := flags(t, "--store", "sqlite:"+filepath.Join(t.TempDir(), "m.db"), "--cache-redis", "redis://"+r.Addr,
		"--cache-redis-timeout", "1s", "--mapping-cache-bytes", "0")
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	o, err := mapstore.Open(ctx, f, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if v, why := o.Volatile(); v || o.Health() != nil {
		t.Fatalf("SQLite behind the Redis cache is volatile: %s", why)
	}
	pub, err := o.Mappings.Publish(ctx, 42, func() (string, error) { return "ord_cached", nil })
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rc.Close()
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		v, err := rc.Get(ctx, "c:p:"+pub).Result()
		return strings.HasPrefix(v, "42/"), "c:p:" + pub + " = " + v + ", " + errString(err)
	})
	if got, err := o.Mappings.Resolve(ctx, pub); err != nil || got != 42 {
		t.Fatalf("Resolve = %d, %v", got, err)
	}
	if hits := testenv.Gather(t, reg).Sum("idgen_publicid_redis_cache_requests_total", testenv.Labels{"op": "resolve", "result": "hit"}); hits != 1 {
		t.Fatalf("%v resolve hits of the Redis cache, want 1", hits)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestCacheRedisFlags: bad cache settings are refused before anything opens.
func TestCacheRedisFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cache-redis", "127.0.0.1:6379"}, "--cache-redis"},
		{[]string{"--cache-redis", "redis://127.0.0.1:6379", "--cache-redis-ca", "ca.pem"}, "--cache-redis-ca"},
		{[]string{"--cache-redis-ca", "ca.pem"}, "--cache-redis-ca"},
		{[]string{"--cache-redis", "redis://127.0.0.1:6379", "--cache-redis-timeout", "0s"}, "--cache-redis-timeout"},
		{[]string{"--cache-redis", "redis://127.0.0.1:6379", "--cache-redis-ttl", "1500ms"}, "--cache-redis-ttl"},
	} {
		if err := flags(t, c.args...).Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error about %s", c.args, err, c.want)
		}
	}
	if err := flags(t, "--cache-redis", "rediss://u:pw@cache.example:6379", "--cache-redis-ca", "ca.pem").Check(); err != nil {
		t.Errorf("a rediss:// URL with a CA: %v", err)
	}
}
