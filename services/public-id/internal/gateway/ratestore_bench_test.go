package gateway

import (
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// BenchmarkRateCheck: one per-client rate check, as admit makes it, for 1,024 clients in turn,
// in-process (the table here) against a redis-server on loopback (--rate-redis: redis_rate's
// script, one round trip). The Redis runs as a limiter's own should, without persistence, and as
// the mapping store's (AOF, appendfsync always), which writes each check to disk. The limit is
// high enough that every check passes: the cost of a check, not of a refusal.
//
//	go test -run '^$' -bench BenchmarkRateCheck -count 5 ./internal/gateway
func BenchmarkRateCheck(b *testing.B) {
	keys := make([]clientKey, 1024)
	for i := range keys {
		keys[i] = addrKey(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}))
	}
	const perSecond, burst = 1e6, 2e6
	b.Run("in-process", func(b *testing.B) {
		l := newClientLimiter(perSecond, burst, 1<<16)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if ok, _ := l.allow(keys[i%len(keys)], time.Now()); !ok {
				b.Fatal("refused")
			}
			i++
		}
	})
	for _, redisCase := range []struct {
		name string
		args []string
	}{
		{"redis-no-persistence", []string{"--appendonly", "no"}},
		{"redis-aof-always", nil},
	} {
		r := testenv.StartRedis(b, b.TempDir(), redisCase.args...)
		rdb := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true})
		b.Cleanup(func() { rdb.Close() })
		var failures testenv.LogBuffer // the store logs its first failure at once
		store := newRateStore(rdb, time.Second, prometheus.NewCounter(prometheus.CounterOpts{Name: "errors"}), slog.New(slog.NewTextHandler(&failures, nil)))
		l := newClientLimiter(perSecond, burst, 1<<16).shared(store, "bench")
		b.Run(redisCase.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if ok, _ := l.allow(keys[i%len(keys)], time.Now()); !ok {
					b.Fatal("refused")
				}
				i++
			}
		})
		// Checks from every core at once, as a busy gateway makes them: the pool's connections
		// pipelined by the server.
		b.Run(redisCase.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if ok, _ := l.allow(keys[i%len(keys)], time.Now()); !ok {
						b.Error("refused")
						return
					}
					i++
				}
			})
		})
		if failures.String() != "" {
			b.Fatalf("%s: checks failed, and the in-process limiter made them: %s", redisCase.name, failures.String())
		}
	}
}
