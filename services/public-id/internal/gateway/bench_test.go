package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/cached"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
)

// orderBody is an upstream order with five items: about 700 bytes, 7 ids.
func orderBody() []byte {
	a, c := idAt(now.Add(-time.Minute), 1), idAt(now.Add(-time.Hour), 2)
	var items []string
	for i := range 5 {
		items = append(items, fmt.Sprintf(`{"sku":"book-%d","order_id":"%d","extra":"dropped"}`, i, a+int64(i)))
	}
	return []byte(fmt.Sprintf(`{"id":"%d","customer_id":%d,"status":"placed","total_cents":4200,"note":"leave at the door",
		"created_at":"2026-11-30T12:00:00Z","internal_ref":"%d","items":[%s]}`, a, c, a, strings.Join(items, ",")))
}

// BenchmarkRewrite: the gateway's rebuild of one order (parse, check, rebuild, fill public IDs),
// against encoding/json decoding the same body into any and encoding it again: the least any
// JSON-rewriting proxy does.
func BenchmarkRewrite(b *testing.B) {
	body, typ := orderBody(), orderType(b)
	b.Run("baseline=encoding/json-roundtrip", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gateway", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		d := detector()
		for b.Loop() {
			rw, err := gateway.Rewrite(body, typ, d, gateway.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			ids, res := rw.IDs()
			pubs := make(map[int64]string, len(ids))
			var k gateway.Known
			for i, id := range ids {
				pubs[id] = res[i] + "_0123456789abcdefghijkl"
				k.Add(id)
			}
			if _, err := rw.Fill(pubs, &k); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGateway: one customer GET through the gateway as `make bench-publicid` sends it (the
// bare handler's body as the upstream's, a route of two id fields), over loopback HTTP with
// keep-alive, against the same GET sent to the upstream directly: the difference is the
// gateway's hop (admission, route, resolve, the upstream call, the rebuild with a lookup of the
// response's IDs, the reply). cached: the cache of resolved mappings in front of the store, as
// the service runs it, so the resolve and the lookup are answered in-process; sqlite: every
// lookup read from the store. The allocations of a gateway case less the direct one's are the
// gateway's own per request (its server side, its handler and its client of the upstream).
func BenchmarkGateway(b *testing.B) {
	for _, store := range []string{"cached", "sqlite"} {
		b.Run("store="+store, func(b *testing.B) { benchGateway(b, store == "cached") })
	}
}

func benchGateway(b *testing.B, withCache bool) {
	const id = 120460138153815040
	body := []byte(`{"id":"120460138153815040","id_num":120460138153815040}` + "\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	b.Cleanup(up.Close)
	c, err := routes.Parse([]byte(`{"routes": [{"name": "order", "public": "/orders/{public_id}",
	  "upstream": "` + up.URL + `/internal/orders/{internal_id}", "resource": "ord",
	  "response": {"type": "object", "fields": {"id": "id:ord", "id_num": "id:ord"}}}]}`))
	if err != nil {
		b.Fatal(err)
	}
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		b.Fatal(err)
	}
	inner, err := sqlitemap.Open(context.Background(), filepath.Join(b.TempDir(), "map.db"))
	if err != nil {
		b.Fatal(err)
	}
	var store mapping.Store = inner
	if withCache {
		if store, err = cached.New(inner, cached.Options{MaxBytes: 1 << 20}); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { store.Close() })
	pub, err := store.Publish(context.Background(), id, func() (string, error) { return maker.New("ord") })
	if err != nil {
		b.Fatal(err)
	}
	g, err := gateway.New(c, maker, store, prometheus.NewRegistry(), gateway.Options{})
	if err != nil {
		b.Fatal(err)
	}
	gw := httptest.NewServer(g)
	b.Cleanup(gw.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.Cleanup(client.CloseIdleConnections)
	get := func(b *testing.B, url string) {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d", url, resp.StatusCode)
		}
	}
	direct, public := fmt.Sprintf("%s/internal/orders/%d", up.URL, id), gw.URL+"/orders/"+pub
	get(b, public)
	b.Run("baseline=upstream-direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			get(b, direct)
		}
	})
	b.Run("gateway", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			get(b, public)
		}
	})
}
