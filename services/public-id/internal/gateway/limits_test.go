package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
)

// limID is an internal ID made a minute ago.
func limID(seq int64) int64 {
	return (time.Now().Add(-time.Minute).UnixMilli()-idcore.EpochUnixMs)<<22 | 1<<19 | 5<<10 | seq
}

// twoRoutes is a route table of two routes on two upstreams: "slow" (/customers/…) and "fast"
// (/orders/…), each with its extra route keys.
func twoRoutes(slowUp, slowKeys, fastUp, fastKeys string) string {
	route := func(name, public, up, res, keys string) string {
		return `{"name": "` + name + `", "public": "` + public + `", "upstream": "` + up + `/internal/` + name + `/{internal_id}",
  "resource": "` + res + `", ` + keys + ` "headers": {"ETag": "plain", "Location": "location"},
  "response": {"type": "object", "fields": {"id": "id:` + res + `", "note": {"type": "string", "max_len": 100000}}}}`
	}
	return `{"routes": [` + route("slow", "/customers/{public_id}", slowUp, "cus", slowKeys) + `, ` +
		route("fast", "/orders/{public_id}", fastUp, "ord", fastKeys) + `]}`
}

// limGateway is a gateway on a SQLite mapping store, served by a real net/http server.
type limGateway struct {
	url   string
	h     http.Handler // the gateway itself, for requests a test makes without a connection
	reg   *prometheus.Registry
	maker *publicid.Maker
	store *sqlitemap.Store
	logs  testenv.LogBuffer
}

func (g *limGateway) log() string { return g.logs.String() }

func newLimGateway(t *testing.T, file string, o gateway.Options) *limGateway {
	t.Helper()
	c, err := routes.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	g := &limGateway{reg: prometheus.NewRegistry()}
	if g.maker, err = publicid.NewMaker("ord", "cus"); err != nil {
		t.Fatal(err)
	}
	if g.store, err = sqlitemap.Open(context.Background(), filepath.Join(t.TempDir(), "map.db")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.store.Close() })
	o.Logger = slog.New(slog.NewJSONHandler(&g.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := gateway.New(c, g.maker, g.store, g.reg, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	g.url, g.h = srv.URL, h
	return g
}

func (g *limGateway) publish(t *testing.T, id int64, res string) string {
	t.Helper()
	pub, err := g.store.Publish(context.Background(), id, func() (string, error) { return g.maker.New(res) })
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// count reads idgen_gateway_requests_total{route,outcome}.
func (g *limGateway) count(t *testing.T, route, outcome string) float64 {
	t.Helper()
	return g.counter(t, "idgen_gateway_requests_total", testenv.Labels{"route": route, "outcome": outcome})
}

// counter reads the counter series name{labels}.
func (g *limGateway) counter(t *testing.T, name string, labels testenv.Labels) float64 {
	t.Helper()
	return testenv.GatheredMetric(t, g.reg, name, labels)
}

type limAnswer struct {
	code   int
	header http.Header
	body   string
	took   time.Duration
}

func limDo(t *testing.T, method, url string) limAnswer {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return limAnswer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return limAnswer{resp.StatusCode, resp.Header, string(b), time.Since(t0)}
}

// gate is an upstream handler's hold: every request entering counts, and waits until opened.
type gate struct {
	entered atomic.Int64
	release chan struct{}
	once    sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) waitEntered(t *testing.T, n int64) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return g.entered.Load() >= n, fmt.Sprintf("%d of %d requests reached the upstream", g.entered.Load(), n)
	})
}

