package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/idgen/idgen/services/public-id/publicid"
)

// TestResidentMemory: 64 customers at once asking for upstream bodies of about 1 MiB each, in
// rounds, leave public-id-gateway's process (its peak resident set, VmHWM) within 64 MiB with its
// memory limit, which follows what it holds. Without it (--memory-limit -1) the services' GC
// target (GOGC 400) lets the heap grow to five times what it holds.
func TestResidentMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("64 bodies of 1 MiB at once: not in -short")
	}
	const ok = 64 << 20
	gateway := residentPeak(t, "GOGC=")
	services := residentPeak(t, "GOGC=", "--memory-limit", "-1")
	t.Logf("peak resident set: %.1f MiB with the gateway's memory limit, %.1f MiB without", float64(gateway)/(1<<20), float64(services)/(1<<20))
	if gateway > ok {
		t.Errorf("peak resident set %.1f MiB, want at most %d MiB", float64(gateway)/(1<<20), ok>>20)
	}
}

// residentPeak runs public-id-gateway (gogc: its GOGC variable; extra: its flags) before an
// upstream of bodies of about 1 MiB, sends it rounds of 64 requests at once, and returns its peak
// resident set.
func residentPeak(t *testing.T, gogc string, extra ...string) int64 {
	t.Helper()
	id := (time.Now().Add(-time.Minute).UnixMilli()-idcore.EpochUnixMs)<<22 | 1<<19 | 5<<10 | 1
	body := bigBody(id)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	file := filepath.Join(dir, "routes.json")
	if err := os.WriteFile(file, []byte(`{"routes": [{"name": "order", "public": "/orders/{public_id}",
	  "upstream": "`+up.URL+`/internal/orders/{internal_id}", "resource": "ord",
	  "response": {"type": "object", "fields": {"id": "id:ord", "items": {"type": "array", "max_items": 20000,
	    "items": {"type": "object", "fields": {"sku": {"type": "string", "max_len": 100, "pattern": "[a-z0-9-]{1,64}"},
	      "quantity": {"type": "int", "min": 0, "max": 1000}}}}}}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "map.db")
	store, err := sqlitemap.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	maker, _ := publicid.NewMaker("ord")
	pub, err := store.Publish(context.Background(), id, func() (string, error) { return maker.New("ord") })
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	args := append([]string{"--listen", addr, "--metrics-listen", "", "--store", "sqlite:" + db, "--routes", file,
		"--rate-per-client", "0", "--deregistration-delay", "0"}, extra...)
	p := proc.StartT(t, proc.Spec{Bin: gatewayBin(t), Args: args, Env: []string{gogc, "GOMEMLIMIT="}, HealthURL: "http://" + addr + "/healthz"})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	codes := map[int]int{}
	var mu sync.Mutex
	for range 3 {
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				req, _ := http.NewRequest("GET", "http://"+addr+"/orders/"+pub, nil)
				req.Header.Set("Accept-Encoding", "gzip")
				resp, err := client.Transport.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				defer mu.Unlock()
				codes[resp.StatusCode]++
				if resp.StatusCode == 200 && n < 1<<14 {
					t.Errorf("a body of %d bytes", n)
				}
			})
		}
		wg.Wait()
	}
	peak := peakRSS(t, p.Pid())
	t.Logf("%s %v: answers %v, peak resident set %.1f MiB", gogc, extra, codes, float64(peak)/(1<<20))
	if codes[200] == 0 {
		t.Errorf("answers %v: none served", codes)
	}
	return peak
}

// bigBody is an upstream body of about 1 MiB that the route's type passes whole.
func bigBody(id int64) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":"%d","items":[`, id)
	for i := 0; b.Len() < 1<<20-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sku":"book-%06d-paperback-edition","quantity":%d}`, i, i%1000)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
