package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
)

// The stricter types of a route file: a string's pattern and charset, an int's and a number's
// min and max, a time's precision. Each is tested through ParseRoutes (misuse is a check error
// naming the field) and Rewrite (a value outside is refused, naming the field and never the
// value), and the query side through a gateway in front of a test upstream.

// typesClock is the detector's fixed clock in these tests.
var typesClock = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func typesDetector() gateway.Detector {
	return gateway.Detector{Now: func() time.Time { return typesClock }}
}

// typesRoutes is a route file of one route whose response object has the given fields and whose
// query has the given parameters (JSON object members, without the braces).
func typesRoutes(fields, query string) string {
	if query != "" {
		query = `"query": {` + query + `},`
	}
	return `{"routes": [{"name": "t", "public": "/t/{public_id}", "upstream": "http://up.internal/t/{internal_id}",
  "resource": "ord", ` + query + `
  "response": {"type": "object", "fields": {` + fields + `}}}]}`
}

func typesParse(fields, query string) (*routes.Config, error) {
	return routes.Parse([]byte(typesRoutes(fields, query)))
}

// typesRewrite rebuilds body with the response type of a route declaring fields.
func typesRewrite(t *testing.T, fields, body string) ([]byte, error) {
	t.Helper()
	c, err := typesParse(fields, "")
	if err != nil {
		t.Fatalf("routes with %s: %v", fields, err)
	}
	rw, err := gateway.Rewrite([]byte(body), c.Routes[0].Response, typesDetector(), gateway.Limits{})
	if err != nil {
		return nil, err
	}
	return rw.Fill(map[int64]string{}, &gateway.Known{})
}

