package orders_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/idgen/idgen/examples/orders"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/localstack"
	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
)

// The services the example calls, as real processes: a generator on an SQLite lease table and
// the public-ID service on Redis.

func startGenerator(t *testing.T) string {
	t.Helper()
	return startGeneratorIn(t, "us-east-1")
}

func startGeneratorIn(t *testing.T, region string) string {
	t.Helper()
	bin := proc.BuildT(t, "../../services/generator/cmd/generator")[0]
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	proc.StartT(t, proc.Spec{Bin: bin, HealthURL: "http://" + addr + "/healthz", Args: cmdline.Generator{Region: region, Listen: addr,
		LeaseStore: "sqlite:" + filepath.Join(t.TempDir(), "leases.db")}.Args()})
	return "http://" + addr
}

// startPublicIDs starts the public-ID service publishing resources (the first is its default) and
// returns its internal URL.
func startPublicIDs(t *testing.T, resources string) string {
	t.Helper()
	bin := proc.BuildT(t, "../../services/public-id/cmd/public-id")[0]
	r := testenv.StartRedis(t, t.TempDir())
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	proc.StartT(t, proc.Spec{Bin: bin, HealthURL: "http://" + addr + "/healthz", Args: []string{"--insecure-dev",
		"--listen", addr, "--store", "redis:" + r.Addr, "--resources", resources,
		"--default-resource", strings.Split(resources, ",")[0]}})
	return "http://" + addr
}

type env struct {
	t   *testing.T
	h   http.Handler
	ids *idclient.Client
	pub idgenv1connect.PublicIdServiceClient
}

