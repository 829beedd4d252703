package gateway_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/internal/leakcheck"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
)

// tokenRoutes are two routes of one upstream that page with a cursor: "list" and "archive",
// whose handles each redeem only its own.
func tokenRoutes(up string) string {
	route := func(name string) string {
		return `{"name": "` + name + `", "public": "/` + name + `/{public_id}/orders", "upstream": "` + up + `/internal/` + name + `/{internal_id}/orders",
  "resource": "cus", "query": {"cursor": "token", "limit": {"type": "int", "min": 1, "max": 50}}, "headers": {"ETag": "plain"},
  "response": {"type": "object", "fields": {
    "orders": {"type": "array", "max_items": 99, "items": {"type": "object", "fields": {"id": "id:ord", "cursor": {"type": "token", "ttl": "1s"}}}},
    "next": {"type": "token", "max_len": 200}}}}`
	}
	return `{"routes": [` + route("list") + `, ` + route("archive") + `]}`
}

// cursorUpstream answers each customer (by internal ID) its first page, and a cursor it gave the
// page after it.
type cursorUpstream struct {
	mu      sync.Mutex
	first   map[int64]string // customer → first page's body
	second  map[string]string
	cursors []string // every cursor the upstream received, decoded
	calls   int
}

func (u *cursorUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.URL.Path, "/") // /internal/list/{id}/orders
	id, _ := strconv.ParseInt(parts[3], 10, 64)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls++
	body := u.first[id]
	if c, ok := r.URL.Query()["cursor"]; ok {
		u.cursors = append(u.cursors, c[0])
		if body, ok = u.second[c[0]]; !ok {
			w.WriteHeader(http.StatusBadRequest) // a cursor this upstream never gave
			return
		}
	}
	if next := strings.Split(body, `"next":"`); len(next) == 2 {
		w.Header().Set("X-Next-Cursor", strings.TrimSuffix(next[1], `"}`)) // undeclared: dropped
	}
	w.Header().Set("ETag", `"p1"`)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, body)
}

func (u *cursorUpstream) received() (cursors []string, calls int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.cursors...), u.calls
}

// tokenCount reads idgen_gateway_tokens_total{route,op}.
func (g *limGateway) tokenCount(t *testing.T, route, op string) float64 {
	t.Helper()
	return g.counter(t, "idgen_gateway_tokens_total", testenv.Labels{"route": route, "op": op})
}

type tokenPage struct {
	Orders []struct{ ID, Cursor string } `json:"orders"`
	Next   string                        `json:"next"`
}

