package gateway_test

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
)

// seen is what an upstream was sent: each request's headers.
type seen struct {
	mu      sync.Mutex
	headers []http.Header
}

func (s *seen) add(h http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.headers = append(s.headers, h.Clone())
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.headers)
}

func (s *seen) last() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[len(s.headers)-1]
}

// noteUpstream answers {"id": …, "note": note} for /internal/fast/ID, with its own X-Request-Id,
// ETag and Cache-Control, and records what it was sent.
func noteUpstream(t *testing.T, note func() string) (*httptest.Server, *seen) {
	s := &seen{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r.Header)
		id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "upstream-own-id")
		w.Header().Set("ETag", `"upstream-tag"`)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fmt.Fprintf(w, `{"id":"%s","note":%q}`, id, note())
	}))
	t.Cleanup(up.Close)
	return up, s
}

// do sends a request with headers (name, value, …) on a client that never decompresses.
func do(t *testing.T, method, url string, headers ...string) limAnswer {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return limAnswer{resp.StatusCode, resp.Header, string(b), time.Since(t0)}
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// loopback trusts the tests' own client as the edge proxy.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// TestRequestID: a trusted proxy's well-formed X-Request-Id reaches the upstream and comes back
// to the customer; anyone else's, or a malformed one, is replaced by a fresh one, the same the
// upstream gets; the upstream's own X-Request-Id never reaches the customer.
func TestRequestID(t *testing.T) {
	up, sent := noteUpstream(t, func() string { return "hello" })
	file := twoRoutes("http://127.0.0.1:1", "", up.URL, "")
	behind := newLimGateway(t, file, gateway.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	direct := newLimGateway(t, file, gateway.Options{})
	// A proxy that sets a header of its own; one (an ALB) whose X-Request-Id a customer chooses.
	edge := newLimGateway(t, file, gateway.Options{TrustedProxies: loopback, RequestIDHeader: "x-edge-request-id"})
	alb := newLimGateway(t, file, gateway.Options{TrustedProxies: loopback, RequestIDHeader: gateway.NoRequestIDHeader})
	for _, tt := range []struct {
		name   string
		g      *limGateway
		sent   string // "" for none
		kept   bool
		header string // default X-Request-Id
	}{
		{"the proxy's own header", edge, "edge-77", true, "X-Edge-Request-Id"},
		{"the proxy's own header, X-Request-Id", edge, "chosen-by-a-customer", false, ""},
		{"no header taken", alb, "chosen-by-a-customer", false, ""},
		{"trusted proxy", behind, "edge-4f1c:9a/b+c=", true, ""},
		{"trusted proxy, a UUID", behind, "0190b9a2-7c3e-7d4f-8a1b-2c3d4e5f6a7b", true, ""},
		{"trusted proxy, none", behind, "", false, ""},
		{"trusted proxy, a space", behind, "edge 4f1c", false, ""},
		{"trusted proxy, too long", behind, strings.Repeat("a", 129), false, ""},
		{"trusted proxy, a newline escape", behind, "a%0Ab", false, ""},
		{"untrusted peer", direct, "edge-4f1c", false, ""},
	} {
		pub := tt.g.publish(t, limID(int64(len(tt.name))), "ord")
		var headers []string
		if tt.sent != "" {
			headers = []string{cmp.Or(tt.header, "X-Request-Id"), tt.sent}
		}
		a := do(t, "GET", tt.g.url+"/orders/"+pub, headers...)
		got, upstream := a.header.Values("X-Request-Id"), sent.last().Values("X-Request-Id")
		if a.code != 200 || len(got) != 1 || len(upstream) != 1 || got[0] != upstream[0] {
			t.Errorf("%s: %d, the customer got X-Request-Id %q and the upstream %q: want one, the same", tt.name, a.code, got, upstream)
			continue
		}
		switch {
		case tt.kept && got[0] != tt.sent:
			t.Errorf("%s: X-Request-Id %q, want the proxy's %q", tt.name, got[0], tt.sent)
		case !tt.kept && !hex32.MatchString(got[0]):
			t.Errorf("%s: X-Request-Id %q, want a fresh one (32 hex digits)", tt.name, got[0])
		}
	}
	// Every answer has one, the gateway's errors and its health included; each its own.
	a, b := do(t, "GET", direct.url+"/nowhere"), do(t, "GET", direct.url+"/healthz")
	if x, y := a.header.Get("X-Request-Id"), b.header.Get("X-Request-Id"); !hex32.MatchString(x) || !hex32.MatchString(y) || x == y {
		t.Errorf("a 404 has X-Request-Id %q, /healthz %q: want each its own", x, y)
	}
	// A trace ID only from a trusted proxy.
	do(t, "GET", direct.url+"/nowhere", "X-Amzn-Trace-Id", "Root=1-67891233-abcdef012345678912345678")
	if strings.Contains(direct.log(), "trace_id") {
		t.Errorf("a customer's X-Amzn-Trace-Id reached the access log:\n%s", direct.log())
	}
	if _, err := gateway.New(&routes.Config{}, direct.maker, direct.store, prometheus.NewRegistry(), gateway.Options{RequestIDHeader: "X Request"}); err == nil {
		t.Error("a request ID header that is no header name: accepted")
	}
	if _, err := routes.Parse([]byte(strings.Replace(file, `"ETag": "plain"`, `"X-Request-Id": "plain"`, 1))); err == nil || !strings.Contains(err.Error(), "the gateway sets it itself") {
		t.Errorf("a route that passes the upstream's X-Request-Id: %v, want it refused", err)
	}
}

// accessLines are the access log's lines in a JSON log.
func accessLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "gateway request" {
			out = append(out, m)
		}
	}
	return out
}

