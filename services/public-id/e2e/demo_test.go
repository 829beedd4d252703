package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/localstack"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/leakcheck"
)

// TestLocalDemo runs the local stack's demo as make run does (localstack.StartT: the registry,
// the generators, the demo orders upstream configured from the topology's client config, the
// public-ID service and its gateway with the shipped deploy/local/routes.json), on Redis and
// free ports, and checks that nothing a customer or the checkout gets holds an internal ID or
// its decoded fields.
func TestLocalDemo(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	s := localstack.StartT(t, localstack.Options{State: t.TempDir(), PublicIDStore: "redis:" + r.Addr,
		GatewayArgs: []string{"--rate-per-client", "0"}}, localstack.StartOptions{})
	g := &gw{api: s.Service("public-id").URL(), url: "http://" + localstack.GatewayAddr(s.Services)}
	demo := s.Service("demo-orders").URL()

	var printed []string
	checkout := func(customer string) (ord, cus string) {
		resp, err := http.Post(demo+"/internal/checkout", "application/json", strings.NewReader(
			`{"customer":"`+customer+`","items":[{"sku":"book-1","quantity":2,"unit_cents":2100}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Order, Customer string }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("checkout: %d %v", resp.StatusCode, err)
		}
		printed = append(printed, out.Order, out.Customer)
		return out.Order, out.Customer
	}
	ord1, ada := checkout("Ada")
	ord2, ada2 := checkout("Ada")
	ord3, bob := checkout("Bob")
	if ada != ada2 || ada == bob || ord1 == ord2 {
		t.Fatalf("checkouts: %s %s %s / %s %s %s", ord1, ord2, ord3, ada, ada2, bob)
	}
	a := g.do(t, "GET", "/orders/"+ord1)
	var order map[string]any
	if err := json.Unmarshal([]byte(a.body), &order); a.code != 200 || err != nil || order["id"] != ord1 || order["customer_id"] != ada {
		t.Fatalf("GET /orders/%s: %d %s", ord1, a.code, a.body)
	}
	a = g.do(t, "GET", "/customers/"+ada+"/orders?status=placed")
	if a.code != 200 || !strings.Contains(a.body, ord1) || !strings.Contains(a.body, ord2) || strings.Contains(a.body, ord3) {
		t.Fatalf("GET /customers/%s/orders: %d %s", ada, a.code, a.body)
	}
	// A page of one order, then the next through its cursor: the demo's cursor holds the last
	// order's internal ID, so the customer holds it only as a token handle.
	type page struct {
		Orders []struct {
			ID string `json:"id"`
		} `json:"orders"`
		NextCursor string `json:"next_cursor"`
	}
	var p1, p2 page
	a = g.do(t, "GET", "/customers/"+ada+"/orders?limit=1")
	if err := json.Unmarshal([]byte(a.body), &p1); a.code != 200 || err != nil || len(p1.Orders) != 1 || p1.Orders[0].ID != ord2 || !strings.HasPrefix(p1.NextCursor, "tok_") {
		t.Fatalf("GET /customers/%s/orders?limit=1: %d %s, want %s and a token handle", ada, a.code, a.body, ord2)
	}
	a = g.do(t, "GET", "/customers/"+ada+"/orders?limit=1&cursor="+p1.NextCursor)
	if err := json.Unmarshal([]byte(a.body), &p2); a.code != 200 || err != nil || len(p2.Orders) != 1 || p2.Orders[0].ID != ord1 || p2.NextCursor != "" {
		t.Fatalf("the page after the cursor: %d %s, want %s and no cursor", a.code, a.body, ord1)
	}
	if a := g.do(t, "GET", "/customers/"+bob+"/orders?cursor="+p1.NextCursor+"x"); a.code != 400 || !strings.Contains(a.body, "unknown or expired token") {
		t.Fatalf("a made-up cursor: %d %s", a.code, a.body)
	}
	if a := g.do(t, "GET", "/customers/"+ada+"/orders?status=lost"); a.code != 400 {
		t.Fatalf("status=lost: %d %s", a.code, a.body)
	}
	if a := g.do(t, "GET", "/orders/"+ada); a.code != 404 {
		t.Fatalf("a customer's public id as an order: %d %s", a.code, a.body)
	}
	// The internal IDs behind every public ID the demo showed.
	var internal []string
	for _, pub := range []string{ord1, ord2, ord3, ada, bob} {
		resp, err := http.Get(g.api + "/v1/public-ids/" + pub)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			InternalID string `json:"internal_id"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		internal = append(internal, out.InternalID)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	all := printed
	for _, s := range g.seen {
		all = append(all, s.head+s.body)
	}
	for _, seen := range all {
		lower := strings.ToLower(seen)
		for _, in := range internal {
			n, _ := strconv.ParseInt(in, 10, 64)
			if l, leaked := leakcheck.Text(seen, []int64{n}); n == 0 || leaked {
				t.Errorf("internal id %q (as %s) in what the demo showed:\n%s", in, l.Form, seen)
			}
		}
		for _, decoded := range []string{"region", "machine", "sequence", "layout"} {
			if strings.Contains(lower, decoded) {
				t.Errorf("a decoded field (%s) in what the demo showed:\n%s", decoded, seen)
			}
		}
	}
}

// TestHelp: --help prints the usage and exits 0, as every command-line tool does.
func TestHelp(t *testing.T) {
	for _, bin := range proc.BuildT(t, "../cmd/public-id", "../cmd/public-id-gateway", "../../../examples/orders/cmd/demo-orders", "../../generator/cmd/generator", "../../registry/cmd/registry") {
		out, err := exec.Command(bin, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "-listen") {
			t.Errorf("%s --help: %v\n%s", filepath.Base(bin), err, out)
		}
	}
}