// TestTokens: an upstream's cursor reaches the customer only as a handle, in no header or body;
// the handle brings the upstream its exact value back, on its own route only, until its ttl; an
// unknown, malformed, expired or other route's handle is one 400 that reaches no upstream.
func TestTokens(t *testing.T) {
	customer, other, long, number, many, twice := limID(21), limID(22), limID(23), limID(24), limID(25), limID(26)
	a, b := limID(31), limID(32)
	// The next cursor holds order a's ID in base64, with characters a query must escape; each
	// order's cursor is its internal ID as it is: a token holding an ID is no leak, since it is
	// swapped.
	next := "v1+" + base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(`{"after":%d}`, a))) + "&x=%zz/é"
	u := &cursorUpstream{first: map[int64]string{
		customer: fmt.Sprintf(`{"orders":[{"id":"%d","cursor":"%d"}],"next":"%s"}`, a, a, next),
		other:    fmt.Sprintf(`{"orders":[],"next":"%s"}`, next),
		long:     `{"next":"` + strings.Repeat("x", 201) + `"}`,
		number:   `{"next":42}`,
		twice:    `{"orders":[{"cursor":"same"},{"cursor":"same"}],"next":"same"}`,
	}, second: map[string]string{
		next:                     fmt.Sprintf(`{"orders":[{"id":"%d","cursor":"%d"}],"next":""}`, b, b),
		strconv.FormatInt(a, 10): `{"orders":[],"next":""}`,
	}}
	var items []string
	for i := range 101 {
		items = append(items, fmt.Sprintf(`{"cursor":"c%d"}`, i))
	}
	u.first[many] = `{"orders":[` + strings.Join(items, ",") + `]}`
	up := httptest.NewServer(u)
	t.Cleanup(up.Close)
	g := newLimGateway(t, tokenRoutes(up.URL), gateway.Options{})
	cus, otherCus := g.publish(t, customer, "cus"), g.publish(t, other, "cus")
	leaks := []int64{customer, other, a, b}
	var seen []limAnswer
	get := func(path string) limAnswer {
		t.Helper()
		ans := limDo(t, "GET", g.url+path)
		seen = append(seen, ans)
		return ans
	}
	page := func(ans limAnswer) tokenPage {
		t.Helper()
		var p tokenPage
		if err := json.Unmarshal([]byte(ans.body), &p); ans.code != 200 || err != nil {
			t.Fatalf("%d %s: want 200 and a page", ans.code, ans.body)
		}
		return p
	}
	isHandle := func(h string) {
		t.Helper()
		body, ok := strings.CutPrefix(h, "tok_")
		if !ok || len(body) < 16 || strings.Trim(body, publicid.Alphabet) != "" || gateway.DetectorFind(detector(), h) != "" {
			t.Fatalf("%q is not a handle: want tok_ and the public IDs' alphabet, nothing like an internal ID", h)
		}
	}

	first := get("/list/" + cus + "/orders?limit=1")
	issued := time.Now() // the first page's tokens were kept before its answer
	p1 := page(first)
	isHandle(p1.Next)
	if len(p1.Orders) != 1 || p1.Orders[0].ID == "" {
		t.Fatalf("first page %s", first.body)
	}
	isHandle(p1.Orders[0].Cursor)
	if et := first.header.Get("ETag"); first.header.Get("X-Next-Cursor") != "" || et == "" || et == `"p1"` {
		t.Fatalf("headers %v: the undeclared cursor header passed, or the gateway's own ETag is not in place of the upstream's", first.header)
	}
	if got := g.tokenCount(t, "list", "issued"); got != 2 {
		t.Fatalf("issued %v tokens, want 2", got)
	}
	// An order's cursor (ttl 1s) brings back the internal ID it hid. (After its second it may
	// have expired, on a slow machine: then it is refused, as the end of the test wants.)
	if ans := get("/list/" + cus + "/orders?cursor=" + p1.Orders[0].Cursor); ans.code != 200 {
		if ans.code != 400 || time.Since(issued) < time.Second {
			t.Fatalf("an order's cursor: %d %s", ans.code, ans.body)
		}
	} else if cursors, _ := u.received(); len(cursors) != 1 || cursors[0] != strconv.FormatInt(a, 10) {
		t.Fatalf("the upstream received %q for an order's cursor, want its value %d", cursors, a)
	}

	// The handle brings the upstream its value back, byte for byte; again on a retry; and the
	// last page's empty cursor stays empty.
	for range 2 {
		p2 := page(get("/list/" + cus + "/orders?limit=1&cursor=" + url.QueryEscape(p1.Next)))
		if len(p2.Orders) != 1 || p2.Next != "" {
			t.Fatalf("second page %+v: want one order and an empty next", p2)
		}
	}
	cursors, _ := u.received()
	if cursors = cursors[len(cursors)-2:]; cursors[0] != next || cursors[1] != next {
		t.Fatalf("the upstream received cursors %q, want %q twice", cursors, next)
	}

	// Refused, all alike, and no upstream asked: a handle of the other route, made up, malformed,
	// a public ID, the upstream's own value.
	archive := page(get("/archive/" + otherCus + "/orders"))
	isHandle(archive.Next)
	_, calls := u.received()
	made := "tok_" + strings.Repeat(publicid.Alphabet[:11], 2)
	refusal := `{"error":"query parameter cursor: unknown or expired token"}`
	for _, h := range []string{archive.Next, made, "tok_", "tok_!!", "nope", cus, next, p1.Next + "x", strings.ToUpper(p1.Next)} {
		ans := get("/list/" + cus + "/orders?cursor=" + url.QueryEscape(h))
		if ans.code != 400 || strings.TrimSpace(ans.body) != refusal {
			t.Errorf("cursor %q: %d %s, want 400 %s", h, ans.code, ans.body, refusal)
		}
	}
	if ans := get("/archive/" + otherCus + "/orders?cursor=" + p1.Next); ans.code != 400 || strings.TrimSpace(ans.body) != refusal {
		t.Errorf("list's handle on archive: %d %s, want 400 %s", ans.code, ans.body, refusal)
	}
	if _, after := u.received(); after != calls {
		t.Errorf("refused handles reached the upstream: %d calls, want %d", after, calls)
	}
	if got := g.tokenCount(t, "list", "refused"); got != 9 {
		t.Errorf("list refused %v handles, want 9", got)
	}
	if got := g.tokenCount(t, "list", "redeemed"); got != 3 {
		t.Errorf("list redeemed %v handles, want 3", got)
	}

	// A token breaking its type is an unsafe response: too long, a number; and a body of more
	// items than max_items (99, so that a response holds at most 100 tokens).
	for _, id := range []int64{long, number, many} {
		if ans := get("/list/" + g.publish(t, id, "cus") + "/orders"); ans.code != 502 {
			t.Errorf("customer %d: %d %s, want 502", id, ans.code, ans.body)
		}
	}
	// One value twice in a body with one ttl is one handle; with another ttl, another.
	before := g.tokenCount(t, "list", "issued")
	dup := page(get("/list/" + g.publish(t, twice, "cus") + "/orders"))
	if len(dup.Orders) != 2 || dup.Orders[0].Cursor != dup.Orders[1].Cursor || dup.Next == dup.Orders[0].Cursor {
		t.Errorf("one value three times: %+v, want one handle for the orders' and another for next", dup)
	}
	if got := g.tokenCount(t, "list", "issued"); got != before+2 {
		t.Errorf("one value three times issued %v tokens, want 2", got-before)
	}

	// The order's cursor (ttl 1s) expires and is then refused like an unknown one; the next
	// cursor (ttl 1h) still passes.
	time.Sleep(time.Until(issued.Add(time.Second + 50*time.Millisecond)))
	if ans := get("/list/" + cus + "/orders?cursor=" + p1.Orders[0].Cursor); ans.code != 400 || strings.TrimSpace(ans.body) != refusal {
		t.Errorf("an expired handle: %d %s, want 400 %s", ans.code, ans.body, refusal)
	}
	if ans := get("/list/" + cus + "/orders?cursor=" + url.QueryEscape(p1.Next)); ans.code != 200 {
		t.Errorf("a handle within its ttl: %d %s", ans.code, ans.body)
	}

	for _, ans := range seen {
		var head strings.Builder
		_ = ans.header.Write(&head)
		if strings.Contains(head.String(), next) || strings.Contains(ans.body, next) || strings.Contains(ans.body, `"same"`) {
			t.Errorf("an upstream's token reached the customer:\n%s%s", head.String(), ans.body)
		}
		if l, ok := leakcheck.Text(head.String(), leaks); ok {
			t.Errorf("internal id %d (as %s) in a header:\n%s", l.ID, l.Form, head.String())
		}
		if l, ok := leakcheck.JSON(ans.body, leaks); ok {
			t.Errorf("internal id %d (as %s) in a body:\n%s", l.ID, l.Form, ans.body)
		}
	}
}

