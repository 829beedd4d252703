package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
)

// upstream answers /internal/orders/{id} with that internal ID in many JSON shapes, and a few
// special paths for failures. Every internal ID it serves is recorded.
func upstream(t *testing.T, served *[]string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/internal/orders/")
		n, _ := strconv.ParseInt(id, 10, 64)
		switch n {
		case 500:
			w.WriteHeader(500)
			io.WriteString(w, `{"error":"db down at host db-7.internal, order 500"}`)
			return
		case 501:
			time.Sleep(2 * time.Second)
		case 502:
			io.WriteString(w, `{"id":"`+strings.Repeat("9", 3<<20)+`"}`)
			return
		case 503:
			io.WriteString(w, `{"id": {"nested": 123456789012345}}`)
			return
		}
		c1, c2, c3 := n+1000001, n+2000002, n+3000003
		*served = append(*served, id, fmt.Sprint(c1), fmt.Sprint(c2), fmt.Sprint(c3))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"%s","total_cents":4200,"customer_id":%d,"note":"thanks",
			"items":[{"order_id":"%s","sku":"x"},{"order_id":%s}],
			"related":{"order_ids":["%d",%d],"customer":{"customer_id":"%d"}},"parent_id":null}`, id, c1, id, id, c2, c3, c1)
	}))
}

func setup(t *testing.T, rate float64) (*httptest.Server, *publicid.Maker, *sqlitemap.Store, *[]string) {
	t.Helper()
	var served []string
	up := upstream(t, &served)
	t.Cleanup(up.Close)
	cfg := &gateway.Config{Routes: []gateway.Route{{
		Public: "/orders/{public_id}", Upstream: up.URL + "/internal/orders/{internal_id}", Resource: "ord",
		IDFields: map[string]string{"id": "ord", "order_id": "ord", "order_ids": "ord", "customer_id": "cus", "parent_id": "ord"},
	}}}
	routesFile := filepath.Join(t.TempDir(), "routes.json")
	b, _ := json.Marshal(cfg)
	_ = writeFile(routesFile, b)
	loaded, err := gateway.LoadRoutes(routesFile)
	if err != nil {
		t.Fatal(err)
	}
	maker, _ := publicid.NewMaker(loaded.Resources()...)
	st, err := sqlitemap.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	gw := gateway.New(loaded, maker, st, prometheus.NewRegistry(), gateway.Options{RatePerClient: rate, UpstreamTimeout: time.Second, MaxBody: 1 << 20})
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return srv, maker, st, &served
}

func publish(t *testing.T, maker *publicid.Maker, st *sqlitemap.Store, in int64) string {
	t.Helper()
	pub, err := st.Publish(context.Background(), in, func() (string, error) { return maker.New("ord") })
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func fetch(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestNoInternalIDReachesCustomers(t *testing.T) {
	srv, maker, st, served := setup(t, 0)
	var bodies []string
	for i := range int64(50) {
		in := 120460138153815040 + i*7919
		pub := publish(t, maker, st, in)
		code, _, body := fetch(t, srv.URL+"/orders/"+pub)
		if code != 200 {
			t.Fatalf("GET /orders/%s: %d %s", pub, code, body)
		}
		if !strings.Contains(body, `"id":"`+pub+`"`) || !strings.Contains(body, `"customer_id":"cus_`) || !strings.Contains(body, `"parent_id":null`) {
			t.Fatalf("rewritten body: %s", body)
		}
		bodies = append(bodies, body)
	}
	leaks := 0
	for _, body := range bodies {
		for _, id := range *served {
			if strings.Contains(body, id) {
				leaks++
			}
		}
	}
	t.Logf("checked %d responses against %d internal ids served by the upstream: %d leaks", len(bodies), len(*served), leaks)
	if leaks != 0 {
		t.Fatalf("%d internal ids reached customers", leaks)
	}
	// The same internal ID always gets the same public ID: order 0's customer is stable.
	_, _, a := fetch(t, srv.URL+"/orders/"+publish(t, maker, st, 120460138153815040))
	_, _, b := fetch(t, srv.URL+"/orders/"+publish(t, maker, st, 120460138153815040))
	if a != b {
		t.Fatalf("two fetches of one order differ:\n%s\n%s", a, b)
	}
}

func TestNotFoundIsOneAnswer(t *testing.T) {
	srv, maker, _, _ := setup(t, 0)
	unknown, _ := maker.New("ord")
	wrongResource, _ := maker.New("cus")
	var first string
	for i, path := range []string{"/orders/" + unknown, "/orders/ord_!!", "/orders/garbage", "/orders/" + wrongResource, "/nothing/here", "/orders/", "/orders/" + unknown + "/x"} {
		code, _, body := fetch(t, srv.URL+path)
		if code != 404 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		if i == 0 {
			first = body
		} else if body != first {
			t.Fatalf("%s answered %q, unknown answered %q", path, body, first)
		}
	}
}

func TestUpstreamFailures(t *testing.T) {
	srv, maker, st, _ := setup(t, 0)
	for _, tt := range []struct {
		in   int64
		code int
	}{{500, 502}, {501, 504}, {502, 502}, {503, 502}} {
		code, _, body := fetch(t, srv.URL+"/orders/"+publish(t, maker, st, tt.in))
		if code != tt.code || strings.Contains(body, "db-7") || strings.Contains(body, "123456789012345") {
			t.Fatalf("upstream case %d: %d %s, want %d without upstream detail", tt.in, code, body, tt.code)
		}
	}
}

func TestRateLimit(t *testing.T) {
	srv, maker, st, _ := setup(t, 5)
	pub := publish(t, maker, st, 77)
	var ok, limited int
	for range 30 {
		code, hdr, _ := fetch(t, srv.URL+"/orders/"+pub)
		switch code {
		case 200:
			ok++
		case 429:
			limited++
			if hdr.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
	}
	if ok == 0 || limited == 0 || ok > 15 {
		t.Fatalf("%d served, %d limited at 5/s with 30 quick requests", ok, limited)
	}
}

func FuzzRewrite(f *testing.F) {
	f.Add([]byte(`{"id":"123","a":[{"id":5}],"b":{"id":null}}`))
	f.Add([]byte(`[1,2,{"id":[1,"2"]}]`))
	f.Add([]byte(`{"id":{"x":1}}`))
	fields := map[string]string{"id": "ord"}
	f.Fuzz(func(t *testing.T, body []byte) {
		var published []int64
		out, err := gateway.Rewrite(body, fields, func(in int64, _ string) (string, error) {
			published = append(published, in)
			return "ord_X" + strconv.Itoa(len(published)), nil
		})
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q: %q", body, out)
		}
		// No value under a named key survives as anything but a public ID or null.
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					if k == "id" {
						checkPublic(t, e, body)
					}
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		var v any
		_ = json.Unmarshal(out, &v)
		walk(v)
	})
}

func checkPublic(t *testing.T, v any, in []byte) {
	switch x := v.(type) {
	case nil:
	case string:
		if !strings.HasPrefix(x, "ord_X") {
			t.Fatalf("named field kept %q from %q", x, in)
		}
	case []any:
		for _, e := range x {
			checkPublic(t, e, in)
		}
	default:
		t.Fatalf("named field kept %v from %q", x, in)
	}
}
