package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
)

// testClock is a clock a test moves by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// total is the sum of every idgen_gateway_requests_total series.
func (g *limGateway) total(t *testing.T) float64 {
	t.Helper()
	return testenv.Gather(t, g.reg).Sum("idgen_gateway_requests_total", nil)
}

// TestOutcomes: each way a request ends gets its status, the gateway's own body and headers,
// and is counted once, under its outcome and route.
func TestOutcomes(t *testing.T) {
	id, other := limID(11), limID(12)
	var which atomic.Value
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		switch which.Load().(string) {
		case "ok":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"%s","note":"hello"}`, got)
		case "404":
			w.WriteHeader(404)
		case "409":
			w.WriteHeader(409)
			io.WriteString(w, "order "+got+" is locked")
		case "401":
			w.WriteHeader(401)
		case "429":
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(429)
		case "500":
			w.WriteHeader(500)
		case "304":
			w.WriteHeader(304)
		case "leak":
			fmt.Fprintf(w, `{"note":"order %s"}`, got)
		case "redirect":
			w.Header().Set("Location", fmt.Sprintf("/internal/fast/%d", other))
			w.WriteHeader(302)
		case "redirect elsewhere":
			w.Header().Set("Location", "http://evil.example/"+got)
			w.WriteHeader(302)
		}
	}))
	t.Cleanup(up.Close)
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", up.URL, `"query": {"limit": {"type": "int", "min": 1, "max": 5}},`), gateway.Options{})
	pub := g.publish(t, id, "ord")
	otherPub := g.publish(t, other, "ord")
	order := "/orders/" + pub
	for _, tt := range []struct {
		name, upstream, method, path string
		code                         int
		body                         string
		route, outcome               string
		header                       map[string]string
	}{
		{"ok", "ok", "GET", order, 200, `{"id":"` + pub + `","note":"hello"}`, "fast", "ok", nil},
		{"unknown path", "", "GET", "/nowhere", 404, `{"error":"not found"}`, "", "not_found", nil},
		{"malformed public id", "", "GET", "/orders/nope", 404, `{"error":"not found"}`, "fast", "not_found", nil},
		{"another resource's public id", "", "GET", "/customers/" + pub, 404, `{"error":"not found"}`, "slow", "not_found", nil},
		{"method", "", "DELETE", order, 405, `{"error":"method DELETE is not allowed here; allowed: GET, HEAD"}`, "fast", "method_not_allowed",
			map[string]string{"Allow": "GET, HEAD"}},
		{"query outside its type", "", "GET", order + "?limit=9", 400, "", "fast", "bad_request", nil},
		{"query twice", "", "GET", order + "?limit=1&limit=2", 400, `{"error":"query parameter limit is given more than once"}`, "fast", "bad_request", nil},
		{"upstream 404", "404", "GET", order, 404, `{"error":"not found"}`, "fast", "not_found", nil},
		{"upstream 409", "409", "GET", order, 409, `{"error":"conflict"}`, "fast", "upstream_4xx", nil},
		{"upstream 401", "401", "GET", order, 403, `{"error":"forbidden"}`, "fast", "upstream_4xx", nil},
		{"upstream 429", "429", "GET", order, 429, `{"error":"too many requests"}`, "fast", "upstream_4xx", map[string]string{"Retry-After": "1"}},
		{"upstream 500", "500", "GET", order, 502, `{"error":"bad gateway"}`, "fast", "upstream_error", nil},
		{"upstream 304", "304", "GET", order, 502, `{"error":"bad gateway"}`, "fast", "upstream_error", nil},
		{"upstream leaks its id", "leak", "GET", order, 502, `{"error":"bad gateway"}`, "fast", "unsafe_response", nil},
		{"redirect", "redirect", "GET", order, 302, "", "fast", "ok", map[string]string{"Location": "/orders/" + otherPub}},
		{"redirect elsewhere", "redirect elsewhere", "GET", order, 502, `{"error":"bad gateway"}`, "fast", "unsafe_response", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			which.Store(tt.upstream)
			total, before := g.total(t), g.count(t, tt.route, tt.outcome)
			a := limDo(t, tt.method, g.url+tt.path)
			if a.code != tt.code || tt.body != "" && a.body != tt.body+"\n" {
				t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.path, a.code, a.body, tt.code, tt.body)
			}
			if a.code >= 400 {
				var e map[string]string
				if err := json.Unmarshal([]byte(a.body), &e); err != nil || len(e) != 1 || e["error"] == "" {
					t.Errorf("body %q: want {\"error\": …} only", a.body)
				}
				if a.header.Get("Cache-Control") != "no-store" || a.header.Get("Content-Type") != "application/json" {
					t.Errorf("headers %v: want the gateway's own (no-store, JSON)", a.header)
				}
			}
			for k, v := range tt.header {
				if got := a.header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if n := g.count(t, tt.route, tt.outcome) - before; n != 1 {
				t.Errorf("{route=%q,outcome=%q} rose by %v, want 1", tt.route, tt.outcome, n)
			}
			if n := g.total(t) - total; n != 1 {
				t.Errorf("the requests counted rose by %v, want 1", n)
			}
		})
	}
	// The store gone: 503 with Retry-After, nothing of the store's error in the answer.
	g.store.Close()
	before := g.count(t, "fast", "store_unavailable")
	if a := limDo(t, "GET", g.url+order); a.code != 503 || a.body != `{"error":"service unavailable"}`+"\n" || a.header.Get("Retry-After") != "1" {
		t.Errorf("with the store closed: %d %v %q", a.code, a.header, a.body)
	}
	if n := g.count(t, "fast", "store_unavailable") - before; n != 1 {
		t.Errorf("store_unavailable rose by %v, want 1", n)
	}
}

// TestHealthz: /healthz is a healthz.Service body, 200 ok while the store answers and 503
// unavailable (reason store_unavailable) once it does not; the answer is kept for a second of
// the gateway's clock.
func TestHealthz(t *testing.T) {
	clock := &testClock{t: time.Now()}
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", "http://127.0.0.1:1", ""), gateway.Options{Now: clock.now})
	health := func() (int, healthz.Service) {
		t.Helper()
		a := limDo(t, "GET", g.url+"/healthz")
		var h healthz.Service
		if err := json.Unmarshal([]byte(a.body), &h); err != nil {
			t.Fatalf("/healthz body %q: %v", a.body, err)
		}
		if head := limDo(t, "HEAD", g.url+"/healthz"); head.code != a.code || head.body != "" {
			t.Errorf("HEAD /healthz: %d %q, want %d and no body", head.code, head.body, a.code)
		}
		return a.code, h
	}
	if code, h := health(); code != 200 || h != healthz.OK {
		t.Fatalf("/healthz: %d %+v, want 200 ok", code, h)
	}
	g.store.Close()
	clock.add(500 * time.Millisecond)
	if code, h := health(); code != 200 || h != healthz.OK {
		t.Fatalf("/healthz within the second: %d %+v, want the kept 200 ok", code, h)
	}
	clock.add(time.Second)
	code, h := health()
	if code != 503 || h.Status != "unavailable" || h.Reason != "store_unavailable" || h.Error == "" {
		t.Fatalf("/healthz with the store closed: %d %+v, want 503 unavailable store_unavailable", code, h)
	}
	if !strings.Contains(g.log(), "gateway health: mapping store unavailable") {
		t.Errorf("the log does not say why:\n%s", g.log())
	}
}

// TestCustomerGoneIsNotAnOutage: a customer who hangs up while the gateway asks the store is
// counted canceled, not store_unavailable; a health check that hangs up does not make /healthz
// answer 503 to the next checker, the load balancer included.
func TestCustomerGoneIsNotAnOutage(t *testing.T) {
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", "http://127.0.0.1:1", ""), gateway.Options{})
	pub := g.publish(t, limID(1), "ord")
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	g.h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil).WithContext(gone))
	rec := httptest.NewRecorder()
	g.h.ServeHTTP(rec, httptest.NewRequest("GET", "/orders/"+pub, nil).WithContext(gone))
	if rec.Code == 200 {
		t.Fatalf("GET /orders/%s with the customer gone: 200, want a refusal", pub)
	}
	if c := g.count(t, "fast", "canceled"); c != 1 {
		t.Errorf("a resolve the customer left: canceled counted %v times, want 1", c)
	}
	if c := g.count(t, "fast", "store_unavailable"); c != 0 {
		t.Errorf("a resolve the customer left counted as store_unavailable %v times", c)
	}
	if a := limDo(t, "GET", g.url+"/healthz"); a.code != 200 {
		t.Fatalf("/healthz after a checker hung up: %d %q, want 200", a.code, a.body)
	}
}

// TestRateLimitFollowsTheClock: a client's burst is 2 × its rate; the next request is a 429
// with Retry-After, counted on route "", until the gateway's clock has moved on.
func TestRateLimitFollowsTheClock(t *testing.T) {
	clock := &testClock{t: time.Now()}
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", "http://127.0.0.1:1", ""), gateway.Options{RatePerClient: 1, Now: clock.now})
	for i := range 2 {
		if a := limDo(t, "GET", g.url+"/nowhere"); a.code != 404 {
			t.Fatalf("request %d of the burst: %d %q", i, a.code, a.body)
		}
	}
	a := limDo(t, "GET", g.url+"/nowhere")
	if a.code != 429 || a.body != `{"error":"too many requests"}`+"\n" || a.header.Get("Retry-After") != "1" {
		t.Fatalf("past the burst: %d %v %q, want 429 with Retry-After 1", a.code, a.header, a.body)
	}
	if n := g.count(t, "", "rate_limited"); n != 1 {
		t.Errorf("rate_limited on route \"\": %v, want 1", n)
	}
	if a := limDo(t, "GET", g.url+"/nowhere"); a.code != 429 {
		t.Fatalf("again at the same time: %d %q, want 429", a.code, a.body)
	}
	clock.add(time.Second)
	if a := limDo(t, "GET", g.url+"/nowhere"); a.code != 404 {
		t.Fatalf("a second later on the gateway's clock: %d %q, want the token back", a.code, a.body)
	}
}

// TestOutcomeLabels: the outcome label's values are the ones the README and the dashboards
// name, each series there from the first scrape for every route.
func TestOutcomeLabels(t *testing.T) {
	want := []string{"ok", "not_found", "bad_request", "method_not_allowed", "rate_limited", "busy", "upstream_4xx",
		"upstream_error", "upstream_timeout", "unsafe_response", "store_unavailable", "canceled"}
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", "http://127.0.0.1:1", ""), gateway.Options{})
	if help, want := testenv.Gather(t, g.reg)["idgen_gateway_requests_total"].GetHelp(), "Customer requests by route and outcome ("+strings.Join(want, ", ")+")."; help != want {
		t.Errorf("help %q, want %q", help, want)
	}
	for _, route := range []string{"slow", "fast"} {
		for _, o := range want {
			if n := g.count(t, route, o); n != 0 {
				t.Errorf("{route=%q,outcome=%q} = %v before any request", route, o, n)
			}
		}
	}
	for _, o := range []string{"not_found", "rate_limited", "busy"} {
		g.count(t, "", o)
	}
}