// TestAccessLog: each request is one line at info level in the access log, its own logger, with
// the route, the method, its path as the route's template and the public ID, the status, the
// outcome, the bytes sent, the duration, the client's address and the request ID; never the
// internal ID, the query, a malformed public ID or an API key.
func TestAccessLog(t *testing.T) {
	id := limID(77)
	up, _ := noteUpstream(t, func() string { return "hello" })
	var access testenv.LogBuffer
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", up.URL, `"query": {"limit": {"type": "int", "min": 1, "max": 50}},`),
		gateway.Options{AccessLog: slog.New(slog.NewJSONHandler(&access, nil)), APIKeyHeader: "X-Api-Key", TrustedProxies: loopback})
	pub := g.publish(t, id, "ord")
	const trace = "Self=1-67891234-12456789abcdef012345678;Root=1-67891233-abcdef012345678912345678"
	ok := do(t, "GET", g.url+"/orders/"+pub+"?limit=37&secret=s3cr3t", "X-Api-Key", "key-of-customer-ada", "X-Amzn-Trace-Id", trace)
	notFound := do(t, "GET", g.url+"/orders/"+strconv.FormatInt(id, 10), "X-Amzn-Trace-Id", `Root=1-"quoted"`)
	do(t, "GET", g.url+"/healthz") // debug level: not in an info log
	lines := accessLines(t, access.String())
	if len(lines) != 2 {
		t.Fatalf("%d access lines, want 2 (the health check at debug level):\n%s", len(lines), access.String())
	}
	first := lines[0]
	want := map[string]any{"level": "INFO", "route": "fast", "method": "GET", "path": "/orders/{public_id}", "public_id": pub,
		"status": 200.0, "outcome": "ok", "bytes": float64(len(ok.body)), "client": "127.0.0.1",
		"request_id": ok.header.Get("X-Request-Id"), "trace_id": trace}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("access line %v: %s = %v, want %v", first, k, first[k], v)
		}
	}
	if d, _ := first["duration"].(float64); d <= 0 {
		t.Errorf("access line %v: want a duration", first)
	}
	tag, _ := first["api_key"].(string)
	if len(tag) != 12 {
		t.Errorf("access line %v: api_key %q, want a short hash", first, tag)
	}
	second := lines[1]
	if second["status"] != 404.0 || second["outcome"] != "not_found" || second["route"] != "fast" || second["public_id"] != nil || second["trace_id"] != nil ||
		second["request_id"] != notFound.header.Get("X-Request-Id") {
		t.Errorf("access line %v: want the 404 of a malformed public ID, without it", second)
	}
	all := access.String() + g.log()
	for _, v := range []string{strconv.FormatInt(id, 10), strconv.FormatInt(id, 16), "limit", "secret", "s3cr3t", "key-of-customer-ada"} {
		if strings.Contains(all, v) {
			t.Errorf("the logs hold %q:\n%s", v, all)
		}
	}
	if strings.Contains(g.log(), "gateway request") {
		t.Errorf("the access log went to the service's log too:\n%s", g.log())
	}
}

