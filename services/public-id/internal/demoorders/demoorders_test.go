package demoorders_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/services/public-id/internal/demoorders"
)

// fakeGenerator is a fake of a generator's REST API: POST /v1/ids with body {} answers the next
// ID of a counter, in the generator's shape.
type fakeGenerator struct {
	mu    sync.Mutex
	next  int64
	calls int
	down  bool
}

func (g *fakeGenerator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/ids" || string(b) != "{}" {
		http.Error(w, `{"error":"fake generator: unexpected request"}`, http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down {
		http.Error(w, `{"error":"not issuing"}`, http.StatusServiceUnavailable)
		return
	}
	g.calls++
	g.next += 1000003
	fmt.Fprintf(w, `{"id":"%d","id_num":%d}`, g.next, g.next)
}

// fakePublicIDs is a fake of the public-ID service's internal API: POST /v1/public-ids publishes
// an internal ID under a known resource (idempotently), and the test resolves through toInternal.
type fakePublicIDs struct {
	mu         sync.Mutex
	resources  map[string]bool
	toPublic   map[int64]string
	toInternal map[string]int64
}

func newFakePublicIDs(resources ...string) *fakePublicIDs {
	f := &fakePublicIDs{resources: map[string]bool{}, toPublic: map[int64]string{}, toInternal: map[string]int64{}}
	for _, r := range resources {
		f.resources[r] = true
	}
	return f
}

func (f *fakePublicIDs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InternalID string `json:"internal_id"`
		Resource   string `json:"resource"`
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/public-ids" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":"fake public-ID service: unexpected request"}`, http.StatusBadRequest)
		return
	}
	in, err := strconv.ParseInt(req.InternalID, 10, 64)
	if err != nil {
		http.Error(w, `{"error":"internal_id"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.resources[req.Resource] {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"unknown resource %q"}`, req.Resource)
		return
	}
	pub, ok := f.toPublic[in]
	if !ok {
		pub = fmt.Sprintf("%s_Pub%c%d", req.Resource, 'A'+len(f.toPublic)%26, len(f.toPublic))
		f.toPublic[in], f.toInternal[pub] = pub, in
	}
	fmt.Fprintf(w, `{"public_id":%q}`, pub)
}

func (f *fakePublicIDs) resolve(t *testing.T, pub string) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.toInternal[pub]
	if !ok {
		t.Fatalf("public ID %q was never published", pub)
	}
	return strconv.FormatInt(in, 10)
}

type env struct {
	t   *testing.T
	h   http.Handler
	gen *fakeGenerator
	pub *fakePublicIDs
}

func newEnv(t *testing.T) *env {
	t.Helper()
	gen, pub := &fakeGenerator{next: 7_000_000_000_000}, newFakePublicIDs("ord", "cus")
	genSrv, pubSrv := httptest.NewServer(gen), httptest.NewServer(pub)
	t.Cleanup(genSrv.Close)
	t.Cleanup(pubSrv.Close)
	clock := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	svc, err := demoorders.New(context.Background(), filepath.Join(t.TempDir(), "orders.db"), demoorders.Options{
		Generator: genSrv.URL + "/",
		PublicIDs: pubSrv.URL,
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(time.Second)
			return clock
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return &env{t: t, h: svc, gen: gen, pub: pub}
}

func (e *env) do(method, path, body string) (int, string) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, httptest.NewRequest(method, path, rd))
	return rec.Code, rec.Body.String()
}

func (e *env) checkout(body string) (ord, cus string) {
	e.t.Helper()
	code, out := e.do("POST", "/internal/checkout", body)
	if code != http.StatusCreated {
		e.t.Fatalf("checkout %s: %d %s", body, code, out)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 2 {
		e.t.Fatalf("checkout answer %s: want exactly {order, customer}", out)
	}
	if !strings.HasPrefix(got["order"], "ord_") || !strings.HasPrefix(got["customer"], "cus_") {
		e.t.Fatalf("checkout answer %s: want ord_… and cus_…", out)
	}
	e.pub.mu.Lock()
	defer e.pub.mu.Unlock()
	for _, in := range e.pub.toInternal {
		if strings.Contains(out, strconv.FormatInt(in, 10)) {
			e.t.Fatalf("checkout answer %s carries internal ID %d", out, in)
		}
	}
	return got["order"], got["customer"]
}

type order struct {
	ID         string            `json:"id"`
	CustomerID string            `json:"customer_id"`
	Status     string            `json:"status"`
	TotalCents int64             `json:"total_cents"`
	Currency   string            `json:"currency"`
	CreatedAt  string            `json:"created_at"`
	Items      []demoorders.Item `json:"items"`
}

func decodeStrict(t *testing.T, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
}

func TestCheckoutThenRead(t *testing.T) {
	e := newEnv(t)
	ord, cus := e.checkout(`{"customer":"Ada","items":[{"sku":"book-1","quantity":2,"unit_cents":2100}]}`)
	oid, cid := e.pub.resolve(t, ord), e.pub.resolve(t, cus)

	code, body := e.do("GET", "/internal/orders/"+oid, "")
	if code != http.StatusOK {
		t.Fatalf("GET order: %d %s", code, body)
	}
	var o order
	decodeStrict(t, body, &o)
	if o.ID != oid || o.CustomerID != cid || o.Status != "placed" || o.TotalCents != 4200 || o.Currency != "EUR" ||
		len(o.Items) != 1 || o.Items[0] != (demoorders.Item{SKU: "book-1", Quantity: 2, UnitCents: 2100}) {
		t.Fatalf("order %s: unexpected %+v", body, o)
	}
	if ts, err := time.Parse(time.RFC3339, o.CreatedAt); err != nil || ts.Year() != 2030 {
		t.Fatalf("created_at %q: want RFC 3339 from the clock (%v)", o.CreatedAt, err)
	}

	// The same name reuses the customer: one generator ID for the new order only.
	calls := e.gen.calls
	ord2, cus2 := e.checkout(`{"customer":" Ada ","items":[{"sku":"pen","quantity":1,"unit_cents":150},{"sku":"ink_2","quantity":3,"unit_cents":0}]}`)
	if cus2 != cus || ord2 == ord || e.gen.calls != calls+1 {
		t.Fatalf("second checkout: customer %s (want %s), order %s, generator calls %d (want %d)", cus2, cus, ord2, e.gen.calls, calls+1)
	}
	e.checkout(`{"customer":"Grace","items":[{"sku":"x","quantity":1,"unit_cents":1}]}`)

	list := func(query string) []order {
		t.Helper()
		code, body := e.do("GET", "/internal/customers/"+cid+"/orders"+query, "")
		if code != http.StatusOK {
			t.Fatalf("list %s: %d %s", query, code, body)
		}
		var out struct {
			CustomerID string  `json:"customer_id"`
			Orders     []order `json:"orders"`
		}
		decodeStrict(t, body, &out)
		if out.CustomerID != cid || out.Orders == nil {
			t.Fatalf("list %s: %s", query, body)
		}
		return out.Orders
	}
	ids := func(os []order) string {
		var s []string
		for _, o := range os {
			s = append(s, o.ID)
		}
		return strings.Join(s, ",")
	}
	oid2 := e.pub.resolve(t, ord2)
	if got, want := ids(list("")), oid2+","+oid; got != want {
		t.Fatalf("orders newest first: got %s, want %s", got, want)
	}
	if got := ids(list("?limit=1")); got != oid2 {
		t.Fatalf("limit=1: got %s, want %s", got, oid2)
	}

	code, body = e.do("POST", "/internal/orders/"+oid+":ship", "")
	decodeStrict(t, body, &o)
	if code != http.StatusOK || o.ID != oid || o.Status != "shipped" {
		t.Fatalf("ship: %d %s", code, body)
	}
	if got := ids(list("?status=shipped")); got != oid {
		t.Fatalf("status=shipped: got %s, want %s", got, oid)
	}
	if got := ids(list("?status=placed&limit=50")); got != oid2 {
		t.Fatalf("status=placed: got %s, want %s", got, oid2)
	}
	if got := list("?status=shipped&limit=1"); len(got) != 1 || got[0].TotalCents != 4200 {
		t.Fatalf("shipped order: %+v", got)
	}
}

func TestErrors(t *testing.T) {
	e := newEnv(t)
	_, cus := e.checkout(`{"customer":"Ada","items":[{"sku":"book-1","quantity":1,"unit_cents":100}]}`)
	cid := e.pub.resolve(t, cus)
	for _, c := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/internal/orders/999", "", 404, `{"error":"order 999 not found"}`},
		{"POST", "/internal/orders/999:ship", "", 404, `{"error":"order 999 not found"}`},
		{"GET", "/internal/orders/abc", "", 400, "want a positive decimal internal ID"},
		{"GET", "/internal/orders/0", "", 400, "want a positive decimal internal ID"},
		{"POST", "/internal/orders/999", "", 404, "no such action"},
		{"POST", "/internal/orders/999:cancel", "", 404, "no such action"},
		{"GET", "/internal/customers/5/orders", "", 404, `{"error":"customer 5 not found"}`},
		{"GET", "/internal/customers/" + cid + "/orders?status=lost", "", 400, `status \"lost\": want placed or shipped`},
		{"GET", "/internal/customers/" + cid + "/orders?limit=0", "", 400, "want 1 to 50"},
		{"GET", "/internal/customers/" + cid + "/orders?limit=51", "", 400, "want 1 to 50"},
		{"GET", "/internal/customers/" + cid + "/orders?sort=asc", "", 400, "unknown query parameter"},
		{"POST", "/internal/checkout", `not json`, 400, "want {\\\"customer\\\""},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[],"coupon":"x"}`, 400, `unknown field \"coupon\"`},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":1}]} {}`, 400, "data after the JSON object"},
		{"POST", "/internal/checkout", `{"customer":"  ","items":[{"sku":"a","quantity":1,"unit_cents":1}]}`, 400, "customer: want a name"},
		{"POST", "/internal/checkout", `{"customer":"` + strings.Repeat("x", 101) + `","items":[{"sku":"a","quantity":1,"unit_cents":1}]}`, 400, "want at most 100"},
		{"POST", "/internal/checkout", `{"customer":"Ada"}`, 400, "items: want at least one item"},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a b","quantity":1,"unit_cents":1}]}`, 400, `items[0].sku \"a b\"`},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"` + strings.Repeat("s", 65) + `","quantity":1,"unit_cents":1}]}`, 400, "items[0].sku"},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":1},{"sku":"b","quantity":0,"unit_cents":1}]}`, 400, "items[1].quantity 0: want 1 to 1000"},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":-1}]}`, 400, "items[0].unit_cents -1: want 0 to 10000000"},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":1.5,"unit_cents":1}]}`, 400, "quantity"},
		{"DELETE", "/internal/orders/1", "", 405, ""},
	} {
		code, body := e.do(c.method, c.path, c.body)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s %s %s: got %d %s, want %d containing %s", c.method, c.path, c.body, code, body, c.code, c.want)
		}
	}
	if code, body := e.do("GET", "/healthz", ""); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Errorf("healthz: %d %s", code, body)
	}
}

func TestUpstreamFailures(t *testing.T) {
	e := newEnv(t)
	setDown := func(down bool) { e.gen.mu.Lock(); e.gen.down = down; e.gen.mu.Unlock() }
	setResource := func(r string, on bool) { e.pub.mu.Lock(); e.pub.resources[r] = on; e.pub.mu.Unlock() }
	setDown(true)
	code, body := e.do("POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":1}]}`)
	if code != http.StatusBadGateway || !strings.Contains(body, "generator answered 503") || !strings.Contains(body, "not issuing") {
		t.Fatalf("generator down: %d %s", code, body)
	}
	setDown(false)
	setResource("cus", false)
	code, body = e.do("POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":1}]}`)
	if code != http.StatusBadGateway || !strings.Contains(body, `unknown resource \"cus\"`) {
		t.Fatalf("resource cus unknown: %d %s", code, body)
	}
	// No order was stored for the failed checkout.
	setResource("cus", true)
	_, cus := e.checkout(`{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":1}]}`)
	code, body = e.do("GET", "/internal/customers/"+e.pub.resolve(t, cus)+"/orders", "")
	var out struct {
		Orders []json.RawMessage `json:"orders"`
	}
	if err := json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&out); code != 200 || err != nil || len(out.Orders) != 1 {
		t.Fatalf("after a failed and a good checkout: %d %s, want one order", code, body)
	}
}