func fastUpstream(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/internal/fast/")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"v1"`)
		fmt.Fprintf(w, `{"id":"%s","note":"fast"}`, id)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestRouteKeys: the route file's limits are checked with errors that say what is wrong, and a
// route's limit cannot exceed the gateway's.
func TestRouteKeys(t *testing.T) {
	for _, tt := range []struct{ keys, want string }{
		{`"timeout": "soon",`, `timeout "soon": want a duration`},
		{`"timeout": "0s",`, "want a positive duration"},
		{`"timeout": "-1s",`, "want a positive duration"},
		{`"timeout": "1m",`, "at most 25s"},
		{`"timeout": 5,`, "cannot unmarshal number"},
		{`"max_in_flight": -1,`, "max_in_flight -1: want a positive number"},
		{`"max_rewrites": -2,`, "max_rewrites -2: want a positive number"},
		{`"max_rewrite": 2,`, "unknown field"},
	} {
		_, err := routes.Parse([]byte(twoRoutes("http://a", tt.keys, "http://b", "")))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one saying %q", tt.keys, err, tt.want)
		}
	}
	if _, err := routes.Parse([]byte(twoRoutes("http://a", `"timeout": "300ms", "max_in_flight": 3, "max_rewrites": 1,`, "http://b", ""))); err != nil {
		t.Fatal(err)
	}
	maker, _ := publicid.NewMaker("ord", "cus")
	for _, tt := range []struct {
		keys string
		o    gateway.Options
		want string
	}{
		{`"max_in_flight": 2000,`, gateway.Options{}, `route "slow": max_in_flight 2000 is above the gateway's 1024`},
		{`"max_rewrites": 3,`, gateway.Options{MaxRewrites: 2}, `route "slow": max_rewrites 3 is above the gateway's 2`},
		{``, gateway.Options{MaxBody: 1 << 20, BodyBudget: 1 << 20}, "body budget of 1048576 bytes is too small"},
	} {
		c, err := routes.Parse([]byte(twoRoutes("http://a", tt.keys, "http://b", "")))
		if err != nil {
			t.Fatal(err)
		}
		_, err = gateway.New(c, maker, nil, prometheus.NewRegistry(), tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %+v: err = %v, want one saying %q", tt.keys, tt.o, err, tt.want)
		}
	}
}

// TestSlowBodyHoldsNoRewriteSlot: upstreams that trickle their bodies, four times as many as the
// gateway has rewrite slots, leave the other route answering 200 at once: reading a body holds
// no rewrite slot.
func TestSlowBodyHoldsNoRewriteSlot(t *testing.T) {
	hold := newGate(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		io.WriteString(w, `{"note":"`)
		w.(http.Flusher).Flush()
		hold.entered.Add(1)
		for {
			select {
			case <-hold.release:
				io.WriteString(w, `"}`)
				return
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				io.WriteString(w, "x")
				w.(http.Flusher).Flush()
			}
		}
	}))
	t.Cleanup(slow.Close)
	fast := fastUpstream(t)
	g := newLimGateway(t, twoRoutes(slow.URL, "", fast.URL, ""), gateway.Options{MaxRewrites: 2, RewriteWait: 500 * time.Millisecond})
	cus, ord := g.publish(t, limID(1), "cus"), g.publish(t, limID(2), "ord")
	var wg sync.WaitGroup
	slowCodes := make(chan int, 8)
	for range 8 {
		wg.Go(func() { slowCodes <- limDo(t, "GET", g.url+"/customers/"+cus).code })
	}
	hold.waitEntered(t, 8)
	for i := range 10 {
		if a := limDo(t, "GET", g.url+"/orders/"+ord); a.code != 200 {
			t.Fatalf("fast request %d while 8 bodies trickle: %d %s after %v", i, a.code, a.body, a.took)
		}
	}
	hold.open()
	wg.Wait()
	close(slowCodes)
	for code := range slowCodes {
		if code != 200 {
			t.Errorf("a trickled body: %d, want 200 once it ends", code)
		}
	}
}