// newService runs the example in the test's process on the services at genURL and pubURL, as
// its command wires it, over the SQLite file db ("": a new one).
func newService(t *testing.T, genURL, pubURL string, idTimeout time.Duration, db string) *env {
	t.Helper()
	ids, err := idclient.New(idclient.Config{Endpoints: []string{genURL}, Batch: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ids.Close)
	pub := idgenv1connect.NewPublicIdServiceClient(&http.Client{Timeout: 5 * time.Second}, pubURL)
	clock := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	if db == "" {
		db = filepath.Join(t.TempDir(), "orders.db")
	}
	svc, err := orders.New(context.Background(), db, orders.Options{
		IDs: ids, PublicIDs: pub, IDTimeout: idTimeout,
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
	return &env{t: t, h: svc, ids: ids, pub: pub}
}

// newEnv is the example on a running generator and public-ID service.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newService(t, startGenerator(t), startPublicIDs(t, "ord,cus"), 0, "")
}

func (e *env) do(method, path, body string) (int, string) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	e.h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// resolve asks the public-ID service for the internal ID behind a public ID.
func (e *env) resolve(pub string) string {
	e.t.Helper()
	resp, err := e.pub.Resolve(context.Background(), connect.NewRequest(&idgenv1.ResolveRequest{PublicId: pub}))
	if err != nil {
		e.t.Fatalf("resolve %s: %v", pub, err)
	}
	return idcore.ID(resp.Msg.GetInternalId()).String()
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
	for _, pub := range []string{got["order"], got["customer"]} {
		if in := e.resolve(pub); strings.Contains(out, in) {
			e.t.Fatalf("checkout answer %s carries internal ID %s", out, in)
		}
	}
	return got["order"], got["customer"]
}

type order struct {
	ID         string        `json:"id"`
	CustomerID string        `json:"customer_id"`
	Status     string        `json:"status"`
	TotalCents int64         `json:"total_cents"`
	Currency   string        `json:"currency"`
	CreatedAt  string        `json:"created_at"`
	Items      []orders.Item `json:"items"`
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
	oid, cid := e.resolve(ord), e.resolve(cus)
	if d, err := idcore.ScheduleV2().Decode(mustID(t, oid)); err != nil || d.Region != 0 {
		t.Fatalf("order ID %s: want one the us-east-1 generator made (%+v, %v)", oid, d, err)
	}

	code, body := e.do("GET", "/internal/orders/"+oid, "")
	if code != http.StatusOK {
		t.Fatalf("GET order: %d %s", code, body)
	}
	var o order
	decodeStrict(t, body, &o)
	if o.ID != oid || o.CustomerID != cid || o.Status != "placed" || o.TotalCents != 4200 || o.Currency != "EUR" ||
		len(o.Items) != 1 || o.Items[0] != (orders.Item{SKU: "book-1", Quantity: 2, UnitCents: 2100}) {
		t.Fatalf("order %s: unexpected %+v", body, o)
	}
	if ts, err := time.Parse(time.RFC3339, o.CreatedAt); err != nil || ts.Year() != 2030 {
		t.Fatalf("created_at %q: want RFC 3339 from the clock (%v)", o.CreatedAt, err)
	}

	// The same name reuses the customer and its public ID.
	ord2, cus2 := e.checkout(`{"customer":" Ada ","items":[{"sku":"pen","quantity":1,"unit_cents":150},{"sku":"ink_2","quantity":3,"unit_cents":0}]}`)
	if cus2 != cus || ord2 == ord {
		t.Fatalf("second checkout: customer %s (want %s), order %s (want a new one)", cus2, cus, ord2)
	}
	e.checkout(`{"customer":"Grace","items":[{"sku":"x","quantity":1,"unit_cents":1}]}`)

	var next string // the last listing's next_cursor
	list := func(query string) []order {
		t.Helper()
		code, body := e.do("GET", "/internal/customers/"+cid+"/orders"+query, "")
		if code != http.StatusOK {
			t.Fatalf("list %s: %d %s", query, code, body)
		}
		var out struct {
			CustomerID string  `json:"customer_id"`
			Orders     []order `json:"orders"`
			NextCursor *string `json:"next_cursor"`
		}
		decodeStrict(t, body, &out)
		if out.CustomerID != cid || out.Orders == nil || out.NextCursor == nil {
			t.Fatalf("list %s: %s", query, body)
		}
		next = *out.NextCursor
		return out.Orders
	}
	ids := func(os []order) string {
		var s []string
		for _, o := range os {
			s = append(s, o.ID)
		}
		return strings.Join(s, ",")
	}
	oid2 := e.resolve(ord2)
	if got, want := ids(list("")), oid2+","+oid; got != want {
		t.Fatalf("orders newest first: got %s, want %s", got, want)
	}
	if got := ids(list("?limit=1")); got != oid2 {
		t.Fatalf("limit=1: got %s, want %s", got, oid2)
	}
	// The next page, after the cursor; the last page has none.
	if next == "" {
		t.Fatal("limit=1 of two orders gave no next_cursor")
	}
	if got := ids(list("?limit=1&cursor=" + next)); got != oid || next != "" {
		t.Fatalf("limit=1 after the cursor: got %s and next %q, want %s and none", got, next, oid)
	}
	if list(""); next != "" {
		t.Fatalf("every order in one page, yet next_cursor %q", next)
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

	// The request metrics, on the idgen services' names.
	code, body = e.do("GET", "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("metrics: %d\n%s", code, body)
	}
	if n := testenv.ParseMetrics(t, body).Get(t, "idgen_server_requests_total", testenv.Labels{"code": "ok", "protocol": "rest", "route": "/internal/checkout"}); n != 3 {
		t.Fatalf("checkouts counted: %v, want 3", n)
	}
}

// TestCommandFromClientConfig runs the command, demo-orders, as a process configured as a caller
// is: the local stack's client config file (localstack.WriteClientConfig: two regions, each the
// other's peer, from the topology's plan), and its region, eu-west-1. Its orders and customers
// get IDs, and they carry eu-west-1's region number (2): ConfigFor gave it its own region's
// generator first, not the file's first region's.
func TestCommandFromClientConfig(t *testing.T) {
	use1, euw1 := startGeneratorIn(t, "us-east-1"), startGeneratorIn(t, "eu-west-1")
	pubURL := startPublicIDs(t, "ord,cus")
	dir := t.TempDir()
	tp, err := localstack.PlanTopology(context.Background(), filepath.Join("..", ".."), nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := localstack.ClientConfigFile(dir)
	if err := localstack.WriteClientConfig(cc, tp, map[string]string{"us-east-1": use1, "eu-west-1": euw1}); err != nil {
		t.Fatal(err)
	}
	bin := proc.BuildT(t, "./cmd/demo-orders")[0]
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	proc.StartT(t, proc.Spec{Bin: bin, HealthURL: "http://" + addr + "/healthz", Args: []string{"--listen", addr,
		"--db", filepath.Join(dir, "orders.db"), "--public-ids", pubURL},
		Env: []string{"IDGEN_CLIENT_CONFIG=" + cc, "IDGEN_REGION=eu-west-1"}})

	e := &env{t: t, pub: idgenv1connect.NewPublicIdServiceClient(&http.Client{Timeout: 5 * time.Second}, pubURL)}
	resp, err := http.Post("http://"+addr+"/internal/checkout", "application/json",
		strings.NewReader(`{"customer":"Ada","items":[{"sku":"book-1","quantity":1,"unit_cents":900}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Order, Customer string }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("checkout: %d %v", resp.StatusCode, err)
	}
	for _, pub := range []string{got.Order, got.Customer} {
		d, err := idcore.ScheduleV2().Decode(mustID(t, e.resolve(pub)))
		if err != nil || !d.HasRegion || d.Region != 2 {
			t.Errorf("%s's internal ID: %+v %v: want one from eu-west-1 (region number 2), the command's region", pub, d, err)
		}
	}

	// A region the client config does not name: the command refuses to start, naming the regions there are.
	out, err := exec.Command(bin, "--listen", fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)),
		"--db", filepath.Join(dir, "other.db"), "--client-config", cc, "--region", "ap-south-1", "--public-ids", pubURL).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `ap-south-1\" (it has eu-west-1, us-east-1)`) {
		t.Errorf("--region ap-south-1: %v\n%s\nwant a refusal naming the client config's regions", err, out)
	}
}

func mustID(t *testing.T, s string) idcore.ID {
	t.Helper()
	id, err := idcore.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestErrors: every bad request is a 400 (or 404, 405, 413, 415) with the services' body,
// {"error": what is wrong, "reason": its name}, and changes nothing.
func TestErrors(t *testing.T) {
	e := newEnv(t)
	_, cus := e.checkout(`{"customer":"Ada","items":[{"sku":"book-1","quantity":1,"unit_cents":100}]}`)
	cid := e.resolve(cus)
	for _, c := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/internal/orders/999", "", 404, `{"error":"order 999 not found","reason":"not_found"}`},
		{"POST", "/internal/orders/999:ship", "", 404, `{"error":"order 999 not found","reason":"not_found"}`},
		{"GET", "/internal/orders/abc", "", 400, `want a positive decimal internal ID","reason":"bad_request"}`},
		{"GET", "/internal/orders/0", "", 400, "want a positive decimal internal ID"},
		{"POST", "/internal/orders/999", "", 404, "no such action"},
		{"POST", "/internal/orders/999:cancel", "", 404, "no such action"},
		{"GET", "/internal/customers/5/orders", "", 404, `{"error":"customer 5 not found","reason":"not_found"}`},
		{"GET", "/internal/customers/" + cid + "/orders?status=lost", "", 400, `status \"lost\": want placed or shipped`},
		{"GET", "/internal/customers/" + cid + "/orders?limit=0", "", 400, "want 1 to 50"},
		{"GET", "/internal/customers/" + cid + "/orders?limit=51", "", 400, "want 1 to 50"},
		{"GET", "/internal/customers/" + cid + "/orders?sort=asc", "", 400, "unknown query parameter"},
		{"GET", "/internal/customers/" + cid + "/orders?cursor=eyJpZCI6MH0", "", 400, "cursor: not a cursor this service gave"},
		{"GET", "/internal/customers/" + cid + "/orders?cursor=%7B%7D", "", 400, "cursor: not a cursor this service gave"},
		{"POST", "/internal/checkout", `not json`, 400, "not a valid JSON object (at byte 1); want {\\\"customer\\\""},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[],"coupon":"x"}`, 400, `unknown field \"coupon\"`},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":1}]} {}`, 400, "more than one JSON value"},
		{"POST", "/internal/checkout", `{"customer":"  ","items":[{"sku":"a","quantity":1,"unit_cents":1}]}`, 400, "customer: want a name"},
		{"POST", "/internal/checkout", `{"customer":"` + strings.Repeat("x", 101) + `","items":[{"sku":"a","quantity":1,"unit_cents":1}]}`, 400, "want at most 100"},
		{"POST", "/internal/checkout", `{"customer":"Ada"}`, 400, "items: want at least one item"},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a b","quantity":1,"unit_cents":1}]}`, 400, `items[0].sku \"a b\"`},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"` + strings.Repeat("s", 65) + `","quantity":1,"unit_cents":1}]}`, 400, "items[0].sku"},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":1},{"sku":"b","quantity":0,"unit_cents":1}]}`, 400, "items[1].quantity 0: want 1 to 1000"},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":-1}]}`, 400, "items[0].unit_cents -1: want 0 to 10000000"},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":1.5,"unit_cents":1}]}`, 400, `field \"items/0/quantity\" must be an integer`},
		{"POST", "/internal/checkout", `{"customer":"Ada","items":[{"sku":"a","quantity":10,"unit_cents":10000000},{"sku":"b","quantity":1,"unit_cents":1}]}`, 400, "total_cents 100000001: want at most 100000000"},
		{"POST", "/internal/checkout", `{"customer":"` + strings.Repeat("x", 70_000) + `"}`, 413, `"reason":"too_large"`},
		{"DELETE", "/internal/orders/1", "", 405, `"reason":"method_not_allowed"`},
		{"GET", "/internal/nothing", "", 404, `"reason":"not_found"`},
	} {
		code, body := e.do(c.method, c.path, c.body)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s %s %.80s: got %d %s, want %d containing %s", c.method, c.path, c.body, code, body, c.code, c.want)
		}
	}
	// A body that is not JSON by its Content-Type: 415, as from every idgen service.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/internal/checkout", strings.NewReader(`{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":1}]}`))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnsupportedMediaType || !strings.Contains(rec.Body.String(), "unsupported_media_type") {
		t.Errorf("a form body: %d %s", rec.Code, rec.Body.String())
	}
	// None of them stored anything: Ada still has her one order.
	if code, body := e.do("GET", "/internal/customers/"+cid+"/orders", ""); code != 200 || strings.Count(body, `"status"`) != 1 {
		t.Errorf("after the bad requests: %d %s, want Ada's one order", code, body)
	}
	if code, body := e.do("GET", "/healthz", ""); code != 200 || body != `{"status":"ok"}`+"\n" {
		t.Errorf("healthz: %d %s", code, body)
	}
}