// TestETag: a 200 carries the gateway's own strong ETag, a hash of the body it sends (not the
// upstream's declared ETag); If-None-Match naming it, weak or strong, alone, in a list or as *,
// gets 304 with no body, to a GET and a HEAD; a stale tag gets 200 and the new tag.
func TestETag(t *testing.T) {
	var mu sync.Mutex
	note := "first"
	up, _ := noteUpstream(t, func() string { mu.Lock(); defer mu.Unlock(); return note })
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", up.URL, ""), gateway.Options{})
	path := g.url + "/orders/" + g.publish(t, limID(5), "ord")
	a := do(t, "GET", path)
	tag := a.header.Get("ETag")
	if a.code != 200 || !regexp.MustCompile(`^"[A-Za-z0-9_-]{22}"$`).MatchString(tag) {
		t.Fatalf("GET: %d ETag %q, want 200 and the gateway's own strong tag", a.code, tag)
	}
	if again := do(t, "GET", path); again.header.Get("ETag") != tag {
		t.Errorf("the same body: ETag %q, then %q", tag, again.header.Get("ETag"))
	}
	for _, inm := range []string{tag, "W/" + tag, `"other", ` + tag, `"other",W/` + tag, "*"} {
		for _, m := range []string{"GET", "HEAD"} {
			nm := do(t, m, path, "If-None-Match", inm)
			if nm.code != 304 || nm.body != "" || nm.header.Get("ETag") != tag || nm.header.Get("Content-Length") != "" ||
				nm.header.Get("Cache-Control") != "private, no-cache" || nm.header.Get("X-Request-Id") == "" {
				t.Errorf("%s If-None-Match %s: %d %v %q, want 304 with the tag and no body", m, inm, nm.code, nm.header, nm.body)
			}
		}
	}
	for _, inm := range []string{`"stale"`, `W/"stale"`, strings.Trim(tag, `"`), `"upstream-tag"`} {
		if a := do(t, "GET", path, "If-None-Match", inm); a.code != 200 || a.header.Get("ETag") != tag || !strings.Contains(a.body, "first") {
			t.Errorf("If-None-Match %s: %d %v, want 200 with the body", inm, a.code, a.header)
		}
	}
	mu.Lock()
	note = "second"
	mu.Unlock()
	a = do(t, "GET", path, "If-None-Match", tag)
	if a.code != 200 || a.header.Get("ETag") == tag || !strings.Contains(a.body, "second") {
		t.Errorf("the body changed, If-None-Match the old tag: %d %v %q, want 200 and a new tag", a.code, a.header, a.body)
	}
}