// TestRouteInFlight: a route's requests beyond its max_in_flight get 503 with Retry-After,
// counted as busy on that route, while the other route answers.
func TestRouteInFlight(t *testing.T) {
	hold := newGate(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hold.entered.Add(1)
		select {
		case <-hold.release:
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(slow.Close)
	fast := fastUpstream(t)
	g := newLimGateway(t, twoRoutes(slow.URL, `"max_in_flight": 2,`, fast.URL, ""), gateway.Options{MaxInFlight: 16})
	cus, ord := g.publish(t, limID(1), "cus"), g.publish(t, limID(2), "ord")
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if a := limDo(t, "GET", g.url+"/customers/"+cus); a.code != 200 {
				t.Errorf("within the limit: %d %s", a.code, a.body)
			}
		})
	}
	hold.waitEntered(t, 2)
	a := limDo(t, "GET", g.url+"/customers/"+cus)
	if a.code != 503 || a.header.Get("Retry-After") != "1" || strings.TrimSpace(a.body) != `{"error":"service busy, retry later"}` {
		t.Errorf("over the route's limit: %d %v %s", a.code, a.header, a.body)
	}
	// The fast route's own limit is half the gateway's: 8, none of it taken.
	for range 8 {
		if a := limDo(t, "GET", g.url+"/orders/"+ord); a.code != 200 {
			t.Errorf("the other route: %d %s", a.code, a.body)
		}
	}
	hold.open()
	wg.Wait()
	if n := g.count(t, "slow", "busy"); n != 1 {
		t.Errorf("busy{route=slow} = %v, want 1", n)
	}
	if n := g.count(t, "", "busy") + g.count(t, "fast", "busy"); n != 0 {
		t.Errorf("busy elsewhere = %v, want 0", n)
	}
}

// gauge reads a gauge of the gateway's registry by its route label.
func (g *limGateway) gauge(t *testing.T, name, route string) float64 {
	t.Helper()
	return testenv.GatheredMetric(t, g.reg, name, testenv.Labels{"route": route})
}

// TestBodyBudget: bodies take the budget as they grow; a route's bodies can hold half of it, the
// next one gets 503 at once (it waits for nothing), the other route still has its half, and
// every byte comes back.
func TestBodyBudget(t *testing.T) {
	hold := newGate(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		io.WriteString(w, `{"note":"`+strings.Repeat("x", 12<<10))
		w.(http.Flusher).Flush()
		hold.entered.Add(1)
		select {
		case <-hold.release:
			io.WriteString(w, `"}`)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	fast := fastUpstream(t)
	// 64 KiB of budget, 32 KiB a route: a 12 KiB body read so far holds 16 KiB (4 + 4 + 8).
	g := newLimGateway(t, twoRoutes(slow.URL, "", fast.URL, ""), gateway.Options{MaxBody: 16 << 10, BodyBudget: 64 << 10})
	cus, ord := g.publish(t, limID(1), "cus"), g.publish(t, limID(2), "ord")
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if a := limDo(t, "GET", g.url+"/customers/"+cus); a.code != 200 {
				t.Errorf("within the budget: %d %s", a.code, a.body)
			}
		})
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		v := g.gauge(t, "idgen_gateway_body_bytes", "slow")
		return v == 32<<10, fmt.Sprintf("body_bytes{route=slow} = %v, want %d once both bodies are read", v, 32<<10)
	})
	// A third body would wait on the upstream until the gate opens, or for the route's 5 s.
	a := limDo(t, "GET", g.url+"/customers/"+cus)
	if a.code != 503 || a.header.Get("Retry-After") != "1" || a.took > 3*time.Second {
		t.Errorf("a third body over the route's budget: %d %s after %v, want 503 at once", a.code, a.body, a.took)
	}
	if a := limDo(t, "GET", g.url+"/orders/"+ord); a.code != 200 {
		t.Errorf("the other route: %d %s", a.code, a.body)
	}
	hold.open()
	wg.Wait()
	if n := g.count(t, "slow", "busy"); n != 1 {
		t.Errorf("busy{route=slow} = %v, want 1", n)
	}
	for _, route := range []string{"slow", "fast"} {
		if n := g.gauge(t, "idgen_gateway_body_bytes", route); n != 0 {
			t.Errorf("body_bytes{route=%s} = %v once every request is answered, want 0", route, n)
		}
	}
}