func TestTypesAccept(t *testing.T) {
	for _, tt := range []struct{ name, fields, body, want string }{
		{"pattern", `"currency": {"type": "string", "pattern": "[A-Z]{3}"}`, `{"currency":"EUR"}`, `{"currency":"EUR"}`},
		{"pattern with alternatives", `"c": {"type": "string", "pattern": "EUR|USD"}`, `{"c":"USD"}`, `{"c":"USD"}`},
		{"printable-ascii", `"note": {"type": "string", "charset": "printable-ascii"}`, `{"note":"Thanks, see you ~soon!"}`, `{"note":"Thanks, see you ~soon!"}`},
		{"printable-ascii, escaped", `"note": {"type": "string", "charset": "printable-ascii"}`, `{"note":"\u0041 \"q\""}`, `{"note":"A \"q\""}`},
		{"alphanumeric", `"sku": {"type": "string", "charset": "alphanumeric"}`, `{"sku":"Book42"}`, `{"sku":"Book42"}`},
		{"letters", `"name": {"type": "string", "charset": "letters"}`, `{"name":"Ada"}`, `{"name":"Ada"}`},
		{"pattern and charset", `"sku": {"type": "string", "charset": "printable-ascii", "pattern": "[a-z]+-[0-9]{1,3}"}`, `{"sku":"book-1"}`, `{"sku":"book-1"}`},
		{"empty string in a charset", `"note": {"type": "string", "charset": "letters"}`, `{"note":""}`, `{"note":""}`},
		{"null string", `"note": {"type": "string", "pattern": "x"}`, `{"note":null}`, `{"note":null}`},
		{"int at min and max", `"a": {"type": "int", "min": 0, "max": 1000}, "b": {"type": "int", "min": -5, "max": 1000}`, `{"a":0,"b":1000}`, `{"a":0,"b":1000}`},
		{"negative int bounds", `"t": {"type": "int", "min": -40, "max": -10}`, `{"t":-40}`, `{"t":-40}`},
		{"int with min only", `"a": {"type": "int", "min": 1}`, `{"a":7}`, `{"a":7}`},
		{"number, whole bounds", `"w": {"type": "number", "min": 0, "max": 1000}`, `{"w":999.5}`, `{"w":999.5}`},
		{"number, fractional bounds", `"r": {"type": "number", "min": -0.5, "max": 0.5}`, `{"r":0.25}`, `{"r":0.25}`},
		{"number at its max", `"r": {"type": "number", "min": 0, "max": 0.5}`, `{"r":5e-1}`, `{"r":5e-1}`},
		// Times are written anew in UTC, at the precision.
		{"time, default precision s", `"at": "time"`, `{"at":"2026-11-30T13:00:00.123456+01:00"}`, `{"at":"2026-11-30T12:00:00Z"}`},
		{"time s, never rounded up", `"at": {"type": "time", "precision": "s"}`, `{"at":"2026-11-30T11:59:59.999999999Z"}`, `{"at":"2026-11-30T11:59:59Z"}`},
		{"time ms", `"at": {"type": "time", "precision": "ms"}`, `{"at":"2026-11-30T07:00:00.1239-05:00"}`, `{"at":"2026-11-30T12:00:00.123Z"}`},
		{"time ms, three digits always", `"at": {"type": "time", "precision": "ms"}`, `{"at":"2026-11-30T12:00:00Z"}`, `{"at":"2026-11-30T12:00:00.000Z"}`},
		{"time day", `"at": {"type": "time", "precision": "day"}`, `{"at":"2026-11-30T23:30:00.5-02:00"}`, `{"at":"2026-12-01T00:00:00Z"}`},
		// A number with decimals is written anew, shortest, in plain decimals.
		{"number with decimals", `"p": {"type": "number", "min": 0, "max": 1000, "decimals": 2}`, `{"p":19.90}`, `{"p":19.9}`},
		{"number with decimals, an exponent", `"p": {"type": "number", "min": 0, "max": 1000, "decimals": 2}`, `{"p":1.25E2}`, `{"p":125}`},
		{"number with decimals, -0", `"p": {"type": "number", "min": -1, "max": 1, "decimals": 2}`, `{"p":-0.0}`, `{"p":0}`},
		{"number with decimals 0", `"n": {"type": "number", "min": 0, "max": 1000, "decimals": 0}`, `{"n":7}`, `{"n":7}`},
		{"time within bounds", `"at": {"type": "time", "min": "2026-01-01T00:00:00Z", "max": "now+24h"}`, `{"at":"2026-12-01T11:59:59.9Z"}`, `{"at":"2026-12-01T11:59:59Z"}`},
		{"time at its relative min", `"at": {"type": "time", "min": "now-1h", "max": "now"}`, `{"at":"2026-11-30T11:00:00Z"}`, `{"at":"2026-11-30T11:00:00Z"}`},
		{"time in an array", `"ats": {"type": "array", "items": {"type": "time", "precision": "ms"}}`, `{"ats":["2026-11-30T12:00:00.001Z","2026-11-30T12:00:00.1+00:00"]}`, `{"ats":["2026-11-30T12:00:00.001Z","2026-11-30T12:00:00.100Z"]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := typesRewrite(t, tt.fields, tt.body)
			if err != nil {
				t.Fatalf("%s: %v", tt.body, err)
			}
			if string(out) != tt.want {
				t.Fatalf("%s:\n got %s\nwant %s", tt.body, out, tt.want)
			}
		})
	}
}

func TestTypesRefuse(t *testing.T) {
	id := (typesClock.Add(-time.Hour).UnixMilli()-idcore.EpochUnixMs)<<22 | 2<<19 | 170<<10 | 7
	for _, tt := range []struct {
		name, fields, body, field, reason string
		value                             string // what the error must not repeat ("" for the body's value of field)
	}{
		{"pattern is whole: longer", `"cur": {"type": "string", "pattern": "[A-Z]{3}"}`, `{"cur":"EURQX"}`, "cur", "does not match the declared pattern", "EURQX"},
		{"pattern is whole: prefix", `"cur": {"type": "string", "pattern": "[A-Z]{3}"}`, `{"cur":"qqEUR"}`, "cur", "does not match the declared pattern", "qqEUR"},
		{"pattern is whole: a newline after", `"cur": {"type": "string", "pattern": "[A-Z]{3}"}`, `{"cur":"EUR\n"}`, "cur", "does not match the declared pattern", ""},
		{"pattern is whole: (?m) inside", `"cur": {"type": "string", "pattern": "(?m)^[A-Z]{3}$"}`, `{"cur":"EUR\nXYZQ"}`, "cur", "does not match the declared pattern", "XYZQ"},
		{"pattern is whole: alternatives", `"cur": {"type": "string", "pattern": "EUR|USD"}`, `{"cur":"EURO-ish"}`, "cur", "does not match the declared pattern", "EURO-ish"},
		{"printable-ascii: a tab", `"note": {"type": "string", "charset": "printable-ascii"}`, `{"note":"tab\there"}`, "note", "outside the declared charset printable-ascii", "here"},
		{"printable-ascii: a control character", `"note": {"type": "string", "charset": "printable-ascii"}`, `{"note":"nul\u0000x"}`, "note", "outside the declared charset", "nul"},
		{"printable-ascii: beyond ASCII", `"note": {"type": "string", "charset": "printable-ascii"}`, `{"note":"café"}`, "note", "outside the declared charset", "caf"},
		{"printable-ascii: DEL", `"note": {"type": "string", "charset": "printable-ascii"}`, `{"note":"del\u007f"}`, "note", "outside the declared charset", "del"},
		{"printable-ascii: an invisible character", `"note": {"type": "string", "charset": "printable-ascii"}`, `{"note":"12\u200b34"}`, "note", "outside the declared charset", "12"},
		{"alphanumeric: a dash", `"sku": {"type": "string", "charset": "alphanumeric"}`, `{"sku":"book-1"}`, "sku", "outside the declared charset alphanumeric", "book"},
		{"letters: a digit", `"name": {"type": "string", "charset": "letters"}`, `{"name":"Adaz9"}`, "name", "outside the declared charset letters", "Adaz9"},
		{"charset before pattern", `"sku": {"type": "string", "charset": "letters", "pattern": ".*"}`, `{"sku":"abc 1"}`, "sku", "outside the declared charset", "abc"},
		{"int above max", `"qty": {"type": "int", "min": 1, "max": 1000}`, `{"qty":4711}`, "qty", "outside the declared bounds", "4711"},
		{"int below min", `"qty": {"type": "int", "min": 1, "max": 1000}`, `{"qty":0}`, "qty", "outside the declared bounds", ""},
		{"int far below min", `"qty": {"type": "int", "min": 1}`, `{"qty":-98765}`, "qty", "outside the declared bounds", "98765"},
		{"an ID times ten in a bounded int", `"qty": {"type": "int", "min": 0, "max": 1000000}`, fmt.Sprintf(`{"qty":%d0}`, id), "qty", "outside the declared bounds", fmt.Sprint(id)},
		{"number above max", `"w": {"type": "number", "min": 0, "max": 1000}`, `{"w":1000.25}`, "w", "outside the declared bounds", "1000.25"},
		{"number below min", `"r": {"type": "number", "min": 0, "max": 0.5}`, `{"r":-0.125}`, "r", "outside the declared bounds", "0.125"},
		{"number as an exponent", `"w": {"type": "number", "min": 0, "max": 1000}`, `{"w":7e5}`, "w", "outside the declared bounds", "7e5"},
		{"more decimals than declared", `"p": {"type": "number", "min": 0, "max": 1000, "decimals": 2}`, `{"p":19.999}`, "p", "more than the declared 2 decimals", "19.999"},
		{"a fraction where decimals are 0", `"n": {"type": "number", "min": 0, "max": 1000, "decimals": 0}`, `{"n":0.5}`, "n", "more than the declared 0 decimals", ""},
		{"the ID's digits in a fraction", `"r": {"type": "number", "min": 0, "max": 1, "decimals": 3}`, `{"r":0.1234567}`, "r", "more than the declared 3 decimals", "1234567"},
		{"time before its min", `"at": {"type": "time", "min": "2026-01-01T00:00:00Z"}`, `{"at":"2025-12-31T23:59:59.999Z"}`, "at", "outside the declared bounds", "2025"},
		{"time after its relative max", `"at": {"type": "time", "max": "now+24h"}`, `{"at":"2026-12-01T12:00:01Z"}`, "at", "outside the declared bounds", "2026-12-01"},
		{"time before its relative min", `"at": {"type": "time", "precision": "day", "min": "now-720h", "max": "now"}`, `{"at":"2026-10-31T11:59:59Z"}`, "at", "outside the declared bounds", "2026-10-31"},
		{"not a time", `"at": {"type": "time", "precision": "ms"}`, `{"at":"yesterday"}`, "at", "want an RFC 3339 time", "yesterday"},
		{"a time of year -1 in UTC", `"at": "time"`, `{"at":"0000-01-01T00:00:00+01:00"}`, "at", "want an RFC 3339 time", "0000-01-01"},
		{"a time as a number", `"at": "time"`, `{"at":1764504000}`, "at", "want a string", "1764504000"},
		// The declared charset does not replace the scan for IDs.
		{"an ID in an alphanumeric string", `"ref": {"type": "string", "charset": "alphanumeric"}`, fmt.Sprintf(`{"ref":"R%d"}`, id), "ref", "holds an internal ID", fmt.Sprint(id)},
		{"an ID in a matching string", `"ref": {"type": "string", "pattern": "[0-9]+"}`, fmt.Sprintf(`{"ref":"%d"}`, id), "ref", "holds an internal ID", fmt.Sprint(id)},
		{"nested field", `"items": {"type": "array", "items": {"type": "object", "fields": {"sku": {"type": "string", "pattern": "[a-z]+"}}}}`, `{"items":[{"sku":"ok"},{"sku":"NOPE1"}]}`, "sku", "does not match", "NOPE1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := typesRewrite(t, tt.fields, tt.body)
			var ue *gateway.UnsafeError
			if !errors.As(err, &ue) || !errors.Is(err, gateway.ErrUnsafe) {
				t.Fatalf("%s: err %v, want an UnsafeError", tt.body, err)
			}
			if ue.Field != tt.field || !strings.Contains(ue.Reason, tt.reason) {
				t.Fatalf("%s: field %q, reason %q; want field %q, reason saying %q", tt.body, ue.Field, ue.Reason, tt.field, tt.reason)
			}
			if tt.value != "" && strings.Contains(err.Error(), tt.value) {
				t.Fatalf("%s: the error repeats the value: %v", tt.body, err)
			}
		})
	}
}

func TestTypesCheck(t *testing.T) {
	for _, tt := range []struct{ name, fields, query, want string }{
		{"pattern on an int", `"n": {"type": "int", "pattern": "[0-9]+", "min": 0, "max": 9}`, "", `field "n": pattern does not apply to type int`},
		{"pattern on a time", `"at": {"type": "time", "pattern": "x"}`, "", "pattern does not apply to type time"},
		{"charset on an enum", `"s": {"type": "enum", "values": ["a"], "charset": "letters"}`, "", "charset does not apply to type enum"},
		{"bad pattern", `"items": {"type": "array", "items": {"type": "object", "fields": {"code": {"type": "string", "pattern": "[a-"}}}}`, "",
			`route "t": response: field "items": items: field "code": pattern "[a-": error parsing regexp`},
		{"a pattern that is not RE2", `"code": {"type": "string", "pattern": "(a)\\1"}`, "", `field "code": pattern`},
		{"unknown charset", `"s": {"type": "string", "charset": "digits"}`, "", `field "s": charset "digits": want alphanumeric, letters or printable-ascii`},
		{"charset names are exact", `"s": {"type": "string", "charset": "ASCII"}`, "", `charset "ASCII"`},
		{"int min above max", `"n": {"type": "int", "min": 10, "max": 1}`, "", `field "n": min 10 is above max 1`},
		{"number min above max", `"x": {"type": "number", "min": 0.75, "max": 0.5}`, "", `field "x": min 0.75 is above max 0.5`},
		{"fractional bound on an int", `"n": {"type": "int", "min": 0.5, "max": 10}`, "", `field "n": min 0.5: an int's bounds are 64-bit integers`},
		{"int bound past 64 bits", `"n": {"type": "int", "min": 0, "max": 99999999999999999999}`, "", "an int's bounds are 64-bit integers"},
		{"bound as a string", `"n": {"type": "int", "min": "0", "max": 10}`, "", `field "n": min: want a number`},
		{"number bound past float64", `"x": {"type": "number", "min": 0, "max": 1e400}`, "", `field "x": max 1e400: want a finite number`},
		{"min on a string", `"s": {"type": "string", "min": 1}`, "", "min, max does not apply to type string"},
		{"fractional max on a string", `"s": {"type": "string", "max": 1.5}`, "", "min, max does not apply to type string"},
		{"a number as a time's min", `"at": {"type": "time", "min": 0}`, "", `field "at": min 0: want an RFC 3339 time`},
		{"a time's max in days", `"at": {"type": "time", "max": "now+1d"}`, "", `field "at": max "now+1d": want an RFC 3339 time ("2026-01-01T00:00:00Z") or now, now+DURATION`},
		{"decimals on an int", `"n": {"type": "int", "min": 0, "max": 9, "decimals": 1}`, "", `field "n": decimals does not apply to type int`},
		{"decimals past float64", `"x": {"type": "number", "min": 0, "max": 1, "decimals": 16}`, "", `field "x": decimals 16: want 0 to 15`},
		{"unknown precision", `"at": {"type": "time", "precision": "us"}`, "", `field "at": precision "us": want s (the default), ms or day`},
		{"precision is a word", `"at": {"type": "time", "precision": "1ms"}`, "", `precision "1ms"`},
		{"precision on a string", `"s": {"type": "string", "precision": "s"}`, "", "precision does not apply to type string"},
		{"precision on a query time", `"s": "bool"`, `"since": {"type": "time", "precision": "ms"}`, `query parameter "since": precision does not apply to a query parameter`},
		{"bad pattern on a query string", `"s": "bool"`, `"q": {"type": "string", "pattern": "("}`, `query parameter "q": pattern "("`},
		{"unknown key", `"s": {"type": "string", "regex": "x"}`, "", "unknown field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := typesParse(tt.fields, tt.query)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// TestTypesParse: the route file's spellings of bounds, and what check fills in.
func TestTypesParse(t *testing.T) {
	c, err := typesParse(`"n": {"type": "int", "min": 0, "max": 1000}, "x": {"type": "number", "min": 0, "max": 1000},
		"r": {"type": "number", "min": -0.5, "max": 1.5e3}, "at": "time", "at_ms": {"type": "time", "precision": "ms"},
		"s": {"type": "string", "charset": "printable-ascii", "pattern": "[a-z]+"}`,
		`"limit": {"type": "int", "min": 1, "max": 50}, "since": "time", "w": {"type": "number", "min": 0.5, "max": 2}`)
	if err != nil {
		t.Fatal(err)
	}
	f := c.Routes[0].Response.Fields
	if n := f["n"]; n.Min == nil || *n.Min != 0 || n.Max == nil || *n.Max != 1000 || n.MinNumber != nil {
		t.Errorf("int bounds: %+v", n)
	}
	if x := f["x"]; x.MinNumber == nil || *x.MinNumber != 0 || x.MaxNumber == nil || *x.MaxNumber != 1000 || x.Min != nil || x.Max != nil {
		t.Errorf("number bounds written as whole numbers: %+v", x)
	}
	if r := f["r"]; *r.MinNumber != -0.5 || *r.MaxNumber != 1500 {
		t.Errorf("number bounds: %+v", r)
	}
	if f["at"].Precision != "s" || f["at_ms"].Precision != "ms" {
		t.Errorf("precisions: %q, %q; want s (the default) and ms", f["at"].Precision, f["at_ms"].Precision)
	}
	if q := c.Routes[0].Query["since"]; q.Precision != "" {
		t.Errorf("a query time's precision: %q, want none", q.Precision)
	}
}

// typesUpstream is a test upstream that records the query string of each request and answers
// with body.
type typesUpstream struct {
	mu    sync.Mutex
	query []string
	body  string
}

func (u *typesUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.query = append(u.query, r.URL.RawQuery)
	body := u.body
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, body)
}

func (u *typesUpstream) last() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.query) == 0 {
		return "(no request)"
	}
	return u.query[len(u.query)-1]
}

// TestTypesThroughTheGateway: query parameters are held to the new keys (a 400 that says which
// and why, never passing the value upstream), and a response outside its declared type is a 502.
func TestTypesThroughTheGateway(t *testing.T) {
	up := &typesUpstream{body: `{"at":"2026-11-30T11:00:00.987654Z","qty":3,"cur":"EUR"}`}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	file := strings.Replace(typesRoutes(`"at": "time", "qty": {"type": "int", "min": 1, "max": 1000}, "cur": {"type": "string", "pattern": "[A-Z]{3}"},
		"price": {"type": "number", "min": 0, "max": 100, "decimals": 2}, "day": {"type": "time", "precision": "day", "min": "2026-01-01T00:00:00Z", "max": "now+24h"}`,
		`"q": {"type": "string", "charset": "printable-ascii", "pattern": "[a-z ]{1,20}"}, "sku": {"type": "string", "charset": "alphanumeric"},
		 "w": {"type": "number", "min": 0, "max": 2.5}, "n": {"type": "int", "min": 1, "max": 50}, "since": "time",
		 "p": {"type": "number", "min": 0, "max": 10, "decimals": 1}, "from": {"type": "time", "min": "2026-01-01T00:00:00Z"}`),
		"http://up.internal", upSrv.URL, 1)
	c, err := routes.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlitemap.Open(context.Background(), filepath.Join(t.TempDir(), "map.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g, err := gateway.New(c, maker, store, prometheus.NewRegistry(), gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()
	pub, err := store.Publish(context.Background(), 1<<40, func() (string, error) { return maker.New("ord") })
	if err != nil {
		t.Fatal(err)
	}
	get := func(query string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/t/" + pub + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}

	code, body := get("?q=red+shoes&sku=Book42&w=2.5&n=50&since=2026-11-30T13:00:00.5%2B01:00")
	if code != 200 || body != `{"at":"2026-11-30T11:00:00Z","qty":3,"cur":"EUR"}` {
		t.Fatalf("GET: %d %s", code, body)
	}
	// A query time goes upstream to the nanosecond, in UTC.
	if got := up.last(); got != "n=50&q=red+shoes&since=2026-11-30T12%3A00%3A00.5Z&sku=Book42&w=2.5" {
		t.Fatalf("the upstream got %q", got)
	}
	for _, tt := range []struct{ query, want, value string }{
		{"?q=RED", "query parameter q: does not match the declared pattern", "RED"},
		{"?q=red%09shoes", "query parameter q: outside the declared charset printable-ascii", "shoes"},
		{"?sku=book-1", "query parameter sku: outside the declared charset alphanumeric", "book"},
		{"?w=2.75", "query parameter w: want a number in 0–2.5", "2.75"},
		{"?w=-0.5", "query parameter w: want a number in 0–2.5", ""},
		{"?n=51", "query parameter n: want an integer in 1–50", "51"},
		{"?p=2.25", "query parameter p: want at most 1 decimals", "2.25"},
		{"?from=2025-12-31T23:00:00Z", "query parameter from: want a time in 2026-01-01T00:00:00Z–…", "2025-12-31"},
	} {
		before := up.last()
		code, body := get(tt.query)
		if code != 400 || !strings.Contains(body, tt.want) || tt.value != "" && strings.Contains(body, tt.value) {
			t.Errorf("GET %s: %d %s; want 400 saying %q, without the value", tt.query, code, body, tt.want)
		}
		if up.last() != before {
			t.Errorf("GET %s reached the upstream", tt.query)
		}
	}
	for _, body := range []string{`{"qty":1001}`, `{"cur":"EURO"}`, `{"at":"tomorrow"}`, `{"price":19.999}`,
		`{"day":"2025-12-31T00:00:00Z"}`, `{"day":"` + time.Now().Add(49*time.Hour).UTC().Format(time.RFC3339) + `"}`} {
		up.mu.Lock()
		up.body = body
		up.mu.Unlock()
		if code, got := get(""); code != 502 || got != `{"error":"bad gateway"}` {
			t.Errorf("upstream %s: %d %s, want 502", body, code, got)
		}
	}
	up.mu.Lock()
	up.body = `{"price":19.90,"day":"2026-06-01T10:00:00+02:00"}`
	up.mu.Unlock()
	if code, got := get(""); code != 200 || got != `{"price":19.9,"day":"2026-06-01T00:00:00Z"}` {
		t.Errorf("a price and a day within their bounds: %d %s", code, got)
	}
}
