package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/redis/go-redis/v9"
)

// TestRegionalCache: gateways given --cache-redis share the mappings any of them resolved: with
// the store frozen, a second gateway, which never saw the public ID, answers it from the
// region's Redis; with that Redis frozen instead, a gateway answers from the store within
// --cache-redis-timeout more than the store's own time.
func TestRegionalCache(t *testing.T) {
	store, cache := testenv.StartRedis(t, t.TempDir()), testenv.StartRedis(t, t.TempDir(), "--appendonly", "no")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"%s","note":"ok"}`, strings.TrimPrefix(req.URL.Path, "/internal/order/"))
	}))
	t.Cleanup(up.Close)
	routes := limitRoutesFile(t, limitRoute("order", up.URL, ""))
	flags := []string{"--store-timeout", "500ms", "--cache-redis", "redis://" + cache.Addr, "--cache-redis-timeout", "100ms", "--mapping-cache-bytes", "0"}
	a := startGateway(t, store.Addr, routes, flags...)
	b := startGateway(t, store.Addr, routes, flags...)
	id := newID()
	pub := a.publish(t, id, "ord")
	if got := a.do(t, "GET", "/order/"+pub); got.code != 200 {
		t.Fatalf("GET /order/%s from the first gateway: %d %s", pub, got.code, got.body)
	}
	rc := redis.NewClient(&redis.Options{Addr: cache.Addr})
	t.Cleanup(func() { _ = rc.Close() })
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		// Both directions: the gateway resolves the public ID, then looks up the upstream's ID.
		n, err := rc.Exists(context.Background(), "c:p:"+pub, fmt.Sprintf("c:i:%d", id)).Result()
		return n == 2, fmt.Sprintf("the mapping's keys in the cache's Redis: %d, %v", n, err)
	})

	store.Freeze(t)
	start := time.Now()
	if got := b.do(t, "GET", "/order/"+pub); got.code != 200 || time.Since(start) > time.Second {
		t.Fatalf("the second gateway, store frozen: %d %s after %v; want 200 from the region's Redis", got.code, got.body, time.Since(start))
	}
	store.Thaw()

	other := a.publish(t, newID(), "ord") // through the internal API, which has no Redis cache
	cache.Freeze(t)
	for _, g := range []*gw{a, b} {
		start := time.Now()
		got := g.do(t, "GET", "/order/"+other)
		took := time.Since(start)
		t.Logf("cache Redis frozen: %d in %v", got.code, took.Round(time.Millisecond))
		if got.code != 200 || took > time.Second {
			t.Errorf("cache Redis frozen: %d %s after %v; want 200 from the store within 1 s", got.code, got.body, took)
		}
	}
}