// TestRouteTimeout: a route's timeout bounds the upstream's headers and its body alike; both are
// 504, counted as upstream_timeout on that route.
func TestRouteTimeout(t *testing.T) {
	stall := make(chan struct{})
	t.Cleanup(func() { close(stall) })
	var mode atomic.Value // "headers" or "body"
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mode.Load() == "body" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(200)
			io.WriteString(w, `{"note":"abc`)
			w.(http.Flusher).Flush()
		}
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	fast := fastUpstream(t)
	g := newLimGateway(t, twoRoutes(slow.URL, `"timeout": "200ms",`, fast.URL, ""), gateway.Options{})
	cus := g.publish(t, limID(1), "cus")
	for i, m := range []string{"headers", "body"} {
		mode.Store(m)
		a := limDo(t, "GET", g.url+"/customers/"+cus)
		if a.code != 504 || strings.TrimSpace(a.body) != `{"error":"gateway timeout"}` || a.took > 3*time.Second {
			t.Errorf("stalled %s: %d %s after %v, want 504 after about 200ms", m, a.code, a.body, a.took)
		}
		if n := g.count(t, "slow", "upstream_timeout"); n != float64(i+1) {
			t.Errorf("after stalled %s: upstream_timeout{route=slow} = %v, want %d", m, n, i+1)
		}
	}
	if n := g.count(t, "slow", "upstream_error"); n != 0 {
		t.Errorf("upstream_error{route=slow} = %v, want 0", n)
	}
}

