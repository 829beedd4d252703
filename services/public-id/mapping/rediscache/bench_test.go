package rediscache_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping/rediscache"
	"github.com/redis/go-redis/v9"
)

// BenchmarkResolveHit compares a resolve the cache answers (GET, checksum, parse, its own
// deadline and counter) with a bare go-redis GET of the same key (the floor), on one loopback
// Redis, one caller at a time (Serial) and from 16 goroutines (Parallel; each call's latency).
// It reports each one's ns a call and their ratio. The Redis keeps no AOF, as a cache's need not.
//
//	go test -run '^$' -bench BenchmarkResolveHit -benchtime 20000x -count 5 ./services/public-id/mapping/rediscache
func BenchmarkResolveHit(b *testing.B) {
	r := testenv.StartRedis(b, b.TempDir(), "--appendonly", "no")
	inner := sqliteStore(b)
	c := open(b, url(r), inner, rediscache.Options{Timeout: time.Second})
	pub, err := inner.Publish(ctx, 1<<60, maker(b))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Resolve(ctx, pub); err != nil {
		b.Fatal(err)
	}
	rediscache.Wait(c)
	floor := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	b.Cleanup(func() { _ = floor.Close() })
	key := "c:p:" + pub
	if _, err := floor.Get(ctx, key).Result(); err != nil {
		b.Fatal(err)
	}
	resolve := func(b *testing.B) {
		if got, err := c.Resolve(ctx, pub); err != nil || got != 1<<60 {
			b.Fatal(got, err)
		}
	}
	get := func(b *testing.B) {
		if _, err := floor.Get(ctx, key).Result(); err != nil {
			b.Fatal(err)
		}
	}
	// Each iteration makes one call of each, alternately, and times them apart, so that the
	// load of a shared machine falls on both alike; ns/op is the pair's.
	b.Run("Serial", func(b *testing.B) {
		var cache, bare time.Duration
		for b.Loop() {
			t0 := time.Now()
			resolve(b)
			t1 := time.Now()
			get(b)
			cache, bare = cache+t1.Sub(t0), bare+time.Since(t1)
		}
		report(b, cache, bare)
	})
	b.Run("Parallel", func(b *testing.B) {
		var cache, bare atomic.Int64
		b.SetParallelism(8) // 16 goroutines on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				t0 := time.Now()
				resolve(b)
				t1 := time.Now()
				get(b)
				cache.Add(int64(t1.Sub(t0)))
				bare.Add(int64(time.Since(t1)))
			}
		})
		report(b, time.Duration(cache.Load()), time.Duration(bare.Load()))
	})
	b.StopTimer()
	if err := inner.Close(); err != nil { // every answer above came from Redis
		b.Fatal(err)
	}
	resolve(b)
}

func report(b *testing.B, cache, bare time.Duration) {
	b.ReportMetric(float64(cache.Nanoseconds())/float64(b.N), "cache-ns/call")
	b.ReportMetric(float64(bare.Nanoseconds())/float64(b.N), "floor-ns/call")
	b.ReportMetric(float64(cache)/float64(bare), "ratio")
}
