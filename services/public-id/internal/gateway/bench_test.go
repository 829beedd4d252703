package gateway_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/services/public-id/internal/gateway"
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
