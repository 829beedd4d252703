package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/libs/testenv/proc"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
)

// The environment of TestGatewayProcess, the gateway as a process of its own.
const (
	childRoutes = "IDGEN_GATEWAY_CHILD_ROUTES" // the route file
	childStore  = "IDGEN_GATEWAY_CHILD_STORE"  // the SQLite mapping store
	childListen = "IDGEN_GATEWAY_CHILD_LISTEN" // host:port
	childLimit  = "IDGEN_GATEWAY_CHILD_LIMIT"  // "1": the process runs with the gateway's MemoryLimit
)

// TestGatewayProcess is not a test: it is the gateway as a process, which TestResidentMemory
// starts (this test binary, run with the environment above). It sets the garbage collector as
// the services do (serve.SetGC: GOGC 400 and the services' 256 MiB limit), then, with
// IDGEN_GATEWAY_CHILD_LIMIT=1, the gateway's own memory limit as its binary does, and serves
// until it is killed.
func TestGatewayProcess(t *testing.T) {
	if os.Getenv(childListen) == "" {
		t.Skip("the gateway as a process, for TestResidentMemory")
	}
	serve.SetGC()
	c, err := routes.Load(os.Getenv(childRoutes))
	if err != nil {
		t.Fatal(err)
	}
	maker, err := publicid.NewMaker("ord", "cus")
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlitemap.Open(context.Background(), os.Getenv(childStore))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(c, maker, store, prometheus.NewRegistry(), gateway.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(childLimit) == "1" {
		debug.SetMemoryLimit(g.MemoryLimit())
	}
	l, err := net.Listen("tcp", os.Getenv(childListen))
	if err != nil {
		t.Fatal(err)
	}
	t.Fatal((&http.Server{Handler: g, ReadHeaderTimeout: 5 * time.Second}).Serve(l))
}

// TestMemoryLimit: the derived limit is the body budget, two bodies a rewrite slot and 12 MiB.
func TestMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		o    gateway.Options
		want int64
	}{
		{gateway.Options{}, 44 << 20},
		{gateway.Options{MaxBody: 64 << 10, BodyBudget: 1 << 20, MaxRewrites: 4}, 1<<20 + 2*4*64<<10 + 12<<20},
		{gateway.Options{MemoryLimit: 100 << 20}, 100 << 20},
		{gateway.Options{MemoryLimit: -5}, -1},
	} {
		if got := gateway.MemoryLimit(tt.o); got != tt.want {
			t.Errorf("MemoryLimit(%+v) = %d, want %d", tt.o, got, tt.want)
		}
	}
}

// TestResidentMemory: 64 customers at once asking for upstream bodies of about 1 MiB each, in
// rounds, leave the gateway's process (its peak resident set, VmHWM) within 64 MiB when it runs
// with its memory limit. Without it the services' GC target (GOGC 400) lets the heap grow to
// five times what it holds.
func TestResidentMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("64 bodies of 1 MiB at once: not in -short")
	}
	const ok = 64 << 20
	withLimit := residentPeak(t, true)
	without := residentPeak(t, false)
	t.Logf("peak resident set: %.1f MiB with the gateway's memory limit (%d MiB), %.1f MiB without",
		float64(withLimit)/(1<<20), gateway.MemoryLimit(gateway.Options{})>>20, float64(without)/(1<<20))
	if withLimit > ok {
		t.Errorf("peak resident set %.1f MiB with the memory limit, want at most %d MiB", float64(withLimit)/(1<<20), ok>>20)
	}
}

// residentPeak runs the gateway as a process (TestGatewayProcess) before an upstream of bodies
// of about 1 MiB, sends it rounds of 64 requests at once, and returns its peak resident set.
func residentPeak(t *testing.T, limit bool) int64 {
	t.Helper()
	body := bigBody()
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
	maker, _ := publicid.NewMaker("ord", "cus")
	pub, err := store.Publish(context.Background(), limID(1), func() (string, error) { return maker.New("ord") })
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	env := []string{childRoutes + "=" + file, childStore + "=" + db, childListen + "=" + addr, "GOGC=", "GOMEMLIMIT="}
	if limit {
		env = append(env, childLimit+"=1")
	}
	p := proc.StartT(t, proc.Spec{Bin: os.Args[0], Args: []string{"-test.run=^TestGatewayProcess$"}, Env: env,
		Name: "gateway", HealthURL: "http://" + addr + "/healthz"})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	codes := map[int]int{}
	var mu sync.Mutex
	for range 3 {
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				resp, err := client.Get("http://" + addr + "/orders/" + pub)
				if err != nil {
					t.Error(err)
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				defer mu.Unlock()
				codes[resp.StatusCode]++
				if resp.StatusCode == 200 && n < 1<<19 {
					t.Errorf("a body of %d bytes", n)
				}
			})
		}
		wg.Wait()
	}
	peak := vmHWM(t, p.Pid())
	t.Logf("memory limit %v: answers %v, peak resident set %.1f MiB", limit, codes, float64(peak)/(1<<20))
	if codes[200] == 0 {
		t.Errorf("answers %v: none served", codes)
	}
	return peak
}

// bigBody is an upstream body of about 1 MiB that the route's type passes whole.
func bigBody() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":"%d","items":[`, limID(1))
	for i := 0; b.Len() < 1<<20-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sku":"book-%06d-paperback-edition","quantity":%d}`, i, i%1000)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// vmHWM reads a process's peak resident set from /proc, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}
