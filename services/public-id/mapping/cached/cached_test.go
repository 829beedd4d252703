package cached_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/cached"
	"github.com/idgen/idgen/services/public-id/mapping/mappingtest"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

var ctx = context.Background()

func redisStore(t *testing.T, addr string, o redismap.Options) *redismap.Store {
	t.Helper()
	s, err := redismap.New(ctx, redis.NewClient(&redis.Options{Addr: addr}), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newCache(t *testing.T, inner *redismap.Store, maxBytes uint64, reg prometheus.Registerer) *cached.Store {
	t.Helper()
	c, err := cached.New(inner, cached.Options{MaxBytes: maxBytes, Durable: inner.ReadsDurable, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fixed returns a newPublic that proposes public.
func fixed(public string) func() (string, error) {
	return func() (string, error) { return public, nil }
}

func TestConformance(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	mappingtest.Run(t, func(t *testing.T) mapping.Store {
		return newCache(t, redisStore(t, r.Addr, redismap.Options{}), 1<<20, nil)
	}, func(t *testing.T) mapping.Store {
		down := testenv.StartRedis(t, t.TempDir())
		s := newCache(t, redisStore(t, down.Addr, redismap.Options{}), 1<<20, nil)
		down.Stop()
		return s
	})
}

// TestHit: a mapping resolved once is answered from the cache, in both directions, even once
// Redis no longer holds it; the metrics count the hits and misses.
func TestHit(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	inner := redisStore(t, r.Addr, redismap.Options{})
	reg := prometheus.NewRegistry()
	c := newCache(t, inner, 1<<20, reg)
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := inner.Publish(ctx, 7001, func() (string, error) { return maker.New("ord") })
	if err != nil {
		t.Fatal(err)
	}
	pub2, err := inner.Publish(ctx, 7002, func() (string, error) { return maker.New("ord") })
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Resolve(ctx, pub); err != nil || got != 7001 {
		t.Fatalf("Resolve = %d, %v", got, err)
	}
	if got, err := c.Lookup(ctx, 7002); err != nil || got != pub2 {
		t.Fatalf("Lookup = %q, %v", got, err)
	}
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { _ = admin.Close() })
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got, err := c.Resolve(ctx, pub); err != nil || got != 7001 {
			t.Fatalf("Resolve from the cache = %d, %v", got, err)
		}
		if got, err := c.Lookup(ctx, 7001); err != nil || got != pub {
			t.Fatalf("Lookup from the cache = %q, %v", got, err)
		}
		if got, err := c.Resolve(ctx, pub2); err != nil || got != 7002 {
			t.Fatalf("Resolve of a looked-up mapping from the cache = %d, %v", got, err)
		}
		if got, err := c.Publish(ctx, 7001, fixed("ord_never")); err != nil || got != pub {
			t.Fatalf("Publish of a cached internal ID = %q, %v", got, err)
		}
	}
	if _, err := c.Resolve(ctx, "ord_notcached"); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Resolve of an uncached ID: %v; want ErrNotFound", err)
	}
	for _, tc := range []struct {
		op, result string
		want       float64
	}{{"resolve", "hit", 6}, {"resolve", "miss", 2}, {"lookup", "hit", 3}, {"lookup", "miss", 1}, {"publish", "hit", 3}} {
		if got := counter(t, reg, tc.op, tc.result); got != tc.want {
			t.Errorf("idgen_publicid_cache_requests_total{op=%q,result=%q} = %v; want %v", tc.op, tc.result, got, tc.want)
		}
	}
	if got, want := c.HitRatio(), 9.0/12; got != want {
		t.Errorf("hit ratio %v; want %v", got, want)
	}
}

// counter reads the cache's request counter with those labels from reg.
func counter(t *testing.T, reg *prometheus.Registry, op, result string) float64 {
	t.Helper()
	return testenv.GatheredMetric(t, reg, "idgen_publicid_cache_requests_total", testenv.Labels{"op": op, "result": result})
}

// TestMissNotCached: an unknown public ID, and an internal ID without one, are asked of the store
// every time, so a mapping published after a miss (by another instance) is found.
func TestMissNotCached(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	inner := redisStore(t, r.Addr, redismap.Options{})
	other := redisStore(t, r.Addr, redismap.Options{}) // another instance of the service
	c := newCache(t, inner, 1<<20, nil)
	const pub = "ord_missthenpublished"
	if _, err := c.Resolve(ctx, pub); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Resolve before publishing: %v; want ErrNotFound", err)
	}
	if _, err := c.Lookup(ctx, 8001); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Lookup before publishing: %v; want ErrNotFound", err)
	}
	if got, err := other.Publish(ctx, 8001, fixed(pub)); err != nil || got != pub {
		t.Fatalf("Publish = %q, %v", got, err)
	}
	if got, err := c.Resolve(ctx, pub); err != nil || got != 8001 {
		t.Fatalf("Resolve after the publish = %d, %v; a miss was cached", got, err)
	}
	if got, err := c.Lookup(ctx, 8001); err != nil || got != pub {
		t.Fatalf("Lookup after the publish = %q, %v; a miss was cached", got, err)
	}
}

