package e2e

import (
	"compress/gzip"
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

	"github.com/idgen/idgen/libs/testenv"
)

// TestCustomerEdge: what a customer-facing gateway has, on the real processes (public-id and
// public-id-gateway on a real Redis): a request ID taken from the trusted proxy or made, sent
// upstream and returned; gzip for a client that asks; the gateway's own ETag and a 304; a
// success's Cache-Control; CORS for a configured origin only; a route's own rate; one access
// log line a request that holds no internal ID; and the memory limit the process runs with.
func TestCustomerEdge(t *testing.T) {
	order, cust := newID(), newID()
	var mu sync.Mutex
	upIDs := map[string]bool{} // the X-Request-Id values the upstream got
	items := strings.Repeat(`{"sku":"book-1","quantity":1},`, 80)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upIDs[r.Header.Get("X-Request-Id")] = true
		mu.Unlock()
		if r.Header.Get("Accept-Encoding") != "identity" {
			t.Errorf("the upstream was asked for %q, want identity", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", strconv.FormatInt(order, 10)) // never passed back
		fmt.Fprintf(w, `{"id":"%d","customer_id":"%d","status":"placed","items":[%s{"sku":"pen","quantity":2}]}`, order, cust, items)
	}))
	t.Cleanup(up.Close)
	routes := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(routes, []byte(`{"routes": [{"name": "order", "public": "/orders/{public_id}",
  "upstream": "`+up.URL+`/internal/orders/{internal_id}", "resource": "ord", "rate_per_client": 5,
  "response": {"type": "object", "fields": {"id": "id:ord", "customer_id": "id:cus", "status": {"type": "enum", "values": ["placed"]},
    "items": {"type": "array", "max_items": 100, "items": {"type": "object", "fields": {
      "sku": {"type": "string", "pattern": "[a-z0-9-]{1,20}"}, "quantity": {"type": "int", "min": 1, "max": 10}}}}}}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := testenv.StartRedis(t, t.TempDir())
	g := startGateway(t, r.Addr, routes, "--cors-origins", "https://shop.example.com", "--trusted-proxies", "127.0.0.1/32",
		"--api-key-header", "X-Api-Key")
	pub := g.publish(t, order, "ord")
	// A transport that sends Accept-Encoding only when a test sets it, and never decodes.
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)

	get := func(header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", g.url+"/orders/"+pub, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	read := func(resp *http.Response) string {
		t.Helper()
		var body io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatalf("gzip: %v", err)
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// A plain answer: the gateway's request ID (the proxy sent none), its strong ETag, the default
	// Cache-Control, the body with public IDs only.
	plain := get("X-Api-Key", "k1")
	plainBody := read(plain)
	rid, etag := plain.Header.Get("X-Request-Id"), plain.Header.Get("ETag")
	if plain.StatusCode != 200 || len(rid) != 32 || rid == strconv.FormatInt(order, 10) || !strings.HasPrefix(etag, `"`) ||
		plain.Header.Get("Cache-Control") != "private, no-cache" || plain.Header.Get("Content-Encoding") != "" {
		t.Fatalf("plain answer %d, headers %v", plain.StatusCode, plain.Header)
	}
	var doc struct {
		ID         string `json:"id"`
		CustomerID string `json:"customer_id"`
	}
	if err := json.Unmarshal([]byte(plainBody), &doc); err != nil || doc.ID != pub || !strings.HasPrefix(doc.CustomerID, "cus_") {
		t.Fatalf("body %s: %v", plainBody, err)
	}
	// gzip for a client that asks: the same body, a weak tag of the same bytes.
	zipped := get("Accept-Encoding", "gzip, br;q=0.5", "X-Api-Key", "k1")
	if zipped.Header.Get("Content-Encoding") != "gzip" || zipped.Header.Get("ETag") != "W/"+etag ||
		!strings.Contains(zipped.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("gzip answer headers %v", zipped.Header)
	}
	if got := read(zipped); got != plainBody {
		t.Fatalf("gzip body decodes to %q, want %q", got, plainBody)
	}
	// If-None-Match with the tag: 304 and no body, either encoding.
	for _, enc := range []string{"identity", "gzip"} {
		nm := get("If-None-Match", `"stale", `+etag, "Accept-Encoding", enc, "X-Api-Key", "k1")
		if b := read(nm); nm.StatusCode != 304 || b != "" {
			t.Fatalf("If-None-Match (%s): %d %q, want 304 and no body", enc, nm.StatusCode, b)
		}
	}
	if stale := get("If-None-Match", `"stale"`, "X-Api-Key", "k1"); stale.StatusCode != 200 {
		t.Fatalf("a stale tag: %d, want 200", stale.StatusCode)
	}
	// A request ID from the trusted proxy goes upstream and back; a malformed one is replaced.
	if got := get("X-Request-Id", "edge-4f1c.7", "X-Api-Key", "k2").Header.Get("X-Request-Id"); got != "edge-4f1c.7" {
		t.Fatalf("the proxy's request ID came back as %q", got)
	}
	if got := get("X-Request-Id", "bad id <script>", "X-Api-Key", "k2").Header.Get("X-Request-Id"); len(got) != 32 {
		t.Fatalf("a malformed request ID came back as %q, want one the gateway made", got)
	}
	mu.Lock()
	if !upIDs["edge-4f1c.7"] || !upIDs[rid] {
		t.Errorf("the upstream got request IDs %v, want the proxy's and the gateway's", upIDs)
	}
	mu.Unlock()
	// CORS: the configured origin's preflight is allowed, another's is not.
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", g.url+"/orders/"+pub, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "GET")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if ok := preflight("https://shop.example.com"); ok.Header.Get("Access-Control-Allow-Origin") != "https://shop.example.com" {
		t.Errorf("the shop's preflight: %d %v", ok.StatusCode, ok.Header)
	}
	if no := preflight("https://evil.example.com"); no.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin's preflight was allowed: %v", no.Header)
	}
	if a := get("Origin", "https://shop.example.com", "X-Api-Key", "k3"); a.Header.Get("Access-Control-Allow-Origin") != "https://shop.example.com" ||
		!strings.Contains(a.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id") {
		t.Errorf("the shop's GET: %v", a.Header)
	}
	// The route's own rate (5/s, burst 10) per API key: one key runs out, another does not.
	limited := 0
	for range 15 {
		if get("X-Api-Key", "k4").StatusCode == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 || get("X-Api-Key", "k5").StatusCode != 200 {
		t.Errorf("15 requests of one key: %d refused with 429, want some; another key must still pass", limited)
	}
	// The access log: a line a request, with its request ID, never an internal ID or a key.
	var log string
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		log = g.p.Tail(0)
		return strings.Contains(log, `"request_id":"edge-4f1c.7"`), "no access log line for the proxy's request ID:\n" + log
	})
	lines := 0
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"msg":"gateway request"`) {
			continue
		}
		lines++
		for _, leak := range []string{strconv.FormatInt(order, 10), strconv.FormatInt(cust, 10), `"k1"`, `"k4"`} {
			if strings.Contains(line, leak) {
				t.Errorf("the access log holds %s: %s", leak, line)
			}
		}
	}
	if lines < 20 {
		t.Errorf("%d access log lines, want one a request (over 20)", lines)
	}
	if !strings.Contains(log, `"msg":"memory limit"`) {
		t.Errorf("the gateway did not set its memory limit:\n%s", log)
	}
}