// countingStore is a store that counts the tokens asked to be kept (puts) and those it kept.
type countingStore struct {
	mapping.Store
	puts, kept atomic.Int64
}

func (s *countingStore) PutToken(ctx context.Context, handle string, value []byte, ttl time.Duration) error {
	s.puts.Add(1)
	err := s.Store.PutToken(ctx, handle, value, ttl)
	if err == nil {
		s.kept.Add(1)
	}
	return err
}

// TestTokenHandlesAreStable: one value on one route gets one handle through a ttl/2 window, from
// every gateway of the store, so a page asked twenty times has one body and one ETag (a 304 for
// If-None-Match) and keeps each of its tokens once; a HEAD keeps none, though it computes the
// same handles (the same ETag as the GET's); the handle redeems on its route only; the next
// window gives other handles, and the earlier ones still redeem.
func TestTokenHandlesAreStable(t *testing.T) {
	customer, quiet := limID(41), limID(42)
	a, b := limID(43), limID(44)
	next := "after-" + strconv.FormatInt(b, 10)
	u := &cursorUpstream{first: map[int64]string{
		// Four distinct tokens: a's and b's cursors (one twice), next; and the empty last one.
		customer: fmt.Sprintf(`{"orders":[{"id":"%d","cursor":"c-a"},{"id":"%d","cursor":"c-b"},{"id":"%d","cursor":"c-a"}],"next":"%s"}`, a, b, a, next),
		quiet:    `{"orders":[{"cursor":"c-q"}],"next":""}`,
	}, second: map[string]string{next: `{"orders":[],"next":""}`}}
	up := httptest.NewServer(u)
	t.Cleanup(up.Close)
	c, err := routes.Parse([]byte(strings.ReplaceAll(tokenRoutes(up.URL), `"ttl": "1s"`, `"ttl": "1m"`)))
	if err != nil {
		t.Fatal(err)
	}
	maker, err := publicid.NewMaker("ord", "cus")
	if err != nil {
		t.Fatal(err)
	}
	inner, err := sqlitemap.Open(context.Background(), filepath.Join(t.TempDir(), "map.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inner.Close() })
	store := &countingStore{Store: inner}
	clock := &testClock{t: time.Now()}
	serve := func() (string, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		h, err := gateway.New(c, maker, store, reg, gateway.Options{Now: clock.now})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL, reg
	}
	gw, reg := serve()
	pub := func(id int64) string {
		p, err := store.Publish(context.Background(), id, func() (string, error) { return maker.New("cus") })
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cus, quietCus := pub(customer), pub(quiet)
	list := gw + "/list/" + cus + "/orders"

	// A HEAD computes the handles and keeps none: not even a put the store refuses.
	head := do(t, "HEAD", list)
	if head.code != 200 || store.puts.Load() != 0 {
		t.Fatalf("HEAD: %d, %d tokens put; want 200 and none", head.code, store.puts.Load())
	}
	first := do(t, "GET", list)
	tag := first.header.Get("ETag")
	if first.code != 200 || tag == "" || head.header.Get("ETag") != tag || head.header.Get("Content-Length") != first.header.Get("Content-Length") {
		t.Fatalf("GET: %d ETag %q Content-Length %q; HEAD's: %q %q; want one ETag and length", first.code, tag,
			first.header.Get("Content-Length"), head.header.Get("ETag"), head.header.Get("Content-Length"))
	}
	for range 19 {
		if again := do(t, "GET", list); again.body != first.body || again.header.Get("ETag") != tag {
			t.Fatalf("the same page again: ETag %q, body\n%s\nwant %q,\n%s", again.header.Get("ETag"), again.body, tag, first.body)
		}
	}
	if got := store.kept.Load(); got != 3 {
		t.Errorf("20 GETs of a page of 3 distinct tokens kept %d, want 3", got)
	}
	lim := &limGateway{reg: reg}
	if got := lim.tokenCount(t, "list", "issued"); got != 3 {
		t.Errorf("issued %v tokens, want 3", got)
	}
	if nm := do(t, "GET", list, "If-None-Match", tag); nm.code != 304 {
		t.Errorf("If-None-Match the page's ETag: %d, want 304", nm.code)
	}
	// Another gateway of the store gives the same handles (one key, in the store), keeping none.
	gw2, _ := serve()
	if other := do(t, "GET", gw2+"/list/"+cus+"/orders"); other.body != first.body || store.kept.Load() != 3 {
		t.Errorf("another gateway: %s (%d tokens kept), want %s (3)", other.body, store.kept.Load(), first.body)
	}
	// A HEAD of a page never asked keeps nothing either.
	puts := store.puts.Load()
	if h := do(t, "HEAD", gw+"/list/"+quietCus+"/orders"); h.code != 200 || store.puts.Load() != puts {
		t.Errorf("HEAD of another page: %d, %d tokens put; want 200 and none", h.code, store.puts.Load()-puts)
	}

	var p tokenPage
	if err := json.Unmarshal([]byte(first.body), &p); err != nil || p.Next == "" || len(p.Orders) != 3 {
		t.Fatalf("page %s: %v", first.body, err)
	}
	if p.Orders[0].Cursor != p.Orders[2].Cursor || p.Orders[0].Cursor == p.Orders[1].Cursor {
		t.Errorf("cursors %+v: want one handle for one value, another for another", p.Orders)
	}
	// The handle redeems on its route; the other route's handle of the same value is another, and
	// each route refuses the other's.
	if ans := do(t, "GET", list+"?cursor="+url.QueryEscape(p.Next)); ans.code != 200 {
		t.Errorf("the next handle: %d %s", ans.code, ans.body)
	} else if cursors, _ := u.received(); len(cursors) != 1 || cursors[0] != next {
		t.Errorf("the upstream received %q, want %q", cursors, next)
	}
	var archive tokenPage
	if ans := do(t, "GET", gw+"/archive/"+cus+"/orders"); json.Unmarshal([]byte(ans.body), &archive) != nil || archive.Next == "" || archive.Next == p.Next {
		t.Errorf("the archive route's page %s: want a handle of its own for the same value", ans.body)
	}
	refusal := `{"error":"query parameter cursor: unknown or expired token"}`
	if ans := do(t, "GET", gw+"/archive/"+cus+"/orders?cursor="+url.QueryEscape(p.Next)); ans.code != 400 || strings.TrimSpace(ans.body) != refusal {
		t.Errorf("list's handle on archive: %d %s, want 400 %s", ans.code, ans.body, refusal)
	}

	// The next window (half of next's ttl of an hour): other handles, kept anew; the earlier ones
	// were kept for their whole ttl and still redeem.
	clock.add(30 * time.Minute)
	later := do(t, "GET", list)
	var p2 tokenPage
	if err := json.Unmarshal([]byte(later.body), &p2); err != nil || p2.Next == p.Next || later.header.Get("ETag") == tag {
		t.Errorf("the next window: %s ETag %q; want other handles and another ETag than %q", later.body, later.header.Get("ETag"), tag)
	}
	if ans := do(t, "GET", list+"?cursor="+url.QueryEscape(p.Next)); ans.code != 200 {
		t.Errorf("the last window's handle: %d %s, want 200", ans.code, ans.body)
	}
	if ans := do(t, "GET", list+"?cursor="+url.QueryEscape(p2.Next)); ans.code != 200 {
		t.Errorf("this window's handle: %d %s, want 200", ans.code, ans.body)
	}
}