// TestEvictionByBytes: the cache holds at most MaxBytes of entries; the oldest ones, read once,
// are evicted and asked of the store again.
func TestEvictionByBytes(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	inner := redisStore(t, r.Addr, redismap.Options{})
	const maxBytes = 16 << 10
	c := newCache(t, inner, maxBytes, nil)
	const n = 2000 // 2000 mappings × 2 directions × ~150 bytes: far more than 16 KiB
	pubs := make([]string, n)
	for i := range n {
		pubs[i] = fmt.Sprintf("ord_evict%06d", i)
		if got, err := c.Publish(ctx, int64(9000+i), fixed(pubs[i])); err != nil || got != pubs[i] {
			t.Fatalf("Publish = %q, %v", got, err)
		}
	}
	cached.CleanUp(c)
	if b := c.Bytes(); b > maxBytes || b == 0 {
		t.Fatalf("the cache holds %d bytes; want some, at most %d", b, maxBytes)
	}
	// Empty Redis: what still resolves comes from the cache.
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { _ = admin.Close() })
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	held := 0
	for i := range n {
		if got, err := c.Resolve(ctx, pubs[i]); err == nil {
			if got != int64(9000+i) {
				t.Fatalf("Resolve(%s) = %d from the cache; want %d", pubs[i], got, 9000+i)
			}
			held++
		} else if !errors.Is(err, mapping.ErrNotFound) {
			t.Fatal(err)
		}
	}
	// Each mapping weighs two entries of at least 128 bytes each.
	if most := maxBytes / 256; held == 0 || held > most {
		t.Fatalf("%d of %d mappings answered from the cache; want between 1 and %d", held, n, most)
	}
}

