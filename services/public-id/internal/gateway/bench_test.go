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

	"github.com/idgen/idgen/services/public-id/internal/gateway"
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

// BenchmarkServeHTTP: one customer GET through the gateway (admission, route, resolve, the
// upstream call, rebuild with a lookup of the response's ID, the reply) over loopback HTTP,
// against the same GET sent to the upstream directly: the difference is the gateway's hop.
func BenchmarkServeHTTP(b *testing.B) {
	id := limID(21)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"%d","note":"leave at the door"}`, id)
	}))
	b.Cleanup(up.Close)
	c, err := gateway.ParseRoutes([]byte(twoRoutes("http://127.0.0.1:1", "", up.URL, "")))
	if err != nil {
		b.Fatal(err)
	}
	maker, err := publicid.NewMaker("ord", "cus")
	if err != nil {
		b.Fatal(err)
	}
	store, err := sqlitemap.Open(context.Background(), filepath.Join(b.TempDir(), "map.db"))
	if err != nil {
		b.Fatal(err)
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
	get := func(b *testing.B, url string) {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d", url, resp.StatusCode)
		}
	}
	b.Run("baseline=upstream-direct", func(b *testing.B) {
		for b.Loop() {
			get(b, fmt.Sprintf("%s/internal/fast/%d", up.URL, id))
		}
	})
	b.Run("gateway", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			get(b, gw.URL+"/orders/"+pub)
		}
	})
}