// TestHeadIsGet: a HEAD gets exactly the status and headers of a GET (Content-Type and
// Content-Length included) and no body, whatever the upstream answers; the upstream sees a GET.
func TestHeadIsGet(t *testing.T) {
	var mu sync.Mutex
	var methods []string
	cases := map[string]func(w http.ResponseWriter, id string){
		"ok": func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("ETag", `"v7"`)
			fmt.Fprintf(w, `{"id":"%s","note":"hello","dropped":1}`, id)
		},
		"empty":    func(w http.ResponseWriter, id string) { w.WriteHeader(204) },
		"notfound": func(w http.ResponseWriter, id string) { w.WriteHeader(404) },
		"conflict": func(w http.ResponseWriter, id string) { w.WriteHeader(409); io.WriteString(w, "locked") },
		"error":    func(w http.ResponseWriter, id string) { w.WriteHeader(500) },
		"unsafe": func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"note":"order %s"}`, id)
		},
		"redirect": func(w http.ResponseWriter, id string) {
			w.Header().Set("Location", "/internal/fast/"+id)
			w.WriteHeader(302)
		},
	}
	var which atomic.Value
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		methods = append(methods, r.Method)
		mu.Unlock()
		cases[which.Load().(string)](w, r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:])
	}))
	t.Cleanup(up.Close)
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", up.URL, ""), gateway.Options{})
	path := "/orders/" + g.publish(t, limID(1), "ord")
	for name := range cases {
		which.Store(name)
		get, head := limDo(t, "GET", g.url+path), limDo(t, "HEAD", g.url+path)
		for _, h := range []http.Header{get.header, head.header} {
			h.Del("Date")
			h.Del("X-Request-Id") // each request's own
		}
		if get.code != head.code || fmt.Sprint(get.header) != fmt.Sprint(head.header) || head.body != "" {
			t.Errorf("%s: GET %d %v, HEAD %d %v %q: want the same status and headers, no body", name, get.code, get.header, head.code, head.header, head.body)
		}
		if get.body != "" && (get.header.Get("Content-Type") != "application/json" || get.header.Get("Content-Length") != strconv.Itoa(len(get.body))) {
			t.Errorf("%s: GET %d %v %q: want Content-Type and Content-Length", name, get.code, get.header, get.body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range methods {
		if m != "GET" {
			t.Errorf("the upstream received %s", m)
		}
	}
}

// TestFailureLogHoldsNoValue: a failed upstream exchange is logged without the upstream URL
// (which holds the internal ID) or the upstream's own words (a reason phrase).
func TestFailureLogHoldsNoValue(t *testing.T) {
	id := limID(3)
	// A raw upstream: the reason phrase of its 503 names the internal ID.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				fmt.Fprintf(c, "HTTP/1.1 503 order %d is locked by txn %x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", id, id)
			}()
		}
	}()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // connection refused
	g := newLimGateway(t, twoRoutes(closed.URL, "", "http://"+l.Addr().String(), ""), gateway.Options{})
	for _, p := range []string{"/customers/" + g.publish(t, id, "cus"), "/orders/" + g.publish(t, id+1, "ord")} {
		if a := limDo(t, "GET", g.url+p); a.code != 502 {
			t.Errorf("%s: %d %s, want 502", p, a.code, a.body)
		}
	}
	log := g.log()
	if strings.Count(log, "gateway request failed") != 2 {
		t.Fatalf("want two failures logged:\n%s", log)
	}
	for _, v := range []string{strconv.FormatInt(id, 10), strconv.FormatInt(id+1, 10), strconv.FormatInt(id, 16), "locked"} {
		if strings.Contains(log, v) {
			t.Errorf("the log holds %s:\n%s", v, log)
		}
	}
}

// TestPublishManyIDs: a response of many id fields (past the ones publish matches by a scan)
// gets each ID's public ID, repeats included, and one ID declared as two resources there is
// unsafe, as it is among a few.
func TestPublishManyIDs(t *testing.T) {
	var body atomic.Value
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body.Load().(string))
	}))
	t.Cleanup(up.Close)
	g := newLimGateway(t, `{"routes": [{"name": "order", "public": "/orders/{public_id}",
	  "upstream": "`+up.URL+`/internal/orders/{internal_id}", "resource": "ord",
	  "response": {"type": "object", "fields": {"items": {"type": "array", "max_items": 100, "items": "id:ord"}, "customer": "id:cus"}}}]}`,
		gateway.Options{})
	pub := g.publish(t, limID(40), "ord")
	for _, n := range []int{3, 30} {
		// Each distinct ID made once: limID reads the clock, which may pass a millisecond
		// between two calls, and then the repeats would be other IDs.
		distinct := make([]int64, n/3+1)
		for k := range distinct {
			distinct[k] = limID(int64(41 + k))
		}
		var ids []string
		for i := range n {
			ids = append(ids, fmt.Sprintf(`"%d"`, distinct[i%len(distinct)]))
		}
		body.Store(`{"items":[` + strings.Join(ids, ",") + `]}`)
		a := limDo(t, "GET", g.url+"/orders/"+pub)
		var got struct{ Items []string }
		if err := json.Unmarshal([]byte(a.body), &got); a.code != 200 || err != nil || len(got.Items) != n {
			t.Fatalf("%d ids: %d %s", n, a.code, a.body)
		}
		for i, p := range got.Items {
			if j := i % (n/3 + 1); !strings.HasPrefix(p, "ord_") || p != got.Items[j] {
				t.Errorf("%d ids: item %d is %q, item %d %q", n, i, p, j, got.Items[j])
			}
		}
		body.Store(`{"items":[` + strings.Join(ids, ",") + `],"customer":` + ids[len(ids)-1] + `}`)
		if a := limDo(t, "GET", g.url+"/orders/"+pub); a.code != 502 || !strings.Contains(g.log(), "one id is declared as ord and as cus") {
			t.Errorf("%d ids, one also a customer's: %d %s; log:\n%s", n, a.code, a.body, g.log())
		}
	}
}