// TestNotDurableNeverCached: on a Redis whose reads may answer writes not yet on disk
// (appendfsync everysec, accepted as volatile), nothing is cached: not what Resolve and Lookup
// read, nor what Publish acknowledged. Once the store is found durable again, answers are cached;
// once it turns volatile while the service runs, new answers are not.
func TestNotDurableNeverCached(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir(), "--appendfsync", "everysec")
	inner := redisStore(t, r.Addr, redismap.Options{AcceptVolatile: true, CheckEvery: 20 * time.Millisecond})
	if inner.ReadsDurable() {
		t.Fatal("ReadsDurable on appendfsync everysec")
	}
	c := newCache(t, inner, 1<<20, nil)
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { _ = admin.Close() })
	const pub, pub2 = "ord_notdurable", "ord_durablelater"
	if got, err := c.Publish(ctx, 9501, fixed(pub)); err != nil || got != pub {
		t.Fatalf("Publish = %q, %v", got, err)
	}
	if got, err := c.Resolve(ctx, pub); err != nil || got != 9501 {
		t.Fatalf("Resolve = %d, %v", got, err)
	}
	if got, err := c.Lookup(ctx, 9501); err != nil || got != pub {
		t.Fatalf("Lookup = %q, %v", got, err)
	}
	// Delete the mapping behind the cache's back (as a crash before the fsync would): a cache that
	// kept it would still answer.
	if err := admin.Del(ctx, "pid:p:"+pub, "pid:i:9501").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve(ctx, pub); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Resolve of a mapping read from a volatile store: %v; want ErrNotFound (it was cached)", err)
	}
	if _, err := c.Lookup(ctx, 9501); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Lookup of a mapping read from a volatile store: %v; want ErrNotFound (it was cached)", err)
	}
	if c.Bytes() != 0 {
		cached.CleanUp(c)
		if c.Bytes() != 0 {
			t.Fatalf("the cache holds %d bytes from a volatile store", c.Bytes())
		}
	}

	// Durable again: answers are cached.
	if err := admin.ConfigSet(ctx, "appendfsync", "always").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the store to be found durable", inner.ReadsDurable)
	if got, err := c.Publish(ctx, 9502, fixed(pub2)); err != nil || got != pub2 {
		t.Fatalf("Publish = %q, %v", got, err)
	}
	if err := admin.Del(ctx, "pid:p:"+pub2).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Resolve(ctx, pub2); err != nil || got != 9502 {
		t.Fatalf("Resolve on a durable store = %d, %v; want it from the cache", got, err)
	}

	// Volatile again while running: a new read is not cached.
	if err := admin.ConfigSet(ctx, "appendfsync", "everysec").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the store to be found volatile", func() bool { return !inner.ReadsDurable() })
	const pub3 = "ord_volatileagain"
	if _, err := inner.Publish(ctx, 9503, fixed(pub3)); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Resolve(ctx, pub3); err != nil || got != 9503 {
		t.Fatalf("Resolve = %d, %v", got, err)
	}
	if err := admin.Del(ctx, "pid:p:"+pub3).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve(ctx, pub3); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Resolve of a mapping read after the store turned volatile: %v; want ErrNotFound (it was cached)", err)
	}
	// What was cached while the store was durable is dropped once it is found volatile: writes
	// acknowledged since the reading before may never have been fsynced.
	if _, err := c.Resolve(ctx, pub2); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Resolve of a mapping cached before the store turned volatile: %v; want ErrNotFound (still cached)", err)
	}
}

// TestReplicasNotDurable: a master with a replica attached is not read durably (a failover may
// promote a replica that lacks what the master fsynced), so nothing is cached.
func TestReplicasNotDurable(t *testing.T) {
	master := testenv.StartRedis(t, t.TempDir())
	inner := redisStore(t, master.Addr, redismap.Options{CheckEvery: 20 * time.Millisecond})
	waitFor(t, "the lone master to be read durably", inner.ReadsDurable)
	testenv.StartRedis(t, t.TempDir(), "--replicaof", "127.0.0.1", fmt.Sprint(master.Port))
	waitFor(t, "a master with a replica to be read as not durable", func() bool { return !inner.ReadsDurable() })
	c := newCache(t, inner, 1<<20, nil)
	if _, err := c.Publish(ctx, 9601, fixed("ord_replicated")); err != nil {
		t.Fatal(err)
	}
	if err := redis.NewClient(&redis.Options{Addr: master.Addr}).Del(ctx, "pid:p:ord_replicated").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve(ctx, "ord_replicated"); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Resolve on a master with replicas: %v; want ErrNotFound (it was cached)", err)
	}
}

// TestDirections: public ID "" and internal ID 0 are different keys.
func TestDirections(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	c := newCache(t, redisStore(t, r.Addr, redismap.Options{}), 1<<20, nil)
	if _, err := c.Publish(ctx, 0, fixed("ord_zero")); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Resolve(ctx, ""); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf(`Resolve("") after Publish(0) = %d, %v; want ErrNotFound`, got, err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, 5*time.Second, func() (bool, string) { return cond(), "waiting for " + what })
}

func TestNeedsMaxBytes(t *testing.T) {
	if _, err := cached.New(nil, cached.Options{}); err == nil {
		t.Fatal("New without MaxBytes succeeded")
	}
}