// TestGzip: a customer who accepts gzip gets the rebuilt body gzip, which decodes to exactly the
// body others get, with a weak form of the same ETag, Vary: Accept-Encoding and its own
// Content-Length; a HEAD the same headers; q-values are honoured; small bodies are not
// compressed; the upstream is asked for identity.
func TestGzip(t *testing.T) {
	var mu sync.Mutex
	note := strings.Repeat("a fine day for shipping books ", 100)
	up, sent := noteUpstream(t, func() string { mu.Lock(); defer mu.Unlock(); return note })
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", up.URL, `"cache_control": "private, max-age=60",`), gateway.Options{})
	path := g.url + "/orders/" + g.publish(t, limID(6), "ord")
	plain := do(t, "GET", path)
	if plain.code != 200 || plain.header.Get("Content-Encoding") != "" || plain.header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("without Accept-Encoding: %d %v, want 200 uncompressed with Vary", plain.code, plain.header)
	}
	if ae := sent.last().Get("Accept-Encoding"); ae != "identity" {
		t.Errorf("the upstream was sent Accept-Encoding %q, want identity", ae)
	}
	for _, ae := range []string{"gzip", "br, gzip;q=0.8", "GZIP;q=1.0, identity;q=0.5", "*", "x-gzip", "identity;q=0, gzip"} {
		z := do(t, "GET", path, "Accept-Encoding", ae)
		if z.code != 200 || z.header.Get("Content-Encoding") != "gzip" || z.header.Get("Vary") != "Accept-Encoding" ||
			z.header.Get("ETag") != "W/"+plain.header.Get("ETag") || z.header.Get("Content-Length") != strconv.Itoa(len(z.body)) ||
			z.header.Get("Cache-Control") != "private, max-age=60" {
			t.Errorf("Accept-Encoding %s: %d %v, want gzip with a weak ETag, Vary and its length", ae, z.code, z.header)
			continue
		}
		if len(z.body) >= len(plain.body) {
			t.Errorf("Accept-Encoding %s: %d bytes gzip for %d", ae, len(z.body), len(plain.body))
		}
		zr, err := gzip.NewReader(strings.NewReader(z.body))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(zr); err != nil || string(got) != plain.body {
			t.Errorf("Accept-Encoding %s: decodes to %d bytes (%v), want exactly the %d of the uncompressed body", ae, len(got), err, len(plain.body))
		}
		head := do(t, "HEAD", path, "Accept-Encoding", ae)
		for _, h := range []http.Header{z.header, head.header} {
			h.Del("Date")
			h.Del("X-Request-Id")
		}
		if head.code != 200 || head.body != "" || fmt.Sprint(head.header) != fmt.Sprint(z.header) {
			t.Errorf("HEAD, Accept-Encoding %s: %d %v, want GET's headers %v", ae, head.code, head.header, z.header)
		}
		if nm := do(t, "GET", path, "Accept-Encoding", ae, "If-None-Match", z.header.Get("ETag")); nm.code != 304 {
			t.Errorf("Accept-Encoding %s, If-None-Match its weak tag: %d, want 304", ae, nm.code)
		}
	}
	for _, ae := range []string{"gzip;q=0", "br", "identity, gzip;q=0.5", "gzip;q=2", "gzip;q=x", ""} {
		if a := do(t, "GET", path, "Accept-Encoding", ae); a.code != 200 || a.header.Get("Content-Encoding") != "" || a.body != plain.body {
			t.Errorf("Accept-Encoding %q: %d %v, want the uncompressed body", ae, a.code, a.header)
		}
	}
	for _, ae := range []string{"identity;q=0", "gzip;q=0, identity;q=0", "*;q=0", "br, *;q=0"} {
		a := do(t, "GET", path, "Accept-Encoding", ae)
		if a.code != 406 || !strings.Contains(a.body, "Accept-Encoding refuses every coding the gateway sends") {
			t.Errorf("Accept-Encoding %q: %d %q, want 406 saying why", ae, a.code, a.body)
		}
	}
	// A small body goes uncompressed, unless identity is refused.
	mu.Lock()
	note = "short"
	mu.Unlock()
	if a := do(t, "GET", path, "Accept-Encoding", "gzip"); a.code != 200 || a.header.Get("Content-Encoding") != "" || a.header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("a small body: %d %v, want it uncompressed, with Vary", a.code, a.header)
	}
	if a := do(t, "GET", path, "Accept-Encoding", "gzip, identity;q=0"); a.code != 200 || a.header.Get("Content-Encoding") != "gzip" {
		t.Errorf("a small body, identity refused: %d %v, want gzip", a.code, a.header)
	}
}

// TestCacheControl: a success carries the upstream's declared Cache-Control, else the route's
// cache_control, else private, no-cache; the gateway's errors no-store. A route that declares no
// Cache-Control never passes the upstream's.
func TestCacheControl(t *testing.T) {
	up, _ := noteUpstream(t, func() string { return "hello" })
	withHeader := twoRoutes("http://127.0.0.1:1", "", up.URL, `"cache_control": "private, max-age=60",`)
	at := strings.LastIndex(withHeader, `"ETag": "plain"`) // the fast route's
	withHeader = withHeader[:at] + `"Cache-Control": "plain"` + withHeader[at+len(`"ETag": "plain"`):]
	for _, tt := range []struct {
		name, file, want string
	}{
		{"default", twoRoutes("http://127.0.0.1:1", "", up.URL, ""), "private, no-cache"},
		{"route's", twoRoutes("http://127.0.0.1:1", "", up.URL, `"cache_control": "private, max-age=60",`), "private, max-age=60"},
		{"upstream's, declared", withHeader, "public, max-age=3600"},
	} {
		g := newLimGateway(t, tt.file, gateway.Options{})
		if a := do(t, "GET", g.url+"/orders/"+g.publish(t, limID(8), "ord")); a.code != 200 || a.header.Get("Cache-Control") != tt.want {
			t.Errorf("%s: %d Cache-Control %q, want %q", tt.name, a.code, a.header.Get("Cache-Control"), tt.want)
		}
		// The gateway's own answers are no-store and never compressed: no Vary to choose by.
		if a := do(t, "GET", g.url+"/orders/ord_unknown", "Accept-Encoding", "gzip"); a.code != 404 || a.header.Get("Cache-Control") != "no-store" ||
			a.header.Get("Content-Encoding") != "" || len(a.header.Values("Vary")) != 0 {
			t.Errorf("%s: a 404 with %v, want no-store, uncompressed, without Vary", tt.name, a.header)
		}
	}
	if !strings.Contains(withHeader, `"Cache-Control": "plain"`) {
		t.Fatal("the route file does not declare Cache-Control")
	}
	if _, err := routes.Parse([]byte(twoRoutes("http://a", `"cache_control": "private\u0000",`, "http://b", ""))); err == nil || !strings.Contains(err.Error(), "cache_control") {
		t.Errorf("a cache_control with a NUL: %v, want it refused", err)
	}
}

