package server_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/testenv"
)

type tlsEnv struct {
	r       *running
	trusted *testenv.CA
}

func startTLS(t *testing.T, callers string) *tlsEnv {
	t.Helper()
	root := testenv.NewCA(t, "idgen test CA")
	f := root.EdgeFiles(t, t.TempDir(), callers)
	cfg := baseConfig(t)
	cfg.InsecureDev = false
	cfg.CertFile, cfg.KeyFile, cfg.ClientCA, cfg.CallersFile = f.Cert, f.Key, f.ClientCA, f.Callers
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := start(t, cfg)
	r.url = strings.Replace(r.url, "http://", "https://", 1)
	r.waitReady(t)
	return &tlsEnv{r: r, trusted: root}
}

func (e *tlsEnv) client(cert *tls.Certificate) *http.Client { return e.trusted.HTTPSClient(cert) }

const callersJSON = `{"trust_domain": "idgen.test", "callers": [
	{"name": "orders", "ids_per_second": 200, "burst": 10},
	{"name": "billing", "ids_per_second": 0},
	{"name": "prometheus", "scraper": true}
]}`

// TestMetricsForScrapersOnly: /metrics on the mutual-TLS port shows callers' names and counts, so
// only a caller marked scraper reads it; the plaintext health listener serves scrapers in the VPC.
func TestMetricsForScrapersOnly(t *testing.T) {
	e := startTLS(t, callersJSON)
	hour := time.Now().Add(time.Hour)
	for _, tt := range []struct {
		name string
		uri  string
		want int
	}{
		{"a scraper", "spiffe://idgen.test/svc/prometheus", http.StatusOK},
		{"a caller", "spiffe://idgen.test/svc/billing", http.StatusForbidden},
		{"an unknown identity", "spiffe://idgen.test/svc/stranger", http.StatusForbidden},
	} {
		cert := e.trusted.Client(t, hour, tt.uri)
		resp, err := e.client(&cert).Get(e.r.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || tt.want == http.StatusForbidden && strings.Contains(string(body), "idgen_server") {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
}

func TestMutualTLS(t *testing.T) {
	e := startTLS(t, callersJSON)
	other := testenv.NewCA(t, "another CA")
	hour := time.Now().Add(time.Hour)
	certs := map[string]tls.Certificate{
		"known":              e.trusted.Client(t, hour, "spiffe://idgen.test/svc/billing"),
		"unknown identity":   e.trusted.Client(t, hour, "spiffe://idgen.test/svc/stranger"),
		"no URI SAN":         e.trusted.Client(t, hour),
		"two URI SANs":       e.trusted.Client(t, hour, "spiffe://idgen.test/svc/billing", "spiffe://idgen.test/svc/orders"),
		"expired":            e.trusted.Client(t, time.Now().Add(-time.Minute), "spiffe://idgen.test/svc/billing"),
		"another CA":         other.Client(t, hour, "spiffe://idgen.test/svc/billing"),
		"another trust dom.": e.trusted.Client(t, hour, "spiffe://elsewhere.test/svc/billing"),
		"not SPIFFE":         e.trusted.Client(t, hour, "https://idgen.test/svc/billing"),
	}
	tests := []struct {
		name   string
		cert   *tls.Certificate
		status int // 0: the connection is refused
		code   connect.Code
	}{
		{"known", ptr(certs["known"]), 200, 0},
		{"unknown identity", ptr(certs["unknown identity"]), 403, connect.CodePermissionDenied},
		{"no certificate", nil, 0, 0},
		{"no URI SAN", ptr(certs["no URI SAN"]), 0, 0},
		{"two URI SANs", ptr(certs["two URI SANs"]), 0, 0},
		{"expired", ptr(certs["expired"]), 0, 0},
		{"another CA", ptr(certs["another CA"]), 0, 0},
		{"another trust domain", ptr(certs["another trust dom."]), 0, 0},
		{"not SPIFFE", ptr(certs["not SPIFFE"]), 0, 0},
	}
	served := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc := e.client(tt.cert)
			resp, err := hc.Post(e.r.url+"/v1/ids", "application/json", strings.NewReader("{}"))
			if tt.status == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("served with status %d; want the connection refused", resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status == 200 {
				served++
			}
			_, err = idgenv1connect.NewIdServiceClient(hc, e.r.url).Generate(context.Background(), connect.NewRequest(&idgenv1.GenerateRequest{}))
			if tt.code == 0 && err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if tt.code == 0 {
				served++
			}
			if tt.code != 0 && connect.CodeOf(err) != tt.code {
				t.Fatalf("Connect err = %v, want %v", err, tt.code)
			}
		})
	}
	// The plaintext health handler answers without a certificate and serves nothing else.
	hs := httptest.NewServer(e.r.srv.HealthHandler())
	defer hs.Close()
	if resp, err := http.Get(hs.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health listener /healthz: %v %v", resp, err)
	}
	if resp, err := http.Post(hs.URL+"/v1/ids", "application/json", strings.NewReader("{}")); err != nil || resp.StatusCode != 404 && resp.StatusCode != 405 {
		t.Fatalf("health listener served POST /v1/ids: %v %v", resp, err)
	}
	// No refused caller got an ID: only the known caller's two requests were issued.
	if n := idsIssued(t, e.r); n != float64(served) {
		t.Fatalf("the generator issued %v ids, the known caller received %d", n, served)
	}
}

func ptr[T any](v T) *T { return &v }

// idsIssued reads idgen_generator_ids_issued_total of the server's registry.
func idsIssued(t *testing.T, r *running) float64 {
	t.Helper()
	return testenv.Gather(t, r.srv.Metrics()).Sum("idgen_generator_ids_issued_total", nil)
}

// A caller that keeps asking past its quota is served what its bucket allows (200 a second plus the
// burst) and refused the rest with 429 and Retry-After; another caller is unaffected.
func TestQuota(t *testing.T) {
	e := startTLS(t, callersJSON)
	hour := time.Now().Add(time.Hour)
	orders := e.client(ptr(e.trusted.Client(t, hour, "spiffe://idgen.test/svc/orders")))
	billing := e.client(ptr(e.trusted.Client(t, hour, "spiffe://idgen.test/svc/billing")))
	var ok, limited, billingOK, billingOther atomic.Int64
	var badRetry atomic.Int64
	var wg sync.WaitGroup
	const dur = 2 * time.Second
	deadline := time.Now().Add(dur)
	post := func(hc *http.Client) *http.Response {
		resp, err := hc.Post(e.r.url+"/v1/ids", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Error(err)
			return nil
		}
		resp.Body.Close()
		return resp
	}
	// Orders asks from four workers, each sending its next request when the last is answered: the
	// bucket never sits full, so what it serves is what it allows however fast this machine
	// sends. (Requests sent on a ticker arrive in bunches on a loaded machine, and a bunch past
	// the burst is refused while the bucket had room a moment before.)
	start := time.Now()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				resp := post(orders)
				if resp == nil {
					return
				}
				switch resp.StatusCode {
				case 200:
					ok.Add(1)
				case 429:
					limited.Add(1)
					if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
						badRetry.Add(1)
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // billing at 100 requests a second, no quota of its own
		defer wg.Done()
		tick := time.NewTicker(time.Second / 100)
		defer tick.Stop()
		for time.Now().Before(deadline) {
			<-tick.C
			if resp := post(billing); resp != nil && resp.StatusCode == 200 {
				billingOK.Add(1)
			} else {
				billingOther.Add(1)
			}
		}
	}()
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	total := ok.Load() + limited.Load()
	// What the bucket allows in the time the load ran: 200 a second plus the burst of 10, never
	// more. The floor is 60 % of that (or of what was sent, on a machine too busy to send that
	// many): a stall of this process longer than the burst lasts (50 ms) loses the tokens that
	// would have overflowed, which a loaded machine does, while a bucket filling at half its rate
	// would serve about 51 %.
	allowed := 200*elapsed + 10
	t.Logf("orders: %d sent in %.2f s (%.0f/s), %d served (%.0f%% of the %.0f allowed), %d refused with 429; billing: %d served, %d not",
		total, elapsed, float64(total)/elapsed, ok.Load(), 100*float64(ok.Load())/allowed, allowed, limited.Load(), billingOK.Load(), billingOther.Load())
	if served, floor := float64(ok.Load()), 0.6*min(allowed, float64(total)); served > allowed*1.05 || served < floor {
		t.Fatalf("orders over its quota got %.0f of %d served in %.2f s, want about %.0f (200/s plus the burst) and at least %.0f", served, total, elapsed, allowed, floor)
	}
	if limited.Load() == 0 {
		t.Fatalf("orders sent %d in %.2f s past its quota and was never refused", total, elapsed)
	}
	if badRetry.Load() > 0 {
		t.Fatalf("%d 429s without a Retry-After of at least 1 s", badRetry.Load())
	}
	if billingOther.Load() != 0 || billingOK.Load() == 0 {
		t.Fatalf("billing was affected: %d served, %d not", billingOK.Load(), billingOther.Load())
	}
	// Connect says resource_exhausted with Retry-After once the bucket is spent.
	c := idgenv1connect.NewIdServiceClient(orders, e.r.url)
	var err error
	for range 100 {
		if _, err = c.GenerateBatch(context.Background(), connect.NewRequest(&idgenv1.GenerateBatchRequest{Count: 10})); err != nil {
			break
		}
	}
	var ce *connect.Error
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !asConnect(err, &ce) || ce.Meta().Get("Retry-After") == "" {
		t.Fatalf("batch over quota over Connect: %v", err)
	}
	// A batch larger than the burst could never pass, however long the caller waited: it is
	// refused as what it is, with no Retry-After, on both faces.
	_, err = c.GenerateBatch(context.Background(), connect.NewRequest(&idgenv1.GenerateBatchRequest{Count: 11}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !asConnect(err, &ce) || ce.Meta().Get("Retry-After") != "" ||
		!strings.Contains(err.Error(), "burst of 10 IDs") {
		t.Fatalf("a batch over the burst over Connect: %v", err)
	}
	req, _ := http.NewRequest("POST", e.r.url+"/v1/ids:batch", strings.NewReader(`{"count": 11}`))
	resp, err := orders.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Retry-After") != "" || !strings.Contains(string(body), "burst of 10 IDs") {
		t.Fatalf("a batch over the burst over REST: %d %s", resp.StatusCode, body)
	}
}

func asConnect(err error, ce **connect.Error) bool { return errors.As(err, ce) }
