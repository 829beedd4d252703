package redismap_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/redis/go-redis/v9"
)

// Under the services' GC target, a store serving concurrent callers keeps a small heap. go-redis's
// autopipeliner recycles its queue slices through a sync.Pool; queues larger than the pool's
// slices were allocated anew on every flush and pooled afterwards, and at GOGC=400 the pooled
// garbage outgrew each collection: the heap doubled from one cycle to the next.
func TestHeapStaysSmallUnderLoad(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(serve.DefaultGCPercent))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as a service pinned to one core
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	s := newStore(t, redis.NewClient(&redis.Options{Addr: r.Addr}))
	maker, _ := publicid.NewMaker("ord")
	pub, err := s.Publish(ctx, 42, func() (string, error) { return maker.New("ord") })
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	var peak uint64
	for round := range 6 {
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for i := range 2000 {
					if _, err := s.Resolve(ctx, pub); err != nil {
						t.Error(err)
						return
					}
					if i%10 == 0 {
						if _, err := s.Publish(ctx, int64(1000+round), func() (string, error) { return maker.New("ord") }); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		t.Logf("round %d: heap in use %d MiB, %d collections", round, ms.HeapInuse>>20, ms.NumGC)
	}
	if peak > 64<<20 {
		t.Fatalf("heap in use reached %d MiB", peak>>20)
	}
}