// TestCORS: with origins configured, a preflight from one of them for one of the route's methods
// is allowed, and refused (no Access-Control-Allow-Origin) for another origin or method; an
// answer to a page of that origin names it and exposes X-Request-Id and ETag, with Vary: Origin
// beside Vary: Accept-Encoding. Without origins, no CORS header and a preflight is a 405.
func TestCORS(t *testing.T) {
	up, _ := noteUpstream(t, func() string { return "hello" })
	file := twoRoutes("http://127.0.0.1:1", "", up.URL, `"methods": ["GET", "DELETE"],`)
	const app = "https://app.example.com"
	g := newLimGateway(t, file, gateway.Options{CORSOrigins: []string{app}, APIKeyHeader: "X-Api-Key"})
	path := g.url + "/orders/" + g.publish(t, limID(9), "ord")
	for _, tt := range []struct {
		name, origin, method, headers string
		allowed                       bool
	}{
		{"GET", app, "GET", "", true},
		{"DELETE, with the key and If-None-Match", app, "DELETE", "if-none-match,x-api-key", true},
		{"another origin", "https://evil.example", "GET", "", false},
		{"a method the route has not", app, "PUT", "", false},
		{"a header not allowed", app, "GET", "authorization", false},
	} {
		headers := []string{"Origin", tt.origin, "Access-Control-Request-Method", tt.method}
		if tt.headers != "" {
			headers = append(headers, "Access-Control-Request-Headers", tt.headers)
		}
		a := do(t, "OPTIONS", path, headers...)
		got := a.header.Get("Access-Control-Allow-Origin")
		if a.code != 204 || !strings.Contains(strings.Join(a.header.Values("Vary"), ","), "Origin") {
			t.Errorf("preflight %s: %d %v, want 204 with Vary: Origin", tt.name, a.code, a.header)
		}
		if tt.allowed && (got != tt.origin || a.header.Get("Access-Control-Allow-Methods") != tt.method || a.header.Get("Access-Control-Allow-Credentials") != "") {
			t.Errorf("preflight %s: %v, want it allowed, without credentials", tt.name, a.header)
		}
		if !tt.allowed && got != "" {
			t.Errorf("preflight %s: Access-Control-Allow-Origin %q, want none", tt.name, got)
		}
	}
	a := do(t, "GET", path, "Origin", app)
	expose := strings.ToLower(a.header.Get("Access-Control-Expose-Headers"))
	if a.code != 200 || a.header.Get("Access-Control-Allow-Origin") != app || !strings.Contains(expose, "x-request-id") || !strings.Contains(expose, "etag") ||
		fmt.Sprint(a.header.Values("Vary")) != "[Accept-Encoding Origin]" {
		t.Errorf("GET from %s: %d %v, want its origin allowed, X-Request-Id and ETag exposed, Vary: Accept-Encoding, Origin", app, a.code, a.header)
	}
	if a := do(t, "GET", path, "Origin", "https://evil.example"); a.header.Get("Access-Control-Allow-Origin") != "" || a.code != 200 {
		t.Errorf("GET from another origin: %d %v, want no Access-Control-Allow-Origin", a.code, a.header)
	}
	if a := do(t, "GET", g.url+"/orders/ord_unknown", "Origin", app); a.code != 404 || a.header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("a 404 to a page of %s: %v, want it readable (Access-Control-Allow-Origin)", app, a.header)
	}
	if n := g.count(t, "fast", "ok"); n < 6 {
		t.Errorf("ok{route=fast} = %v: the preflights are counted on their route", n)
	}
	plain := newLimGateway(t, file, gateway.Options{})
	path = plain.url + "/orders/" + plain.publish(t, limID(9), "ord")
	if a := do(t, "OPTIONS", path, "Origin", app, "Access-Control-Request-Method", "GET"); a.code != 405 || a.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a preflight without CORS origins: %d %v, want 405", a.code, a.header)
	}
	if a := do(t, "GET", path, "Origin", app); a.header.Get("Access-Control-Allow-Origin") != "" || fmt.Sprint(a.header.Values("Vary")) != "[Accept-Encoding]" {
		t.Errorf("GET without CORS origins: %v, want no CORS header", a.header)
	}
	for _, h := range []string{"Vary", "Access-Control-Allow-Origin", "access-control-expose-headers"} {
		if _, err := routes.Parse([]byte(strings.Replace(file, `"ETag": "plain"`, `"`+h+`": "plain"`, 1))); err == nil || !strings.Contains(err.Error(), "the gateway sets it itself") {
			t.Errorf("a route that passes the upstream's %s: %v, want it refused", h, err)
		}
	}
	c, _ := routes.Parse([]byte(file))
	maker, _ := publicid.NewMaker("ord", "cus")
	for _, o := range []string{"*", "https://*.example.com", "https://app.example.com/", "app.example.com", "https://app.example.com/x"} {
		if _, err := gateway.New(c, maker, nil, prometheus.NewRegistry(), gateway.Options{CORSOrigins: []string{o}}); err == nil || !strings.Contains(err.Error(), "want an exact origin") {
			t.Errorf("CORS origin %q: %v, want it refused", o, err)
		}
	}
}

