// Package e2e attacks the customer gateway as a competitor would: the public-id binary as a real
// process, on a real Redis, in front of a hostile upstream written for these tests that puts its
// internal IDs everywhere it can. Every response the gateway gives is kept and, at the end,
// scanned for every internal ID the upstream sent, in every spelling leakcheck knows (every
// encoder of the scanner's table, and leakcheck's own reading: decimal and hex inside longer runs
// and across separators, hex bytes, floats, octal, base 36, 32, 62 and 58, Crockford's base 32,
// little-endian hex, base64 and page tokens, and all of these in the normal form: escapes
// resolved, invisible characters removed, Unicode digits read).
package e2e

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/leakcheck"
)

// gatewayBin builds the customer gateway, once for every test binary of the run (proc's cache).
func gatewayBin(t testing.TB) string {
	t.Helper()
	return proc.BuildT(t, "../cmd/public-id-gateway")[0]
}

// publicIDBin builds the public-id service, once for every test binary of the run (proc's cache).
func publicIDBin(t testing.TB) string {
	t.Helper()
	return proc.BuildT(t, "../cmd/public-id")[0]
}

// newID makes an internal ID of the current layout, issued a moment ago.
func newID() int64 {
	ts := time.Now().Add(-time.Duration(rand.IntN(3600)) * time.Second).UnixMilli()
	return (ts-idcore.EpochUnixMs)<<22 | rand.Int64N(1<<22)
}

// detectedID is a new ID whose spelling sp the detector reads: a rule such as base 58's (a
// digit and both cases) leaves a few IDs' spellings to the own-ID check only.
func detectedID(sp leakcheck.Spelling) int64 {
	for {
		if id := newID(); sp.Detected(id) {
			return id
		}
	}
}

// mixedToken is a new ID whose base64 token holds both cases, as the detector's reading of
// binary payloads needs.
func mixedToken(token func(int64) string) int64 {
	for {
		id := newID()
		if s := token(id); strings.ToLower(s) != s && strings.ToUpper(s) != s {
			return id
		}
	}
}

// spelling is the table's spelling of that name ("entry: encoder").
func spelling(t *testing.T, name string) leakcheck.Spelling {
	t.Helper()
	for _, sp := range leakcheck.Spellings {
		if sp.Name == name {
			return sp
		}
	}
	t.Fatalf("no spelling %q in the table", name)
	return leakcheck.Spelling{}
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// hostile is an upstream that answers each internal ID with the behaviour registered for it, and
// records every internal ID it puts in an answer, every method and query it receives.
type hostile struct {
	*httptest.Server
	mu      sync.Mutex
	cases   map[int64]func(w http.ResponseWriter, r *http.Request, id int64)
	sent    map[int64]bool
	methods []string
	queries []string
}

func newHostile(t *testing.T) *hostile {
	h := &hostile{cases: map[int64]func(http.ResponseWriter, *http.Request, int64){}, sent: map[int64]bool{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, _ := strings.CutPrefix(r.URL.Path, "/internal/orders/")
		id, _ := strconv.ParseInt(rest, 10, 64)
		h.mu.Lock()
		h.methods = append(h.methods, r.Method)
		h.queries = append(h.queries, r.URL.RawQuery)
		f := h.cases[id]
		h.mu.Unlock()
		if f == nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		h.send(id)
		f(w, r, id)
	}))
	t.Cleanup(h.Close)
	return h
}

// send records internal IDs the upstream shows.
func (h *hostile) send(ids ...int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		h.sent[id] = true
	}
}

// on registers a behaviour for a new internal ID and returns the ID.
func (h *hostile) on(f func(w http.ResponseWriter, r *http.Request, id int64)) int64 {
	id := newID()
	h.mu.Lock()
	h.cases[id] = f
	h.mu.Unlock()
	return id
}

func jsonBody(code int, format string, args ...any) func(http.ResponseWriter, *http.Request, int64) {
	return func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, format, args...)
	}
}

// trap is a server no gateway request may reach (a redirect's target).
type trap struct {
	*httptest.Server
	hits int
	mu   sync.Mutex
}

func newTrap(t *testing.T, body string) *trap {
	tr := &trap{}
	tr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.hits++
		tr.mu.Unlock()
		io.WriteString(w, body)
	}))
	t.Cleanup(tr.Close)
	return tr
}

// gw is a region's public-ID programs on one store: the internal API and the customer gateway.
type gw struct {
	p        *proc.Proc // the gateway
	apiProc  *proc.Proc // the internal API
	api, url string     // the internal API's and the gateway's customers' listener
	ops      string     // the gateway's operator listener (/metrics)
	mu       sync.Mutex
	seen     []seen // every response a customer got
}