// TestUpstreamFailures: a generator or public-ID service that is down is a 503 naming it, one that
// refuses a 502 with its words; no order is stored for a failed checkout.
func TestUpstreamFailures(t *testing.T) {
	gen, pub := startGenerator(t), startPublicIDs(t, "ord,cus")
	nothing := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)) // nothing listens there
	const body = `{"customer":"Ada","items":[{"sku":"a","quantity":1,"unit_cents":1}]}`

	noGen := newService(t, nothing, pub, 300*time.Millisecond, "")
	code, out := noGen.do("POST", "/internal/checkout", body)
	if code != http.StatusServiceUnavailable || !strings.Contains(out, `"reason":"generator_unavailable"`) || !strings.Contains(out, "no ID within 300ms") {
		t.Fatalf("generator down: %d %s", code, out)
	}

	noPub := newService(t, gen, nothing, 0, "")
	code, out = noPub.do("POST", "/internal/checkout", body)
	if code != http.StatusServiceUnavailable || !strings.Contains(out, `"reason":"public_ids_unavailable"`) || !strings.Contains(out, "public-ID service: unavailable") {
		t.Fatalf("public-ID service down: %d %s", code, out)
	}

	// A public-ID service that accepts the connection and never answers: the call's timeout ends
	// the request as a passed deadline.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hang.Close() })
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	slow := newService(t, gen, "http://"+hang.Addr().String(), 0, "")
	slow.pub = idgenv1connect.NewPublicIdServiceClient(&http.Client{Timeout: 300 * time.Millisecond}, "http://"+hang.Addr().String())
	slowSvc, err := orders.New(context.Background(), filepath.Join(t.TempDir(), "orders.db"), orders.Options{IDs: slow.ids, PublicIDs: slow.pub})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slowSvc.Close() })
	slow.h = slowSvc
	start := time.Now()
	code, out = slow.do("POST", "/internal/checkout", body)
	if code != http.StatusGatewayTimeout || !strings.Contains(out, `"reason":"deadline_exceeded"`) || time.Since(start) > 5*time.Second {
		t.Fatalf("public-ID service hanging: %d %s after %v", code, out, time.Since(start))
	}

	// A public-ID service that publishes customers but not orders: the checkout fails on the
	// order's public ID, before the order is stored.
	db := filepath.Join(t.TempDir(), "orders.db")
	noOrd := newService(t, gen, startPublicIDs(t, "cus"), 0, db)
	code, out = noOrd.do("POST", "/internal/checkout", body)
	if code != http.StatusBadGateway || !strings.Contains(out, `"reason":"public_ids_refused"`) || !strings.Contains(out, `unknown resource \"ord\"`) {
		t.Fatalf("resource ord unknown: %d %s", code, out)
	}
	// The same database behind a public-ID service that publishes both: Ada (stored by name in
	// the failed checkout) is reused, and has only the order of the checkout that succeeded.
	good := newService(t, gen, pub, 0, db)
	_, cus := good.checkout(body)
	code, out = good.do("GET", "/internal/customers/"+good.resolve(cus)+"/orders", "")
	if code != 200 || strings.Count(out, `"status"`) != 1 {
		t.Fatalf("after a failed and a good checkout: %d %s, want one order", code, out)
	}
}
