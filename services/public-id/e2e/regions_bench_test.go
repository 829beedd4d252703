package e2e

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/publicid"
)

// BenchmarkRegions measures, on three regions of processes on a dynalite each (one machine: the
// round trips between regions are loopback ones), the latency of a publish through the internal
// API (the owner local: its transaction, then the peer's copy) and of a resolve through it: of a
// public ID the local table holds, of one only other regions hold (the fan-out), and of an
// unknown one. Each resolve is of a public ID not asked before, so no cache answers it. The
// floors, in the same run: one region's table asked directly (dynamomap on r2's dynalite, no
// service between): a publish (a consistent read, then the transaction) and a resolve (a
// consistent GetItem). It reports p50 and p99 in milliseconds:
//
//	go test ./services/public-id/e2e -run '^$' -bench BenchmarkRegions -benchtime 400x
func BenchmarkRegions(b *testing.B) {
	p := startPlatform(b)
	var pubs, remote []string
	b.Run("publish", func(b *testing.B) {
		var took []time.Duration
		for b.Loop() {
			start := time.Now()
			pub, _, err := p.publish("r1", p.id("r1"))
			took = append(took, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			pubs = append(pubs, pub)
		}
		report(b, took)
	})
	for range len(pubs) {
		pub, _, err := p.publish("r1", p.id("r1")) // owner r1: held by r1 and r2, not r3
		if err != nil {
			b.Fatal(err)
		}
		remote = append(remote, pub)
	}
	resolve := func(name, region string, ids func(i int) string) {
		b.Run(name, func(b *testing.B) {
			var took []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				resp, err := http.Get(p.regions[region].gw.api + "/v1/public-ids/" + ids(i))
				took = append(took, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				want := 200
				if name == "resolve-unknown" {
					want = 404
				}
				if resp.StatusCode != want {
					b.Fatalf("%s: %d", name, resp.StatusCode)
				}
				i++
			}
			report(b, took)
		})
	}
	// r2 holds the copies of r1's publishes in its table, and its processes never saw them.
	resolve("resolve-local", "r2", func(i int) string { return pubs[i%len(pubs)] })
	resolve("resolve-other-region", "r3", func(i int) string { return remote[i%len(remote)] })
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		b.Fatal(err)
	}
	table, err := dynamomap.Open(context.Background(), dynamomap.Target{Endpoint: p.regions["r2"].db.Endpoint}, dynamomap.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer table.Close()
	var direct []string
	b.Run("floor-table-publish", func(b *testing.B) {
		var took []time.Duration
		for b.Loop() {
			start := time.Now()
			pub, err := table.Publish(context.Background(), p.id("r2"), func() (string, error) { return maker.New("ord") })
			took = append(took, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			direct = append(direct, pub)
		}
		report(b, took)
	})
	b.Run("floor-table-resolve", func(b *testing.B) {
		var took []time.Duration
		i := 0
		for b.Loop() {
			start := time.Now()
			_, err := table.Resolve(context.Background(), direct[i%len(direct)])
			took = append(took, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
		report(b, took)
	})
	resolve("resolve-unknown", "r3", func(int) string { pub, _ := maker.New("ord"); return pub })
}

func report(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	q := func(f float64) float64 { return float64(took[int(f*float64(len(took)-1))]) / 1e6 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