// TestRouteRate: a route's rate_per_client limits each client on that route (burst twice the
// rate, then 429 with Retry-After, counted on the route), beside the gateway's, and leaves the
// other routes alone.
func TestRouteRate(t *testing.T) {
	clock := &testClock{t: time.Now()}
	up, _ := noteUpstream(t, func() string { return "hello" })
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"note":"other"}`)
	}))
	t.Cleanup(other.Close)
	g := newLimGateway(t, twoRoutes(other.URL, "", up.URL, `"rate_per_client": 1,`), gateway.Options{RatePerClient: 100, Now: clock.now})
	path, cus := g.url+"/orders/"+g.publish(t, limID(10), "ord"), g.url+"/customers/"+g.publish(t, limID(11), "cus")
	for i := range 2 {
		if a := do(t, "GET", path); a.code != 200 {
			t.Fatalf("request %d of the route's burst: %d %s", i, a.code, a.body)
		}
	}
	a := do(t, "GET", path)
	if a.code != 429 || a.header.Get("Retry-After") != "1" || a.body != `{"error":"too many requests"}`+"\n" {
		t.Fatalf("past the route's burst: %d %v %q, want 429 with Retry-After", a.code, a.header, a.body)
	}
	if n := g.count(t, "fast", "rate_limited"); n != 1 {
		t.Errorf("rate_limited{route=fast} = %v, want 1", n)
	}
	for range 5 {
		if a := do(t, "GET", cus); a.code != 200 {
			t.Fatalf("the other route: %d %s, want 200", a.code, a.body)
		}
	}
	clock.add(time.Second)
	if a := do(t, "GET", path); a.code != 200 {
		t.Errorf("a second later: %d, want the route's token back", a.code)
	}
	if _, err := routes.Parse([]byte(twoRoutes("http://a", `"rate_per_client": -1,`, "http://b", ""))); err == nil || !strings.Contains(err.Error(), "rate_per_client -1") {
		t.Errorf("rate_per_client -1: %v, want it refused", err)
	}
}

// TestAPIKeyRate: with an API-key header, clients through a trusted proxy are limited by their
// key, not their address: two keys from one address each get their burst, on the gateway's rate
// and a route's; a key given twice, or too long, is a 400 that says so.
func TestAPIKeyRate(t *testing.T) {
	clock := &testClock{t: time.Now()}
	up, _ := noteUpstream(t, func() string { return "hello" })
	for _, tt := range []struct {
		name, keys string
		o          gateway.Options
	}{
		{"gateway's rate", "", gateway.Options{RatePerClient: 1}},
		{"route's rate", `"rate_per_client": 1,`, gateway.Options{}},
	} {
		tt.o.APIKeyHeader, tt.o.Now, tt.o.TrustedProxies = "X-Api-Key", clock.now, loopback
		g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", up.URL, tt.keys), tt.o)
		path := g.url + "/orders/" + g.publish(t, limID(12), "ord")
		for _, key := range []string{"key-a", "key-b"} {
			for i := range 2 {
				if a := do(t, "GET", path, "X-Api-Key", key); a.code != 200 {
					t.Fatalf("%s: %s, request %d of its burst: %d %s", tt.name, key, i, a.code, a.body)
				}
			}
			if a := do(t, "GET", path, "X-Api-Key", key); a.code != 429 || a.header.Get("Retry-After") == "" {
				t.Errorf("%s: %s past its burst: %d %v, want 429", tt.name, key, a.code, a.header)
			}
		}
		// Without a key: the address's own bucket.
		if a := do(t, "GET", path); a.code != 200 {
			t.Errorf("%s: without a key: %d, want the address's bucket", tt.name, a.code)
		}
		for _, bad := range [][]string{{"X-Api-Key", "k1", "X-Api-Key", "k2"}, {"X-Api-Key", strings.Repeat("k", 257)}, {"X-Api-Key", "k\u00e9y"}} {
			if a := do(t, "GET", path, bad...); a.code != 400 || !strings.Contains(a.body, "X-Api-Key") {
				t.Errorf("%s: a bad key %q: %d %q, want 400 naming the header", tt.name, bad, a.code, a.body)
			}
		}
		if strings.Contains(g.log(), "key-a") || !bytes.Contains([]byte(g.log()), []byte(`"api_key":"`)) {
			t.Errorf("%s: the log holds a key in clear, or no short hash of it:\n%s", tt.name, g.log())
		}
	}
}

