package rediscache_test

import (
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping/rediscache"
	"github.com/redis/go-redis/v9"
)

// BenchmarkResolveHit compares a resolve the cache answers (GET, checksum, parse, its own
// deadline and counter) with a bare go-redis GET of the same key (the floor), on one loopback
// Redis, one caller at a time (Serial) and from 16 goroutines (Parallel). The Redis keeps no
// AOF, as a cache's need not.
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
	for _, m := range []struct {
		name string
		f    func(*testing.B)
	}{{"cache", resolve}, {"floor", get}} {
		b.Run("Serial/"+m.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.f(b)
			}
		})
		b.Run("Parallel/"+m.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m.f(b)
				}
			})
		})
	}
	b.StopTimer()
	if err := inner.Close(); err != nil { // every answer above came from Redis
		b.Fatal(err)
	}
	resolve(b)
}