func routesFile(t *testing.T, up string) string {
	t.Helper()
	routes := `{"routes": [{
  "name": "order", "public": "/orders/{public_id}", "upstream": "` + up + `/internal/orders/{internal_id}",
  "resource": "ord",
  "query": {"expand": {"type": "enum", "values": ["items"]}, "customer": "id:cus", "limit": {"type": "int", "min": 1, "max": 50}, "cursor": "token"},
  "headers": {"ETag": "plain", "Location": "location", "Cache-Control": "plain"},
  "response": {"type": "object", "fields": {
    "id": "id:ord", "customer_id": "id:cus", "status": {"type": "enum", "values": ["placed", "shipped"]},
    "total_cents": "int", "weight": "number", "note": {"type": "string", "max_len": 200},
    "placed_at": "time", "warehouse": "int", "bin": "int", "line": "int", "next": "token",
    "items": {"type": "array", "max_items": 1000, "items": {"type": "object", "fields": {"sku": "string", "order_id": "id:ord"}}}
  }}
}]}`
	p := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(p, []byte(routes), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startGateway starts the internal API and the gateway (extra: the gateway's flags) on the Redis
// at redisAddr.
func startGateway(t *testing.T, redisAddr, routes string, extra ...string) *gw {
	t.Helper()
	apiPort, gwPort, opsPort := testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)
	g := &gw{api: fmt.Sprintf("http://127.0.0.1:%d", apiPort), url: fmt.Sprintf("http://127.0.0.1:%d", gwPort),
		ops: fmt.Sprintf("http://127.0.0.1:%d", opsPort)}
	g.apiProc = proc.StartT(t, proc.Spec{Bin: publicIDBin(t), HealthURL: g.api + "/healthz",
		Args: []string{"--insecure-dev", "--listen", fmt.Sprintf("127.0.0.1:%d", apiPort), "--store", "redis:" + redisAddr, "--resources", "ord,cus"}})
	args := append([]string{"--listen", fmt.Sprintf("127.0.0.1:%d", gwPort), "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", opsPort),
		"--store", "redis:" + redisAddr, "--routes", routes, "--rate-per-client", "0", "--deregistration-delay", "0"}, extra...)
	g.p = proc.StartT(t, proc.Spec{Bin: gatewayBin(t), Args: args, HealthURL: g.url + "/healthz"})
	return g
}

// publish gives an internal ID a public ID through the internal API.
func (g *gw) publish(t *testing.T, id int64, resource string) string {
	t.Helper()
	resp, err := http.Post(g.api+"/v1/public-ids", "application/json",
		strings.NewReader(fmt.Sprintf(`{"internal_id":"%d","resource":"%s"}`, id, resource)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		PublicID string `json:"public_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.PublicID == "" {
		t.Fatalf("publish %d: %d %v", id, resp.StatusCode, err)
	}
	return out.PublicID
}

// seen is one response as the customer got it: status line and headers, and the body.
type seen struct{ head, body string }

type answer struct {
	code   int
	header http.Header
	body   string
}

// do sends a customer request and keeps the whole answer for the final scan.
func (g *gw) do(t *testing.T, method, path string, header ...string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, g.url+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var head strings.Builder
	fmt.Fprintf(&head, "%s\n", resp.Status)
	_ = resp.Header.Write(&head)
	g.mu.Lock()
	g.seen = append(g.seen, seen{head.String(), string(b)})
	g.mu.Unlock()
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// scan fails the test for every internal ID the upstream sent that a customer saw.
func scan(t *testing.T, h *hostile, gws ...*gw) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	n, leaks := 0, 0
	var ids []int64
	for id := range h.sent {
		ids = append(ids, id)
	}
	for _, g := range gws {
		for _, seen := range g.seen {
			n++
			l, ok := leakcheck.Text(seen.head, ids)
			if !ok {
				l, ok = leakcheck.JSON(seen.body, ids)
			}
			if ok {
				leaks++
				t.Errorf("internal id %d (as %s) reached a customer:\n%s%s", l.ID, l.Form, seen.head, seen.body)
			}
		}
	}
	t.Logf("scanned %d gateway responses for %d internal ids the upstream sent: %d found", n, len(h.sent), leaks)
	if n == 0 || len(h.sent) == 0 {
		t.Fatalf("the scan covered nothing: %d responses, %d ids", n, len(h.sent))
	}
}

// logHas waits for a line of g's log that holds all of words.
func logHas(t *testing.T, g *gw, words ...string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Second, func() (bool, string) {
		for _, line := range strings.Split(g.p.Tail(0), "\n") {
			all := true
			for _, w := range words {
				all = all && strings.Contains(line, w)
			}
			if all {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no log line with all of %q", words)
	})
}

func redisKeys(t *testing.T, addr string) int {
	t.Helper()
	out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", strings.TrimPrefix(addr, "127.0.0.1:"), "DBSIZE").Output()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("DBSIZE: %q", out)
	}
	return n
}

func TestAttackGateway(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	h := newHostile(t)
	g := startGateway(t, r.Addr, routesFile(t, h.URL))
	customer := newID()
	cus := g.publish(t, customer, "cus")
	// Every route's series exist at zero from the first scrape.
	if v, ok := g.metrics(t).Value("idgen_gateway_requests_total", testenv.Labels{"outcome": "unsafe_response", "region": "us-east-1", "route": "order"}); !ok || v != 0 {
		t.Errorf("the route's refusals before any request: %v (there: %v), want a series at 0", v, ok)
	}

	// A well-behaved order first: it passes, with public IDs only.
	good := h.on(func(w http.ResponseWriter, _ *http.Request, id int64) {
		h.send(customer)
		w.Header().Set("ETag", `"v3"`)
		jsonBody(200, `{"id":"%d","customer_id":%d,"status":"placed","total_cents":4200,"note":"thanks","items":[{"sku":"book","order_id":"%d"}]}`, id, customer, id)(w, nil, id)
	})
	goodPub := g.publish(t, good, "ord")
	a := g.do(t, "GET", "/orders/"+goodPub)
	want := `{"id":"` + goodPub + `","customer_id":"` + cus + `","status":"placed","total_cents":4200,"note":"thanks","items":[{"sku":"book","order_id":"` + goodPub + `"}]}`
	// The gateway's own ETag, of the body it rebuilt, in place of the upstream's.
	if a.code != 200 || strings.TrimSpace(a.body) != want || a.header.Get("ETag") == `"v3"` || len(a.header.Get("ETag")) != 24 {
		t.Fatalf("a good order: %d %s %v, want 200 %s with the gateway's own ETag", a.code, a.body, a.header, want)
	}

	refused := func(t *testing.T, name string, code int, behave func(http.ResponseWriter, *http.Request, int64), logWords ...string) answer {
		t.Helper()
		id := h.on(behave)
		a := g.do(t, "GET", "/orders/"+g.publish(t, id, "ord"))
		if a.code != code {
			t.Errorf("%s: %d %s, want %d", name, a.code, a.body, code)
		}
		if len(logWords) > 0 {
			logHas(t, g, logWords...)
		}
		return a
	}

	t.Run("the decoded ID (the old demo route)", func(t *testing.T) {
		id := h.on(func(w http.ResponseWriter, _ *http.Request, id int64) {
			d := idcore.ID(id)
			jsonBody(200, `{"id":"%d","layout":"v2","created_at":"%s","region":"eu-west-1","region_number":2,"machine":170,"sequence":%d}`,
				id, d.Time().Format(time.RFC3339Nano), id&1023)(w, nil, id)
		})
		pub := g.publish(t, id, "ord")
		a := g.do(t, "GET", "/orders/"+pub)
		if a.code != 200 || strings.TrimSpace(a.body) != `{"id":"`+pub+`"}` {
			t.Fatalf("%d %s: want only the declared id", a.code, a.body)
		}
	})
	t.Run("upstream 4xx bodies", func(t *testing.T) {
		a := refused(t, "404", 404, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(404, `{"error":"order %d not found in table orders_v2"}`, id)(w, r, id)
		})
		if strings.TrimSpace(a.body) != `{"error":"not found"}` {
			t.Errorf("404 body %s", a.body)
		}
		a = refused(t, "409", 409, func(w http.ResponseWriter, r *http.Request, id int64) {
			w.Header().Set("X-Order", fmt.Sprint(id))
			jsonBody(409, `{"error":"order %d is locked by txn %x"}`, id, id)(w, r, id)
		})
		if strings.TrimSpace(a.body) != `{"error":"conflict"}` || a.header.Get("X-Order") != "" {
			t.Errorf("409: %s %v", a.body, a.header)
		}
		refused(t, "500", 502, jsonBody(500, `{"error":"db-7.internal down"}`))
	})
	t.Run("IDs outside the declared fields", func(t *testing.T) {
		refused(t, "bare number", 502, func(w http.ResponseWriter, r *http.Request, id int64) { jsonBody(200, `%d`, id)(w, r, id) },
			`"route":"order"`, "want an object")
		refused(t, "id in a note", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `{"note":"order %d shipped"}`, id)(w, r, id)
		}, `"field":"note"`)
		refused(t, "another id in a note", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			other := newID()
			h.send(other)
			jsonBody(200, `{"note":"see order %d"}`, other)(w, r, id)
		}, `"field":"note"`)
		refused(t, "hex id in a note", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `{"note":"ref 0x%x"}`, id)(w, r, id)
		})
		refused(t, "an id glued to letters", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			other := newID()
			h.send(other)
			jsonBody(200, `{"note":"replaces ORD%dA"}`, other)(w, r, id)
		}, `"field":"note"`)
		refused(t, "an id in a cursor", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			cursor := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(`{"after":%d}`, id)))
			jsonBody(200, `{"note":"%s"}`, cursor)(w, r, id)
		}, `"field":"note"`)
		refused(t, "an id with thousands separators", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			d := fmt.Sprint(id)
			jsonBody(200, `{"note":"%s,%s,%s,%s,%s,%s"}`, d[:len(d)-15], d[len(d)-15:len(d)-12], d[len(d)-12:len(d)-9], d[len(d)-9:len(d)-6], d[len(d)-6:len(d)-3], d[len(d)-3:])(w, r, id)
		}, `"field":"note"`)
		refused(t, "escaped digits", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			var esc strings.Builder
			for _, c := range fmt.Sprint(id) {
				fmt.Fprintf(&esc, `\u%04x`, c)
			}
			jsonBody(200, `{"note":"%s"}`, esc.String())(w, r, id)
		})
		refused(t, "id as a total", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `{"total_cents":%d}`, id)(w, r, id)
		}, `"field":"total_cents"`)
		refused(t, "id as a float", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `{"weight":%g}`, float64(id))(w, r, id)
		}, `"field":"weight"`)
		refused(t, "not JSON, labelled JSON", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `order=%d`, id)(w, r, id)
		})
		refused(t, "text/plain", 502, func(w http.ResponseWriter, _ *http.Request, id int64) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, `{"note":"%d"}`, id)
		})
		refused(t, "duplicate names", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `{"note":"a","note":"%d"}`, id)(w, r, id)
		})
		// Undeclared members and other spellings of a key are dropped.
		id := h.on(func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `{"id":"%d","ID":"%d","Id":%d,"orderId":"%d","ref":"%d","order":{"id":"%d"},"Note":"%d"}`, id, id, id, id, id, id, id)(w, r, id)
		})
		pub := g.publish(t, id, "ord")
		if a := g.do(t, "GET", "/orders/"+pub); a.code != 200 || strings.TrimSpace(a.body) != `{"id":"`+pub+`"}` {
			t.Errorf("undeclared members: %d %s", a.code, a.body)
		}
	})
	t.Run("every spelling, of another ID and of the request's own", func(t *testing.T) {
		for _, sp := range leakcheck.Spellings {
			if sp.Entry.Reader() == "own IDs only" {
				// Refused as the request's own ID below; another ID's digits without their
				// first two are no ID the detector can tell.
			} else {
				refused(t, "another id as "+sp.Name, 502, func(w http.ResponseWriter, r *http.Request, id int64) {
					other := detectedID(sp)
					h.send(other)
					note, _ := json.Marshal("ref " + sp.Fn(other) + " ok")
					jsonBody(200, `{"note":%s}`, note)(w, r, id)
				}, `"field":"note"`)
			}
			refused(t, "the request's id as "+sp.Name, 502, func(w http.ResponseWriter, r *http.Request, id int64) {
				note, _ := json.Marshal(sp.Fn(id))
				jsonBody(200, `{"id":"%d","note":%s}`, id, note)(w, r, id)
			}, `"field":"note"`)
			if v := sp.Fn(1 << 50); strings.ContainsFunc(v, func(c rune) bool { return c < 0x20 || c > 0x7e }) {
				continue // a header value is printable ASCII (net/http refuses the rest on the way)
			}
			refused(t, "an ETag holding the request's id as "+sp.Name, 502, func(w http.ResponseWriter, r *http.Request, id int64) {
				w.Header().Set("ETag", `"`+sp.Fn(id)+`"`)
				jsonBody(200, `{}`)(w, r, id)
			}, `"field":"Etag"`)
		}
	})
	t.Run("spellings developers write by accident (issue 32)", func(t *testing.T) {
		// Page tokens: base64url of a protobuf message holding another order's ID as a varint,
		// as a fixed64, base64 with a prefix byte after "cur:", base64 twice.
		for name, token := range map[string]func(int64) string{
			"a protobuf varint page token": func(o int64) string {
				return base64.RawURLEncoding.EncodeToString(binary.AppendUvarint([]byte{0x08}, uint64(o)))
			},
			"a protobuf fixed64 page token": func(o int64) string {
				return base64.RawURLEncoding.EncodeToString(binary.LittleEndian.AppendUint64([]byte{0x09}, uint64(o)))
			},
			"cur: and base64 of a prefix byte and the id": func(o int64) string {
				return "cur:" + base64.RawStdEncoding.EncodeToString(binary.BigEndian.AppendUint64([]byte{'x'}, uint64(o)))
			},
			"base64 twice": func(o int64) string {
				return base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, uint64(o)))))
			},
			"v1. and a token of the decimal id inside": func(o int64) string {
				return "v1." + base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "\x12\x05page2\x1a\x12%d", o))
			},
		} {
			refused(t, "another order's id in "+name, 502, func(w http.ResponseWriter, r *http.Request, id int64) {
				other := mixedToken(token)
				h.send(other)
				jsonBody(200, `{"note":"next page: %s"}`, token(other))(w, r, id)
			}, `"field":"note"`)
		}
		// Share codes in other alphabets, in the body and in a declared ETag.
		for _, name := range []string{"base 62: base 62", "base 62: base 62, lower case first", "base 58: base 58", "Crockford base 32: Crockford base 32",
			"hex bytes: joined by :", "hex bytes: joined by spaces", "hex float: hex float", "percent-encoding: percent-encoded digits",
			"HTML entities: decimal entities", "HTML entities: hex entities"} {
			sp := spelling(t, name)
			refused(t, "a share code of another order as "+name, 502, func(w http.ResponseWriter, r *http.Request, id int64) {
				other := detectedID(sp)
				h.send(other)
				jsonBody(200, `{"note":"share %s"}`, sp.Fn(other))(w, r, id)
			}, `"field":"note"`)
			refused(t, "an ETag of another order's id as "+name, 502, func(w http.ResponseWriter, r *http.Request, id int64) {
				other := detectedID(sp)
				h.send(other)
				w.Header().Set("ETag", `"`+sp.Fn(other)+`"`)
				jsonBody(200, `{}`)(w, r, id)
			}, `"field":"Etag"`)
		}
		// The request's own ID without its first two digits (a reader gets those from the
		// date), reversed, its hex without the first two digits, a float, hex joined by '-'.
		for name, form := range map[string]func(int64) string{
			"without its first two digits":     func(id int64) string { d := fmt.Sprint(id); return "ref-" + d[2:] },
			"reversed, inside a word":          func(id int64) string { return "X" + reverse(fmt.Sprint(id)) + "Y" },
			"hex without its first two digits": func(id int64) string { return "h" + strconv.FormatInt(id, 16)[2:] },
			"a float":                          func(id int64) string { return strconv.FormatFloat(float64(id), 'e', -1, 64) },
			"hex groups joined by '-'":         func(id int64) string { x := strconv.FormatInt(id, 16); return x[:5] + "-" + x[5:10] + "-" + x[10:] },
		} {
			refused(t, "the request's id "+name, 502, func(w http.ResponseWriter, r *http.Request, id int64) {
				note, _ := json.Marshal(form(id))
				jsonBody(200, `{"id":"%d","note":%s}`, id, note)(w, r, id)
			}, `"field":"note"`)
		}
		// Not an ID: sixteen a's and b's (a letters-charset string) are hex letters without a
		// digit, and pass.
		id := h.on(jsonBody(200, `{"note":"abababababababab","items":[{"sku":"aaaabbbbaaaabbbb"}]}`))
		if a := g.do(t, "GET", "/orders/"+g.publish(t, id, "ord")); a.code != 200 || !strings.Contains(a.body, "abababababababab") {
			t.Errorf("sixteen a's and b's: %d %s, want 200", a.code, a.body)
		}
	})
	t.Run("spread over fields", func(t *testing.T) {
		refused(t, "the id times ten", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `{"total_cents":%d0}`, id)(w, r, id)
		}, `"field":"total_cents"`)
		// The decoded ID as plain fields: the time reaches the customer to the second only, so
		// the ints beside it cannot rebuild the ID.
		id := h.on(func(w http.ResponseWriter, r *http.Request, id int64) {
			d := idcore.ID(id)
			jsonBody(200, `{"placed_at":"%s","warehouse":%d,"bin":%d,"line":%d}`,
				d.Time().Format("2006-01-02T15:04:05.000Z07:00"), id>>19&7, id>>10&511, id&1023)(w, r, id)
		})
		a := g.do(t, "GET", "/orders/"+g.publish(t, id, "ord"))
		var got struct {
			PlacedAt string `json:"placed_at"`
		}
		if err := json.Unmarshal([]byte(a.body), &got); a.code != 200 || err != nil {
			t.Fatalf("%d %s", a.code, a.body)
		}
		if want := idcore.ID(id).Time().UTC().Truncate(time.Second).Format(time.RFC3339); got.PlacedAt != want {
			t.Errorf("placed_at %q, want %q (to the second, in UTC)", got.PlacedAt, want)
		}
	})
	t.Run("headers", func(t *testing.T) {
		refused(t, "an id in an ETag", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			w.Header().Set("ETag", fmt.Sprintf(`W/"%d-3"`, id))
			jsonBody(200, `{}`)(w, r, id)
		}, `"field":"Etag"`)
		refused(t, "the body's customer id inside an ETag", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			// 99 before it makes the run no ID by itself: only the body's IDs give it away.
			w.Header().Set("ETag", fmt.Sprintf(`"99%d99"`, customer))
			jsonBody(200, `{"customer_id":"%d"}`, customer)(w, r, id)
		}, `"field":"Etag"`)
		id := h.on(func(w http.ResponseWriter, r *http.Request, id int64) {
			w.Header().Set("X-Internal-Id", fmt.Sprint(id))
			w.Header().Set("Set-Cookie", fmt.Sprintf("order=%d", id))
			w.Header().Set("Server", "orders/1.2 host db-7")
			w.Header().Set("Cache-Control", "private, max-age=60")
			jsonBody(200, `{}`)(w, r, id)
		})
		a := g.do(t, "GET", "/orders/"+g.publish(t, id, "ord"))
		if a.code != 200 || a.header.Get("X-Internal-Id") != "" || a.header.Get("Set-Cookie") != "" ||
			a.header.Get("Server") != "" || a.header.Get("Cache-Control") != "private, max-age=60" {
			t.Errorf("undeclared headers: %d %v", a.code, a.header)
		}
	})
	t.Run("redirects", func(t *testing.T) {
		tr := newTrap(t, `{"internal_id":"1"}`)
		refused(t, "302 to the internal API", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			w.Header().Set("Location", g.api+"/v1/public-ids/"+goodPub)
			w.WriteHeader(http.StatusFound)
		}, `"field":"Location"`)
		refused(t, "302 outside the route's path", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			w.Header().Set("Location", tr.URL+"/internal/orders/"+fmt.Sprint(id))
			w.WriteHeader(http.StatusFound)
		})
		refused(t, "307 to another path of the upstream", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			w.Header().Set("Location", "/admin/orders/"+fmt.Sprint(id))
			w.WriteHeader(http.StatusTemporaryRedirect)
		})
		if tr.hits != 0 {
			t.Errorf("the gateway followed a redirect: %d requests reached the trap", tr.hits)
		}
		// A redirect to an order the route table knows becomes that order's public path.
		moved := newID()
		id := h.on(func(w http.ResponseWriter, r *http.Request, id int64) {
			h.send(moved)
			w.Header().Set("Location", "/internal/orders/"+fmt.Sprint(moved))
			w.WriteHeader(http.StatusMovedPermanently)
		})
		a := g.do(t, "GET", "/orders/"+g.publish(t, id, "ord"))
		if a.code != 301 || a.header.Get("Location") != "/orders/"+g.publish(t, moved, "ord") {
			t.Errorf("a redirect to a known order: %d %q", a.code, a.header.Get("Location"))
		}
	})
	t.Run("methods and query", func(t *testing.T) {
		h.mu.Lock()
		h.methods, h.queries = nil, nil
		h.mu.Unlock()
		for _, m := range []string{"DELETE", "PUT", "PATCH", "OPTIONS", "POST", "TRACE"} {
			if a := g.do(t, m, "/orders/"+goodPub); a.code != 405 || a.header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s: %d %v", m, a.code, a.header.Get("Allow"))
			}
		}
		get, head := g.do(t, "GET", "/orders/"+goodPub), g.do(t, "HEAD", "/orders/"+goodPub)
		for _, h := range []http.Header{get.header, head.header} {
			h.Del("Date")
			h.Del("X-Request-Id") // each request's own
		}
		if head.code != 200 || head.body != "" || head.code != get.code || fmt.Sprint(head.header) != fmt.Sprint(get.header) {
			t.Errorf("HEAD: %d %v %q, want GET's %d %v without the body", head.code, head.header, head.body, get.code, get.header)
		}
		a := g.do(t, "GET", "/orders/"+goodPub+"?id=7&internal_id=7&expand=items&customer="+cus+"&utm_source=x")
		if a.code != 200 {
			t.Errorf("declared query: %d %s", a.code, a.body)
		}
		for _, tt := range []struct{ query, msg string }{
			{"expand=items&expand=all", "given more than once"},
			{"expand=all", "want one of items"},
			{"limit=500", "want an integer in 1–50"},
			{"limit=x", "want an integer"},
			{"expand=%zz", "malformed query"},
		} {
			a := g.do(t, "GET", "/orders/"+goodPub+"?"+tt.query)
			if a.code != 400 || !strings.Contains(a.body, tt.msg) {
				t.Errorf("?%s: %d %s, want 400 saying %q", tt.query, a.code, a.body, tt.msg)
			}
		}
		for _, q := range []string{"customer=" + goodPub, "customer=cus_nope", "customer=" + fmt.Sprint(customer)} {
			if a := g.do(t, "GET", "/orders/"+goodPub+"?"+q); a.code != 404 {
				t.Errorf("?%s: %d, want 404", q, a.code)
			}
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, m := range h.methods {
			if m != "GET" {
				t.Errorf("the upstream received %s (a HEAD goes to the upstream as a GET)", m)
			}
		}
		wantQ := url.Values{"expand": {"items"}, "customer": {fmt.Sprint(customer)}}.Encode()
		if len(h.queries) != 3 || h.queries[0] != "" || h.queries[1] != "" || h.queries[2] != wantQ {
			t.Errorf("the upstream received queries %q, want \"\" (GET), \"\" (HEAD, as a GET) and %q", h.queries, wantQ)
		}
	})
	t.Run("IDs in a cursor declared token", func(t *testing.T) {
		// The upstream puts its IDs in its cursors in every spelling (the classic first: base64 of
		// JSON with the last order's ID); the customer gets a handle, and the handle brings the
		// upstream its cursor back exactly.
		in := func() int64 { id := newID(); h.send(id); return id } // scanned for at the end
		cursors := []string{base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(`{"after":%d}`, in())))}
		for _, sp := range leakcheck.Spellings {
			cursors = append(cursors, "after "+sp.Fn(in()))
		}
		var handles []string
		for _, cursor := range cursors {
			var mu sync.Mutex
			var got []string
			id := h.on(func(w http.ResponseWriter, r *http.Request, id int64) {
				mu.Lock()
				got = append(got, r.URL.Query().Get("cursor"))
				mu.Unlock()
				next, _ := json.Marshal(cursor)
				jsonBody(200, `{"id":"%d","next":%s}`, id, next)(w, r, id)
			})
			pub := g.publish(t, id, "ord")
			a := g.do(t, "GET", "/orders/"+pub)
			var body struct{ ID, Next string }
			if err := json.Unmarshal([]byte(a.body), &body); a.code != 200 || err != nil || body.ID != pub || !strings.HasPrefix(body.Next, "tok_") {
				t.Fatalf("a cursor holding an ID: %d %s, want 200 with a token handle", a.code, a.body)
			}
			if a := g.do(t, "GET", "/orders/"+pub+"?cursor="+body.Next); a.code != 200 {
				t.Fatalf("the handle back: %d %s", a.code, a.body)
			}
			mu.Lock()
			if len(got) != 2 || got[0] != "" || got[1] != cursor {
				t.Errorf("the upstream received cursors %q, want none, then %q", got, cursor)
			}
			mu.Unlock()
			handles = append(handles, body.Next)
		}
		// A handle made up, or the upstream's own cursor sent as one, reaches no upstream.
		for _, c := range []string{handles[0] + "x", url.QueryEscape(cursors[0])} {
			if a := g.do(t, "GET", "/orders/"+goodPub+"?cursor="+c); a.code != 400 || strings.TrimSpace(a.body) != `{"error":"query parameter cursor: unknown or expired token"}` {
				t.Errorf("cursor %s: %d %s, want 400 unknown or expired token", c, a.code, a.body)
			}
		}
	})
	t.Run("strict resources", func(t *testing.T) {
		order := newID()
		g.publish(t, order, "ord")
		refused(t, "an order's id as a customer", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			h.send(order)
			jsonBody(200, `{"customer_id":"%d"}`, order)(w, r, id)
		}, `"field":"customer_id"`, "another resource")
		refused(t, "one id as two resources", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `{"id":"%d","customer_id":"%d"}`, id, id)(w, r, id)
		}, `"field":"customer_id"`)
	})
	t.Run("limits", func(t *testing.T) {
		refused(t, "1 MiB of nested arrays", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `{"extra":%s}`, strings.Repeat("[", 1<<20-20))(w, r, id)
		}, "nested deeper than 64")
		before := redisKeys(t, r.Addr)
		refused(t, "150 new ids in one response", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			var items []string
			for range 150 {
				n := newID()
				h.send(n)
				items = append(items, fmt.Sprintf(`{"order_id":"%d"}`, n))
			}
			jsonBody(200, `{"items":[%s]}`, strings.Join(items, ","))(w, r, id)
		}, "one response may publish at most 100")
		// The refused response published nothing: only the two keys of its own order's mapping.
		if after := redisKeys(t, r.Addr); after != before+2 {
			t.Errorf("Redis keys %d → %d: a refused response created mappings", before, after)
		}
		refused(t, "body over 1 MiB", 502, func(w http.ResponseWriter, r *http.Request, id int64) {
			jsonBody(200, `{"note":"%s"}`, strings.Repeat("x", 1<<20))(w, r, id)
		})
	})
	t.Run("not found is one answer", func(t *testing.T) {
		for _, p := range []string{"/orders/ord_nope", "/orders/" + cus, "/orders/" + fmt.Sprint(good), "/nothing", "/orders/" + goodPub + "/x"} {
			if a := g.do(t, "GET", p); a.code != 404 || strings.TrimSpace(a.body) != `{"error":"not found"}` {
				t.Errorf("%s: %d %s", p, a.code, a.body)
			}
		}
	})
	scan(t, h, g)
}

// TestClientAddress: behind a trusted proxy each customer has its own limit, named by
// X-Forwarded-For; from anywhere else X-Forwarded-For is ignored.
func TestClientAddress(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	h := newHostile(t)
	routes := routesFile(t, h.URL)
	id := h.on(jsonBody(200, `{}`))
	behind := startGateway(t, r.Addr, routes, "--rate-per-client", "2", "--trusted-proxies", "127.0.0.0/8,10.0.0.0/8")
	direct := startGateway(t, r.Addr, routes, "--rate-per-client", "2")
	pub := behind.publish(t, id, "ord")
	served := func(g *gw, xff string) int {
		ok := 0
		for range 8 {
			if a := g.do(t, "GET", "/orders/"+pub, "X-Forwarded-For", xff); a.code == 200 {
				ok++
			} else if a.code != 429 || a.header.Get("Retry-After") == "" {
				t.Fatalf("%d %v", a.code, a.header)
			}
		}
		return ok
	}
	// Burst 4 at 2/s: each customer behind the proxy gets about 4 of 8 quick requests.
	a, b := served(behind, "198.51.100.7, 10.0.0.2"), served(behind, "203.0.113.9")
	if a < 4 || a > 6 || b < 4 || b > 6 {
		t.Errorf("behind a trusted proxy: %d and %d of 8 served, want 4-6 each (one bucket per customer)", a, b)
	}
	// Not behind a trusted proxy: the header is the customer's to forge, so it is ignored.
	a, b = served(direct, "198.51.100.7"), served(direct, "203.0.113.9")
	if a+b > 6 {
		t.Errorf("forged X-Forwarded-For: %d and %d of 8 served: the header bought extra buckets", a, b)
	}
	scan(t, h, behind, direct)
}

// TestAbuseMemory: customers and an upstream doing their worst at once (1 MiB bodies of nested
// arrays, 1 MiB strings, a thousand unknown IDs a response, a new source address every request)
// leave the gateway's peak memory under the services' 256 MiB limit.
func TestAbuseMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("abuse load: not in -short")
	}
	r := testenv.StartRedis(t, t.TempDir())
	h := newHostile(t)
	nested := `{"extra":` + strings.Repeat("[", 1<<20-20) + `}`
	long := `{"note":"` + strings.Repeat("x", 1<<20-20) + `"}`
	var many strings.Builder
	many.WriteString(`{"items":[`)
	for i := range 1000 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `{"order_id":"%d","sku":"%s"}`, newID(), strings.Repeat("s", 200))
	}
	many.WriteString(`]}`)
	bodies := []string{nested, long, many.String()}
	var ids []int64
	for _, b := range bodies {
		ids = append(ids, h.on(jsonBody(200, "%s", b)))
	}
	g := startGateway(t, r.Addr, routesFile(t, h.URL), "--rate-per-client", "1000", "--trusted-proxies", "127.0.0.1")
	var pubs []string
	for _, id := range ids {
		pubs = append(pubs, g.publish(t, id, "ord"))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Second)
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				req, _ := http.NewRequest("GET", g.url+"/orders/"+pubs[(w+i)%len(pubs)], nil)
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", w, i>>8&255, i&255))
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st, ok := testenv.ReadProcStatus(g.p.Pid())
	if !ok {
		t.Fatal("the gateway's VmHWM could not be read")
	}
	peak := st.VmHWM
	t.Logf("abuse for 3 s, 64 customers: answers %v; gateway peak RSS %.0f MiB", codes, float64(peak)/(1<<20))
	if codes[502] == 0 || codes[200] != 0 {
		t.Fatalf("answers %v: every abusive response should be a 502", codes)
	}
	if peak > 256<<20 {
		t.Fatalf("peak RSS %d MiB, over the services' 256 MiB limit", peak>>20)
	}
}