// TestAPIKeyFromAnyPeer: an API key counts only through a trusted proxy; from any other peer the
// client is its address, so a key made up for each request gets no bucket of its own (nor
// evicts a customer's), and a malformed one is not read.
func TestAPIKeyFromAnyPeer(t *testing.T) {
	up, _ := noteUpstream(t, func() string { return "hello" })
	file := twoRoutes("http://127.0.0.1:1", "", up.URL, "")
	for _, tt := range []struct {
		name    string
		trusted []netip.Prefix
	}{
		{"no trusted proxy", nil},
		{"another trusted proxy", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
	} {
		g := newLimGateway(t, file, gateway.Options{APIKeyHeader: "X-Api-Key", RatePerClient: 1, TrustedProxies: tt.trusted})
		path := g.url + "/orders/" + g.publish(t, limID(13), "ord")
		for i := range 2 {
			if a := do(t, "GET", path, "X-Api-Key", fmt.Sprintf("made-up-%d", i)); a.code != 200 {
				t.Fatalf("%s: request %d of the address's burst: %d %s", tt.name, i, a.code, a.body)
			}
		}
		if a := do(t, "GET", path, "X-Api-Key", "made-up-2"); a.code != 429 {
			t.Errorf("%s: a new key past the address's burst: %d, want 429 (the address's bucket)", tt.name, a.code)
		}
		if a := do(t, "GET", path, "X-Api-Key", "k1", "X-Api-Key", "k2"); a.code != 429 {
			t.Errorf("%s: a key given twice, not read: %d, want the address's 429", tt.name, a.code)
		}
		if strings.Contains(g.log(), `"api_key"`) {
			t.Errorf("%s: the log names a key that was not read:\n%s", tt.name, g.log())
		}
	}
}

// TestPreconditions: a precondition the gateway cannot evaluate (If-Match, If-Unmodified-Since;
// If-None-Match on a DELETE) is a 412 that says so, and the upstream is never asked, so a
// conditional DELETE never deletes unconditionally; If-None-Match on a GET is the gateway's own
// (304); an unknown public ID is still the one 404.
func TestPreconditions(t *testing.T) {
	up, sent := noteUpstream(t, func() string { return "hello" })
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", up.URL, `"methods": ["GET", "DELETE"],`), gateway.Options{})
	path := g.url + "/orders/" + g.publish(t, limID(14), "ord")
	since := "Sat, 01 Nov 2026 00:00:00 GMT"
	for _, tt := range []struct {
		method, header, value string
	}{
		{"DELETE", "If-Match", `"abc"`},
		{"DELETE", "If-Match", "*"},
		{"DELETE", "If-Unmodified-Since", since},
		{"DELETE", "If-None-Match", `"abc"`},
		{"GET", "If-Match", `"abc"`},
		{"GET", "If-Unmodified-Since", since},
		{"HEAD", "If-Match", "*"},
	} {
		a := do(t, tt.method, path, tt.header, tt.value)
		var body struct{ Error string }
		if tt.method != "HEAD" {
			if err := json.Unmarshal([]byte(a.body), &body); err != nil {
				t.Errorf("%s %s: body %q: %v", tt.method, tt.header, a.body, err)
			}
		}
		if a.code != 412 || a.header.Get("Cache-Control") != "no-store" ||
			tt.method != "HEAD" && body.Error != tt.header+": the gateway does not pass preconditions to the upstream; send the request without it" {
			t.Errorf("%s with %s: %d %v %q, want 412 saying the gateway does not pass it", tt.method, tt.header, a.code, a.header, a.body)
		}
	}
	if n := sent.count(); n != 0 {
		t.Errorf("the upstream was asked %d times for requests with a precondition, want none", n)
	}
	if got := g.count(t, "fast", "bad_request"); got != 7 {
		t.Errorf("counted %v bad_request, want 7", got)
	}
	if a := do(t, "GET", g.url+"/orders/ord_"+strings.Repeat("x", 22), "If-Match", "*"); a.code != 404 {
		t.Errorf("an unknown public ID with If-Match: %d, want the one 404", a.code)
	}
	ok := do(t, "GET", path)
	if nm := do(t, "GET", path, "If-None-Match", ok.header.Get("ETag")); ok.code != 200 || nm.code != 304 {
		t.Errorf("GET, then If-None-Match its ETag: %d, %d; want 200, 304", ok.code, nm.code)
	}
	if a := do(t, "DELETE", path); a.code != 200 || sent.count() != 3 {
		t.Errorf("an unconditional DELETE: %d, upstream asked %d times; want 200, and 3", a.code, sent.count())
	}
}

// TestNotModifiedTag: a 304 carries the ETag the 200 would: weak for a body sent gzip, strong for
// one whose gzip would not be smaller and that goes uncompressed though the customer accepts gzip.
func TestNotModifiedTag(t *testing.T) {
	up, _ := noteUpstream(t, func() string { return "hi" })
	big, _ := noteUpstream(t, func() string { return strings.Repeat("a fine day for shipping books ", 100) })
	for _, tt := range []struct {
		name string
		up   string
		weak bool
	}{
		{"incompressible", up.URL, false},
		{"compressed", big.URL, true},
	} {
		g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", tt.up, ""), gateway.Options{CompressMinSize: 1})
		path := g.url + "/orders/" + g.publish(t, limID(9), "ord")
		ok := do(t, "GET", path, "Accept-Encoding", "gzip")
		tag := ok.header.Get("ETag")
		if ok.code != 200 || strings.HasPrefix(tag, "W/") == !tt.weak || (ok.header.Get("Content-Encoding") == "gzip") != tt.weak {
			t.Fatalf("%s: %d %v: want 200, gzip and a weak tag only for a body that gets smaller", tt.name, ok.code, ok.header)
		}
		for _, m := range []string{"GET", "HEAD"} {
			nm := do(t, m, path, "Accept-Encoding", "gzip", "If-None-Match", strings.TrimPrefix(tag, "W/"))
			if nm.code != 304 || nm.header.Get("ETag") != tag || nm.header.Get("Content-Encoding") != "" || nm.body != "" {
				t.Errorf("%s: %s If-None-Match its tag: %d %v, want 304 with the 200's ETag %s", tt.name, m, nm.code, nm.header, tag)
			}
		}
	}
}

// TestCacheControlOfRedirectsAndEmpty: the route's cache_control (and the default) is for its
// 200s; a redirect and a 204 get no-store, unless the upstream declared its own.
func TestCacheControlOfRedirectsAndEmpty(t *testing.T) {
	var own atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if own.Load() {
			w.Header().Set("Cache-Control", "private, max-age=5")
		}
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Location", "/internal/fast/"+r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:])
		w.WriteHeader(http.StatusFound)
	}))
	t.Cleanup(up.Close)
	file := twoRoutes("http://127.0.0.1:1", "", up.URL, `"methods": ["GET", "DELETE"], "cache_control": "private, max-age=60",`)
	at := strings.LastIndex(file, `"ETag": "plain"`) // the fast route's
	file = file[:at] + `"Cache-Control": "plain"` + file[at+len(`"ETag": "plain"`):]
	g := newLimGateway(t, file, gateway.Options{})
	path := g.url + "/orders/" + g.publish(t, limID(10), "ord")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ask := func(method string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Cache-Control")
	}
	for _, tt := range []struct {
		own    bool
		method string
		code   int
		want   string
	}{
		{false, "GET", 302, "no-store"},
		{false, "DELETE", 204, "no-store"},
		{true, "GET", 302, "private, max-age=5"},
		{true, "DELETE", 204, "private, max-age=5"},
	} {
		own.Store(tt.own)
		if code, cc := ask(tt.method); code != tt.code || cc != tt.want {
			t.Errorf("%s, the upstream's Cache-Control %v: %d %q, want %d %q", tt.method, tt.own, code, cc, tt.code, tt.want)
		}
	}
}
