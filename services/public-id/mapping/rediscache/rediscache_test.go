package rediscache_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/deadline"
	"github.com/idgen/idgen/services/public-id/mapping/mappingtest"
	"github.com/idgen/idgen/services/public-id/mapping/rediscache"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

var ctx = context.Background()

func sqliteStore(t testing.TB) *sqlitemap.Store {
	t.Helper()
	s, err := sqlitemap.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// open puts a cache on the Redis at addr in front of inner; Close runs at the test's end.
func open(t testing.TB, url string, inner mapping.Store, o rediscache.Options) *rediscache.Store {
	t.Helper()
	c, err := rediscache.Open(ctx, rediscache.Target{URL: url}, inner, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func url(r *testenv.Redis) string { return "redis://" + r.Addr }

func client(t testing.TB, r *testenv.Redis) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func maker(t testing.TB) func() (string, error) {
	t.Helper()
	m, err := publicid.NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}
	return func() (string, error) { return m.New("ord") }
}

func reads(reg *prometheus.Registry, op, result string) float64 {
	return counter(reg, "idgen_publicid_redis_cache_requests_total", testenv.Labels{"op": op, "result": result})
}

func writes(reg *prometheus.Registry, result string) float64 {
	return counter(reg, "idgen_publicid_redis_cache_writes_total", testenv.Labels{"result": result})
}

// counter sums the series of the counter name that have labels: 0 before the first.
func counter(reg *prometheus.Registry, name string, labels testenv.Labels) float64 {
	m, err := testenv.GatherErr(reg)
	if err != nil {
		panic(err)
	}
	return m.Sum(name, labels)
}

// TestConformance: the whole contract holds with the cache in front of SQLite, on a real Redis
// every store of the suite shares (as the processes of a region do); and with both the store and
// the cache's Redis down, every call fails as the store's does.
func TestConformance(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	mappingtest.Run(t, func(t *testing.T) mapping.Store {
		return open(t, url(r), sqliteStore(t), rediscache.Options{Timeout: time.Second})
	}, func(t *testing.T) mapping.Store {
		down := testenv.StartRedis(t, t.TempDir())
		inner := sqliteStore(t)
		c := open(t, url(down), inner, rediscache.Options{})
		down.Stop()
		if err := inner.Close(); err != nil {
			t.Fatal(err)
		}
		return c
	})
}

// TestSharedAcrossProcesses: a mapping one process found is answered from Redis to another
// process of the region, in both directions, without its store (here closed); misses are never
// cached, and the metrics count it all.
func TestSharedAcrossProcesses(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	inner := sqliteStore(t)
	reg := prometheus.NewRegistry()
	a := open(t, url(r), inner, rediscache.Options{Timeout: time.Second, Registerer: reg})
	pub, err := inner.Publish(ctx, 7001, maker(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Resolve(ctx, pub); err != nil || got != 7001 {
		t.Fatalf("Resolve = %d, %v", got, err)
	}
	if _, err := a.Resolve(ctx, "ord_nosuchthing"); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Resolve of an unknown public ID: %v", err)
	}
	if _, err := a.Lookup(ctx, 7002); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("Lookup of an internal ID without one: %v", err)
	}
	rediscache.Wait(a)
	if n := writes(reg, "written"); n != 1 {
		t.Fatalf("%v write-backs, want 1 (the found mapping; misses are not cached)", n)
	}
	keys, err := client(t, r).Keys(ctx, "*").Result()
	if err != nil || len(keys) != 2 || !strings.HasPrefix(keys[0], "c:") || !strings.HasPrefix(keys[1], "c:") {
		t.Fatalf("keys in Redis: %q, %v; want the mapping's two c: keys alone", keys, err)
	}
	if ttl, err := client(t, r).TTL(ctx, "c:p:"+pub).Result(); err != nil || ttl <= 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("TTL of c:p:%s = %v, %v; want the default 24h", pub, ttl, err)
	}

	// Another process, whose store has nothing (closed, even): Redis answers.
	other := sqliteStore(t)
	b := open(t, url(r), other, rediscache.Options{Timeout: time.Second, Durability: other})
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Resolve(ctx, pub); err != nil || got != 7001 {
		t.Fatalf("another process's Resolve = %d, %v; want 7001 from Redis", got, err)
	}
	if got, err := b.Lookup(ctx, 7001); err != nil || got != pub {
		t.Fatalf("another process's Lookup = %q, %v; want %s from Redis", got, err, pub)
	}
	if _, err := b.Resolve(ctx, "ord_nosuchthing"); !errors.Is(err, mapping.ErrUnavailable) {
		t.Fatalf("a miss must go to the store below (closed): %v", err)
	}
	if _, err := b.Lookup(ctx, 0); !errors.Is(err, mapping.ErrUnavailable) {
		t.Fatalf("Lookup(0), the health check, must go to the store below (closed): %v", err)
	}
	if h, m := reads(reg, "resolve", "hit"), reads(reg, "resolve", "miss"); h != 0 || m != 2 {
		t.Fatalf("the first process's resolves: %v hits, %v misses; want 0 and 2", h, m)
	}

	// Publish writes both directions; a Publish of a known internal ID still asks the store.
	pub2, err := a.Publish(ctx, 7003, maker(t))
	if err != nil {
		t.Fatal(err)
	}
	rediscache.Wait(a)
	if got, err := b.Lookup(ctx, 7003); err != nil || got != pub2 {
		t.Fatalf("Lookup of a published mapping from another process = %q, %v", got, err)
	}
	if got, err := b.Resolve(ctx, pub2); err != nil || got != 7003 {
		t.Fatalf("Resolve of a published mapping from another process = %d, %v", got, err)
	}
	if _, err := b.Publish(ctx, 7003, maker(t)); !errors.Is(err, mapping.ErrUnavailable) {
		t.Fatalf("Publish must go to the store below (closed): %v", err)
	}
	// Tokens and secrets are the store's.
	if err := a.PutToken(ctx, "tok_1", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, err := inner.GetToken(ctx, "tok_1"); err != nil || string(v) != "v" {
		t.Fatalf("the token is not in the store below: %q, %v", v, err)
	}
	if _, err := b.GetToken(ctx, "tok_1"); !errors.Is(err, mapping.ErrUnavailable) {
		t.Fatalf("GetToken must go to the store below (closed): %v", err)
	}
	if _, err := b.Secret(ctx, "s", 32); !errors.Is(err, mapping.ErrUnavailable) {
		t.Fatalf("Secret must go to the store below (closed): %v", err)
	}
}

// TestCorruptValueIgnored: a value in a cache key that does not parse, or that belongs to
// another key, is never an answer: the store's answer is, and it overwrites the value.
func TestCorruptValueIgnored(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	rc := client(t, r)
	inner := sqliteStore(t)
	reg := prometheus.NewRegistry()
	c := open(t, url(r), inner, rediscache.Options{Timeout: time.Second, Registerer: reg})
	pub, err := c.Publish(ctx, 8001, maker(t))
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.Publish(ctx, 8002, maker(t))
	if err != nil {
		t.Fatal(err)
	}
	rediscache.Wait(c)
	good, err := rc.Get(ctx, "c:p:"+pub).Result()
	if err != nil || !strings.HasPrefix(good, "8001/") {
		t.Fatalf("c:p:%s = %q, %v", pub, good, err)
	}
	otherP, _ := rc.Get(ctx, "c:p:"+other).Result()
	otherI, _ := rc.Get(ctx, "c:i:8002").Result()
	n := 0.0
	for _, bad := range []string{"9999", "garbage", "", "8001", "9999/" + good[5:], otherP, "x/zzzzzzzz", good + "0"} {
		// Each direction in turn: a write-back after a corrupt read rewrites both.
		if err := rc.Set(ctx, "c:p:"+pub, bad, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := c.Resolve(ctx, pub); err != nil || got != 8001 {
			t.Fatalf("Resolve with %q cached = %d, %v; want the store's 8001", bad, got, err)
		}
		rediscache.Wait(c)
		if err := rc.Set(ctx, "c:i:8001", strings.Replace(bad, "8002", "8001", 1), 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := c.Lookup(ctx, 8001); err != nil || got != pub {
			t.Fatalf("Lookup with a corrupt value cached = %q, %v; want the store's %s", got, err, pub)
		}
		n++
		if got := reads(reg, "resolve", "corrupt"); got != n {
			t.Fatalf("%v corrupt resolves counted, want %v", got, n)
		}
		if got := reads(reg, "lookup", "corrupt"); got != n {
			t.Fatalf("%v corrupt lookups counted, want %v", got, n)
		}
		rediscache.Wait(c)
		if v, err := rc.Get(ctx, "c:p:"+pub).Result(); err != nil || v != good {
			t.Fatalf("after a corrupt value was read, c:p:%s = %q, %v; want it rewritten as %q", pub, v, err, good)
		}
	}
	// The other mapping's own values answer.
	if v, _ := rc.Get(ctx, "c:i:8002").Result(); v != otherI {
		t.Fatalf("c:i:8002 changed: %q", v)
	}
	hits := reads(reg, "lookup", "hit")
	if got, err := c.Lookup(ctx, 8002); err != nil || got != other || reads(reg, "lookup", "hit") != hits+1 {
		t.Fatalf("Lookup(8002) = %q, %v; want %s from Redis", got, err, other)
	}
}

// timed runs f and returns how long it took.
func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// TestRedisDown: a frozen or killed Redis makes a call cost at most the cache's timeout on top of
// the store's own time, and nothing once the cache pauses: resolves, lookups and publishes are
// the store's, mapped or cached alike; the cache answers again once Redis is back.
func TestRedisDown(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, down := range []string{"frozen", "killed"} {
		t.Run(down, func(t *testing.T) {
			r := testenv.StartRedis(t, t.TempDir())
			inner := sqliteStore(t)
			reg := prometheus.NewRegistry()
			c := open(t, url(r), inner, rediscache.Options{Timeout: timeout, Registerer: reg})
			fresh := maker(t)
			cachedPub, err := c.Publish(ctx, 9001, fresh)
			if err != nil {
				t.Fatal(err)
			}
			rediscache.Wait(c)
			if got, err := c.Resolve(ctx, cachedPub); err != nil || got != 9001 || reads(reg, "resolve", "hit") != 1 {
				t.Fatalf("Resolve before Redis is down = %d, %v; want a hit", got, err)
			}
			plain, err := inner.Publish(ctx, 9002, fresh)
			if err != nil {
				t.Fatal(err)
			}
			var storeTime time.Duration
			for range 3 {
				storeTime = max(storeTime, timed(func() { _, _ = inner.Resolve(ctx, plain) }))
			}
			if down == "frozen" {
				r.Freeze(t)
			} else {
				r.Kill()
			}
			// Generous for a busy machine; the cache's share is bounded by timeout.
			bound := timeout + storeTime + 150*time.Millisecond
			for _, call := range []struct {
				name string
				f    func() error
			}{
				{"Resolve of an uncached mapping", func() error {
					got, err := c.Resolve(ctx, plain)
					if err == nil && got != 9002 {
						err = fmt.Errorf("got %d", got)
					}
					return err
				}},
				{"Resolve of a cached mapping", func() error {
					got, err := c.Resolve(ctx, cachedPub)
					if err == nil && got != 9001 {
						err = fmt.Errorf("got %d", got)
					}
					return err
				}},
				{"Lookup", func() error {
					got, err := c.Lookup(ctx, 9002)
					if err == nil && got != plain {
						err = fmt.Errorf("got %q", got)
					}
					return err
				}},
				{"Resolve of an unknown public ID", func() error {
					if _, err := c.Resolve(ctx, "ord_nosuchthing"); !errors.Is(err, mapping.ErrNotFound) {
						return fmt.Errorf("%v, want ErrNotFound", err)
					}
					return nil
				}},
				{"Publish", func() error { _, err := c.Publish(ctx, 9003, fresh); return err }},
			} {
				// The first call after the pause asks Redis: at most the timeout more.
				rediscache.Unpause(c)
				var err error
				d := timed(func() { err = call.f() })
				if err != nil || d > bound {
					t.Errorf("%s with Redis %s: %v after %v; want the store's answer within %v", call.name, down, err, d, bound)
				}
				// Then Redis is not asked: the store's time alone.
				dp := timed(func() { err = call.f() })
				if err != nil || dp > storeTime+100*time.Millisecond {
					t.Errorf("%s with Redis %s, paused: %v after %v; want the store's answer at once", call.name, down, err, dp)
				}
				t.Logf("%s with Redis %s: %v, then %v paused (the store alone: %v)", call.name, down, d, dp, storeTime)
			}
			if reads(reg, "resolve", "error") == 0 || reads(reg, "resolve", "skipped") == 0 {
				t.Errorf("resolves: %v errors, %v skipped; want both counted", reads(reg, "resolve", "error"), reads(reg, "resolve", "skipped"))
			}
			// Write-backs given up on end within the timeout too.
			if d := timed(func() { rediscache.Wait(c) }); d > bound {
				t.Errorf("write-backs under way took %v to end with Redis %s", d, down)
			}
			if down == "frozen" {
				r.Thaw()
			} else {
				r.Restart(t)
			}
			// Back: after the pause the cache is read and written again (the killed Redis's AOF
			// kept what it held).
			rediscache.Unpause(c)
			testenv.Eventually(t, 10*time.Second, func() (bool, string) {
				hits := reads(reg, "lookup", "hit")
				got, err := c.Lookup(ctx, 9001)
				rediscache.Wait(c)
				return err == nil && got == cachedPub && reads(reg, "lookup", "hit") == hits+1,
					fmt.Sprintf("Lookup(9001) = %q, %v, not a hit", got, err)
			})
		})
	}
}

// TestCallerDeadline: a caller's deadline shorter than the cache's timeout bounds the read of a
// frozen Redis, and, being no fault of Redis, does not pause the cache.
func TestCallerDeadline(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	inner := sqliteStore(t)
	reg := prometheus.NewRegistry()
	c := open(t, url(r), inner, rediscache.Options{Timeout: time.Second, Registerer: reg})
	pub, err := inner.Publish(ctx, 9101, maker(t))
	if err != nil {
		t.Fatal(err)
	}
	r.Freeze(t)
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	var got int64
	if d := timed(func() { got, err = c.Resolve(cctx, pub) }); d > 400*time.Millisecond {
		t.Fatalf("Resolve with a 100ms deadline took %v", d)
	}
	if err == nil {
		t.Logf("the store answered within the caller's deadline: %d", got)
	} else if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, mapping.ErrUnavailable) {
		t.Fatalf("Resolve past the caller's deadline: %v", err)
	}
	r.Thaw()
	// The caller's deadline was no fault of Redis: the next call reads the cache again.
	if got, err := c.Resolve(ctx, pub); err != nil || got != 9101 || reads(reg, "resolve", "skipped") != 0 {
		t.Fatalf("Resolve after the caller's deadline = %d, %v, %v skipped; want Redis asked again", got, err, reads(reg, "resolve", "skipped"))
	}
}

// TestOnlyDurableAnswers: a store whose reads are not durable (Redis with AOF off, accepted
// volatile) is asked every time and nothing is cached; the cache reports the store's
// durability, not its own; a store that does not report one counts as not durable.
func TestOnlyDurableAnswers(t *testing.T) {
	cache := testenv.StartRedis(t, t.TempDir())
	volatileRedis := testenv.StartRedis(t, t.TempDir(), "--appendonly", "no")
	inner, err := redismap.New(ctx, redis.NewClient(&redis.Options{Addr: volatileRedis.Addr}), redismap.Options{AcceptVolatile: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c := open(t, url(cache), inner, rediscache.Options{Timeout: time.Second, Registerer: reg})
	if v, why := c.Volatile(); !v || why == "" || c.ReadsDurable() {
		t.Fatalf("Volatile = %v, %q; ReadsDurable = %v: want the volatile store's", v, why, c.ReadsDurable())
	}
	pub, err := c.Publish(ctx, 9201, maker(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Resolve(ctx, pub); err != nil || got != 9201 {
		t.Fatalf("Resolve = %d, %v", got, err)
	}
	if got, err := c.Lookup(ctx, 9201); err != nil || got != pub {
		t.Fatalf("Lookup = %q, %v", got, err)
	}
	rediscache.Wait(c)
	if n, err := client(t, cache).DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("%d keys cached from a store whose reads are not durable (%v)", n, err)
	}
	if n := reads(reg, "resolve", "skipped") + reads(reg, "lookup", "skipped"); n != 2 {
		t.Fatalf("%v reads skipped, want 2", n)
	}

	// deadline reports no durability; nil Options.Durability then means not durable.
	sq := sqliteStore(t)
	bounded, err := deadline.New(sq, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	d := open(t, url(cache), bounded, rediscache.Options{})
	if v, _ := d.Volatile(); !v || d.ReadsDurable() {
		t.Fatalf("a store that does not report its durability: Volatile %v, ReadsDurable %v; want volatile", v, d.ReadsDurable())
	}
	e := open(t, url(cache), bounded, rediscache.Options{Durability: sq})
	if v, _ := e.Volatile(); v || !e.ReadsDurable() {
		t.Fatalf("Options.Durability of SQLite: Volatile %v, ReadsDurable %v; want durable", v, e.ReadsDurable())
	}
}

// TestACL: a user granted ACL alone serves the cache; Open notes that it cannot read the
// eviction policy and goes on; the user reaches none of the mapping store's keys.
func TestACL(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	args := []any{"ACL", "SETUSER", "cache", "on", ">pw"}
	for _, rule := range strings.Fields(rediscache.ACL) {
		args = append(args, rule)
	}
	if err := client(t, r).Do(ctx, args...).Err(); err != nil {
		t.Fatal(err)
	}
	var log testenv.LogBuffer
	inner := sqliteStore(t)
	reg := prometheus.NewRegistry()
	c := open(t, "redis://cache:pw@"+r.Addr, inner, rediscache.Options{Timeout: time.Second, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if !strings.Contains(log.String(), "level=INFO") || !strings.Contains(log.String(), "NOPERM") || strings.Contains(log.String(), "level=WARN") {
		t.Fatalf("Open's log, CONFIG refused: %s", log.String())
	}
	pub, err := c.Publish(ctx, 9301, maker(t))
	if err != nil {
		t.Fatal(err)
	}
	rediscache.Wait(c)
	if got, err := c.Resolve(ctx, pub); err != nil || got != 9301 || reads(reg, "resolve", "hit") != 1 || writes(reg, "failed") != 0 {
		t.Fatalf("Resolve as the ACL's user = %d, %v (%v hits, %v failed writes)", got, err, reads(reg, "resolve", "hit"), writes(reg, "failed"))
	}
	user := redis.NewClient(&redis.Options{Addr: r.Addr, Username: "cache", Password: "pw"})
	defer user.Close()
	for _, cmd := range [][]any{{"GET", "pid:p:x"}, {"SET", "tok:x", "v"}, {"FLUSHALL"}, {"KEYS", "*"}, {"DEL", "c:p:" + pub}} {
		if err := user.Do(ctx, cmd...).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("%v as the cache's user: %v, want NOPERM", cmd, err)
		}
	}
}

// TestEvictionWarning: Open warns of a Redis that would not bound the cache (the default
// noeviction, no maxmemory) and of a volatile-ttl policy, and not of an LRU one with a maxmemory.
func TestEvictionWarning(t *testing.T) {
	for _, c := range []struct {
		args []string
		warn []string
	}{
		{nil, []string{"maxmemory-policy=noeviction", "maxmemory=0"}},
		{[]string{"--maxmemory", "64mb", "--maxmemory-policy", "volatile-ttl"}, []string{"maxmemory-policy=volatile-ttl"}},
		{[]string{"--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"}, nil},
		{[]string{"--maxmemory", "64mb", "--maxmemory-policy", "volatile-lfu"}, nil},
	} {
		r := testenv.StartRedis(t, t.TempDir(), c.args...)
		var log testenv.LogBuffer
		open(t, url(r), sqliteStore(t), rediscache.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		out := log.String()
		if len(c.warn) == 0 && out != "" {
			t.Errorf("Redis %v: Open logged %s", c.args, out)
		}
		for _, w := range c.warn {
			if !strings.Contains(out, "level=WARN") || !strings.Contains(out, w) {
				t.Errorf("Redis %v: Open's log lacks a warning with %s: %s", c.args, w, out)
			}
		}
	}
	// A Redis that does not answer is no error: the store answers meanwhile.
	var log testenv.LogBuffer
	inner := sqliteStore(t)
	c := open(t, fmt.Sprintf("redis://127.0.0.1:%d", testenv.FreePort(t)), inner, rediscache.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if !strings.Contains(log.String(), "does not answer") {
		t.Errorf("Open of a Redis that does not answer logged %s", log.String())
	}
	pub, err := c.Publish(ctx, 9401, maker(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Resolve(ctx, pub); err != nil || got != 9401 {
		t.Fatalf("Resolve with the cache's Redis down = %d, %v", got, err)
	}
}

// TestOpenErrors: bad settings are errors that never repeat the URL.
func TestOpenErrors(t *testing.T) {
	inner := sqliteStore(t)
	for _, c := range []struct {
		t    rediscache.Target
		o    rediscache.Options
		want string
	}{
		{rediscache.Target{URL: "127.0.0.1:6379"}, rediscache.Options{}, "redis:// or rediss://"},
		{rediscache.Target{URL: "redis://u:secret@host:6379/notadb"}, rediscache.Options{}, "Redis URL"},
		{rediscache.Target{URL: "redis://u:secret@127.0.0.1:1", CAFile: "ca.pem"}, rediscache.Options{}, "rediss://"},
		{rediscache.Target{URL: "rediss://u:secret@127.0.0.1:1", CAFile: filepath.Join(t.TempDir(), "none.pem")}, rediscache.Options{}, "CA file"},
		{rediscache.Target{URL: "redis://u:secret@127.0.0.1:1"}, rediscache.Options{TTL: 1500 * time.Millisecond}, "ttl"},
		{rediscache.Target{URL: "redis://u:secret@127.0.0.1:1"}, rediscache.Options{Timeout: -time.Second}, "timeout"},
	} {
		s, err := rediscache.Open(ctx, c.t, inner, c.o)
		if err == nil {
			s.Close()
			t.Errorf("Open(%+v, %+v) succeeded", c.t, c.o)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%+v, %+v): %v; want an error about %s, without the password", c.t, c.o, err, c.want)
		}
	}
}

// TestTLS: a rediss:// URL with the CA of the server's certificate.
func TestTLS(t *testing.T) {
	r := testenv.StartRedisTLS(t, t.TempDir())
	inner := sqliteStore(t)
	reg := prometheus.NewRegistry()
	c, err := rediscache.Open(ctx, rediscache.Target{URL: "rediss://" + r.TLSAddr, CAFile: r.CAFile}, inner, rediscache.Options{Timeout: time.Second, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pub, err := c.Publish(ctx, 9501, maker(t))
	if err != nil {
		t.Fatal(err)
	}
	rediscache.Wait(c)
	if got, err := c.Resolve(ctx, pub); err != nil || got != 9501 || reads(reg, "resolve", "hit") != 1 {
		t.Fatalf("Resolve over TLS = %d, %v, %v hits", got, err, reads(reg, "resolve", "hit"))
	}
}
