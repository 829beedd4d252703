package e2e

import (
	"context"
	"encoding/json"
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
// rounds, leave public-id-gateway's anonymous memory (its heap, stacks and the runtime's own, as
// the kernel counts them, sampled every millisecond) within the Go memory limit the gateway sets
// itself from what it holds (46 MiB with these flags), with a tenth of it for the collector to
// run behind the allocations. Without the limit (--memory-limit -1) the services' GC target (GOGC
// 400) lets the heap grow to five times what it holds. The peak resident set (VmHWM) adds the
// binary's pages read from its file, about 19 MiB, which no memory limit governs.
func TestResidentMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("64 bodies of 1 MiB at once: not in -short")
	}
	gateway := residentPeak(t, "GOGC=")
	services := residentPeak(t, "GOGC=", "--memory-limit", "-1")
	t.Logf("anonymous memory at most %.1f MiB with the gateway's memory limit of %.1f MiB, %.1f MiB without; peak resident set %.1f MiB and %.1f MiB",
		mib(gateway.anon), mib(gateway.limit), mib(services.anon), mib(gateway.hwm), mib(services.hwm))
	if ok := gateway.limit + gateway.limit/10; gateway.anon > ok {
		t.Errorf("anonymous memory reached %.1f MiB, want at most %.1f MiB (the memory limit and a tenth)", mib(gateway.anon), mib(ok))
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// resident is what a gateway's run held: its peak anonymous memory (sampled), its peak resident
// set (VmHWM) and the memory limit it logged setting (-1: none).
type resident struct{ anon, hwm, limit int64 }

// residentPeak runs public-id-gateway (gogc: its GOGC variable; extra: its flags) before an
// upstream of bodies of about 1 MiB, sends it rounds of 64 requests at once, and returns what it
// held.
func residentPeak(t *testing.T, gogc string, extra ...string) resident {
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
	held := resident{limit: -1}
	if len(extra) == 0 {
		testenv.Eventually(t, 5*time.Second, func() (bool, string) {
			held.limit = loggedLimit(p.Tail(0))
			return held.limit > 0, "the gateway did not log its memory limit:\n" + p.Tail(20)
		})
	}
	stop := make(chan struct{})
	sampled := make(chan int64)
	go func() {
		peak := int64(0)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			st, _ := testenv.ReadProcStatus(p.Pid())
			peak = max(peak, st.RssAnon)
			select {
			case <-stop:
				sampled <- peak
				return
			case <-tick.C:
			}
		}
	}()
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
	close(stop)
	held.anon = <-sampled
	st, ok := testenv.ReadProcStatus(p.Pid())
	if !ok {
		t.Fatal("the gateway's /proc status could not be read")
	}
	held.hwm = st.VmHWM
	t.Logf("%s %v: answers %v, anonymous memory at most %.1f MiB, peak resident set %.1f MiB (%.1f MiB of it read from the binary's file now)",
		gogc, extra, codes, mib(held.anon), mib(held.hwm), mib(st.RssFile))
	if codes[200] == 0 {
		t.Errorf("answers %v: none served", codes)
	}
	return held
}

// loggedLimit is the memory limit in bytes of the gateway's first "memory limit" log line in
// log, 0 when there is none.
func loggedLimit(log string) int64 {
	for _, line := range strings.Split(log, "\n") {
		var l struct {
			Msg   string `json:"msg"`
			Bytes int64  `json:"bytes"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "memory limit" {
			return l.Bytes
		}
	}
	return 0
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
