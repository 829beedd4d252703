package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/redis/go-redis/v9"
)

// TestMappingCache: the internal API resolves through the cache of resolved mappings: a mapping
// published (or resolved) once still resolves after Redis lost it, a miss is asked again, and /metrics exports
// the hit ratio with the region label. --mapping-cache-bytes 0 asks the store every time.
func TestMappingCache(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { _ = admin.Close() })
	for _, c := range []struct {
		name   string
		args   []string
		cached bool
	}{{"default", nil, true}, {"off", []string{"--mapping-cache-bytes", "0"}, false}} {
		t.Run(c.name, func(t *testing.T) {
			if err := admin.FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			base := start(t, "redis:"+r.Addr, c.args...)
			code, body := call(t, "POST", base+"/v1/public-ids", `{"internal_id":"683244571854022700"}`)
			if code != 200 {
				t.Fatalf("publish: %d %s", code, body)
			}
			pub := body[strings.Index(body, "ord_"):strings.LastIndex(body, `"`)]
			if code, body := call(t, "GET", base+"/v1/public-ids/"+pub, ""); code != 200 {
				t.Fatalf("resolve: %d %s", code, body)
			}
			if code, _ := call(t, "GET", base+"/v1/public-ids/ord_notyetpublished", ""); code != 404 {
				t.Fatalf("resolve of an unknown ID: %d", code)
			}
			if err := admin.FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			want := 404
			if c.cached {
				want = 200
			}
			if code, body := call(t, "GET", base+"/v1/public-ids/"+pub, ""); code != want {
				t.Fatalf("resolve after Redis lost the mapping: %d %s; want %d", code, body, want)
			}
			if err := admin.Set(context.Background(), "pid:p:ord_notyetpublished", "1:42", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if code, body := call(t, "GET", base+"/v1/public-ids/ord_notyetpublished", ""); code != 200 || !strings.Contains(body, `"42"`) {
				t.Fatalf("resolve after a miss, once published: %d %s", code, body)
			}
			m := testenv.Scrape(t, nil, base+"/metrics")
			if has := m.Count("idgen_publicid_cache_hit_ratio", testenv.Labels{"region": "us-east-1"}) == 1; has != c.cached {
				t.Fatalf("idgen_publicid_cache_hit_ratio with its region exported: %v; want %v", has, c.cached)
			}
			// The publish put the mapping in the cache: both resolves of it are hits; the unknown
			// ID's two resolves are misses.
			for _, result := range []string{"hit", "miss"} {
				if c.cached {
					if n := m.Get(t, "idgen_publicid_cache_requests_total", testenv.Labels{"op": "resolve", "region": "us-east-1", "result": result}); n != 2 {
						t.Fatalf("resolves answered as a cache %s: %v, want 2", result, n)
					}
				}
			}
		})
	}
}
