package gateway_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/internal/leakcheck"
	"github.com/idgen/idgen/services/public-id/internal/scan"
)

// now is a fixed clock for the detector, so the window does not move under the tests.
var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func detector() gateway.Detector { return gateway.Detector{Now: func() time.Time { return now }} }

// idAt is an internal ID made at t (v2 layout: region 2, machine 170, sequence seq).
func idAt(t time.Time, seq int64) int64 {
	return (t.UnixMilli()-idcore.EpochUnixMs)<<22 | 2<<19 | 170<<10 | seq
}

const orderRoutes = `{"routes": [{
  "name": "order", "public": "/orders/{public_id}", "upstream": "http://orders.internal/internal/orders/{internal_id}",
  "resource": "ord",
  "query": {"expand": {"type": "enum", "values": ["items"]}, "limit": {"type": "int", "min": 1, "max": 50}},
  "headers": {"ETag": "plain", "Location": "location"},
  "response": {"type": "object", "fields": {
    "id": "id:ord", "customer_id": "id:cus", "status": {"type": "enum", "values": ["placed", "shipped"]},
    "total_cents": "int", "weight": "number", "note": {"type": "string", "max_len": 200}, "paid": "bool",
    "created_at": "time",
    "items": {"type": "array", "max_items": 5, "items": {"type": "object", "fields": {"sku": "string", "order_id": "id:ord"}}}
  }}
}]}`

func orderType(t testing.TB) *routes.Type {
	t.Helper()
	c, err := routes.Parse([]byte(orderRoutes))
	if err != nil {
		t.Fatal(err)
	}
	return c.Routes[0].Response
}

func TestParseRoutesRefuses(t *testing.T) {
	base := func(edit string) string {
		return strings.Replace(orderRoutes, `"resource": "ord",`, `"resource": "ord", `+edit, 1)
	}
	for _, tt := range []struct{ name, routes, want string }{
		{"POST forwards a body", base(`"methods": ["POST"],`), "never forwards a request body"},
		{"unknown type", strings.Replace(orderRoutes, `"total_cents": "int"`, `"total_cents": "integer"`, 1), `type "integer"`},
		{"id without resource", strings.Replace(orderRoutes, `"id:cus"`, `"id:"`, 1), "resource"},
		{"object without fields", strings.Replace(orderRoutes, `"paid": "bool"`, `"paid": {"type": "object"}`, 1), "declares its fields"},
		{"unknown key", strings.Replace(orderRoutes, `"resource": "ord",`, `"resource": "ord", "id_fields": {},`, 1), "unknown field"},
		{"header kind", strings.Replace(orderRoutes, `"ETag": "plain"`, `"ETag": "id"`, 1), "want plain or location"},
		{"Set-Cookie", strings.Replace(orderRoutes, `"ETag": "plain"`, `"Set-Cookie": "plain"`, 1), "sets it itself"},
		{"no response type", strings.Replace(orderRoutes, `"response"`, `"response_"`, 1), "unknown field"},
		{"two public ids", strings.Replace(orderRoutes, `/orders/{public_id}"`, `/orders/{public_id}/{public_id}"`, 1), "one {public_id}"},
		{"query clash", strings.Replace(orderRoutes, `{internal_id}"`, `{internal_id}?expand=all"`, 1), "sets it already"},
		{"Location as plain", strings.Replace(orderRoutes, `"Location": "location"`, `"Location": "plain"`, 1), "holds upstream URLs"},
		{"Link", strings.Replace(orderRoutes, `"ETag": "plain"`, `"Link": "plain"`, 1), "holds upstream URLs"},
		{"one header twice", strings.Replace(orderRoutes, `"ETag": "plain"`, `"ETag": "plain", "etag": "plain"`, 1), "declared twice"},
		{"bad header name", strings.Replace(orderRoutes, `"ETag": "plain"`, `"ETag ": "plain"`, 1), "not a valid header name"},
		{"max_len on a time", strings.Replace(orderRoutes, `"created_at": "time"`, `"created_at": {"type": "time", "max_len": 5}`, 1), "max_len does not apply"},
		{"values on a string", strings.Replace(orderRoutes, `"sku": "string"`, `"sku": {"type": "string", "values": ["a"]}`, 1), "values does not apply"},
		{"two routes, one public path", strings.Replace(orderRoutes, `}]}`, `}, `+strings.Replace(strings.TrimPrefix(strings.TrimSuffix(orderRoutes, `]}`), `{"routes": [`), `"name": "order"`, `"name": "order2"`, 1)+`]}`, 1), "public path /orders/{public_id} is route"},
		{"two routes, one upstream path", strings.Replace(orderRoutes, `}]}`, `}, `+strings.Replace(strings.Replace(strings.TrimPrefix(strings.TrimSuffix(orderRoutes, `]}`), `{"routes": [`), `"name": "order"`, `"name": "order2"`, 1), `"/orders/`, `"/v2/orders/`, 1)+`]}`, 1), "upstream path"},
		{"object query", strings.Replace(orderRoutes, `"limit": {"type": "int", "min": 1, "max": 50}`, `"limit": {"type": "object", "fields": {"a": "int"}}`, 1), "query parameter"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := routes.Parse([]byte(tt.routes))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestDetector(t *testing.T) {
	id := idAt(now.Add(-time.Hour), 3)
	old := idAt(idcore.Epoch.Add(40*24*time.Hour), 1)
	for _, tt := range []struct {
		text string
		hit  bool
	}{
		{fmt.Sprint(id), true},
		{"order " + fmt.Sprint(id) + " shipped", true},
		{"ref 0x" + strconv.FormatInt(id, 16), true},
		{"ref " + strings.ToUpper(strconv.FormatInt(id, 16)), true},
		{fmt.Sprint(old), true},
		{"000" + fmt.Sprint(id), true},
		// From the future: not an ID as a whole, but its first 17 digits could be one.
		{fmt.Sprint(idAt(now.Add(48*time.Hour), 0)), true},
		{"4111111111111111", false}, // a card number: 16 digits
		{"+44 20 7946 0958 and 999999999999999", false},
		// A long hex run can hold an ID's hex digits anywhere: a digest in a free-form string is
		// refused (declare it with a pattern the ID cannot match, or leave it out).
		{"sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", true},
		{"total 4200, 2026-11-30T12:00:00Z", false},
		{"deadbeefcafe", false},
		{"replaces ORD" + fmt.Sprint(id), true},
		{"ID" + fmt.Sprint(id) + "A", true},
		{fmt.Sprint(id) + "e-3", true},
		{"1.2095046089091686e+17", true},
		{groups(fmt.Sprint(id), ","), true},
		{groups(fmt.Sprint(id), " "), true},
		{fmt.Sprintf("00000000-0000-0000-%04x-%012x", uint64(id)>>48, uint64(id)&(1<<48-1)), true}, // a UUID of the ID
		{base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(`{"after":%d}`, id))), true},         // a cursor
		{base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, uint64(id))), true},
		{base64.RawURLEncoding.EncodeToString(binary.LittleEndian.AppendUint64(nil, uint64(id))), true},
		{"2026-11-30, 12:00", false},
		{"2026-11-30, 12, 345, 6789", true}, // groups joined by ", " make 17 digits
		// 16 hex digits with letters: an ID's hex digits fit in it.
		{"tracking 1Z999AA10123456784", true},
		{base64.StdEncoding.EncodeToString([]byte("a perfectly ordinary sentence")), false},
	} {
		if got := gateway.DetectorFind(detector(), tt.text) != ""; got != tt.hit {
			t.Errorf("%q: found %v, want %v", tt.text, got, tt.hit)
		}
	}
}

// groups writes digits in groups of three joined by sep, as thousands separators do.
func groups(digits, sep string) string {
	var parts []string
	for len(digits) > 3 {
		parts = append([]string{digits[len(digits)-3:]}, parts...)
		digits = digits[:len(digits)-3]
	}
	return strings.Join(append([]string{digits}, parts...), sep)
}

func rewrite(t *testing.T, body string, known ...int64) ([]byte, error) {
	t.Helper()
	rw, err := gateway.Rewrite([]byte(body), orderType(t), detector(), gateway.Limits{})
	if err != nil {
		return nil, err
	}
	ids, res := rw.IDs()
	pubs := map[int64]string{}
	var k gateway.Known
	for i, id := range ids {
		if _, ok := pubs[id]; !ok {
			pubs[id] = res[i] + "_P" + strconv.Itoa(i)
		}
		k.Add(id)
	}
	for _, id := range known {
		k.Add(id)
	}
	return rw.Fill(pubs, &k)
}

func TestRewrite(t *testing.T) {
	a, c := idAt(now.Add(-time.Minute), 1), idAt(now.Add(-time.Hour), 2)
	ok := func(body, want string) {
		t.Helper()
		out, err := rewrite(t, body)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if string(out) != want {
			t.Fatalf("%s:\n got %s\nwant %s", body, out, want)
		}
	}
	// Declared members in declared order of the body, undeclared and case variants dropped.
	ok(fmt.Sprintf(`{"id":"%d","ID":"%d","Id":%d,"orderId":"%d","ref":"%d","customer_id":%d,"total_cents":4200,
		"status":"placed","items":[{"sku":"a","order_id":"%d","extra":{"deep":[%d]}}],"region_number":2,"machine":170,"parent":null}`,
		a, a, a, a, a, c, a, a),
		`{"id":"ord_P0","customer_id":"cus_P1","total_cents":4200,"status":"placed","items":[{"sku":"a","order_id":"ord_P0"}]}`)
	ok(`{"note":null,"id":null,"weight":1.5,"paid":true}`, `{"note":null,"id":null,"weight":1.5,"paid":true}`)
	// An escaped name is the name it spells.
	ok(fmt.Sprintf(`{"\u0069d":"%d"}`, a), `{"id":"ord_P0"}`)

	bad := func(name, body, field string, known ...int64) {
		t.Helper()
		_, err := rewrite(t, body, known...)
		var ue *gateway.UnsafeError
		if !asUnsafe(err, &ue) || ue.Field != field {
			t.Fatalf("%s: err %v, want unsafe in field %q", name, err, field)
		}
		if strings.Contains(err.Error(), fmt.Sprint(a)) || strings.Contains(err.Error(), fmt.Sprint(c)) {
			t.Fatalf("%s: the error repeats an internal id: %v", name, err)
		}
	}
	bad("bare number", fmt.Sprint(a), "")
	bad("bare string", fmt.Sprintf(`"%d"`, a), "")
	bad("id in a note", fmt.Sprintf(`{"id":"%d","note":"order %d shipped"}`, a, a), "note")
	bad("unknown id in a note", fmt.Sprintf(`{"note":"order %d shipped"}`, c), "note")
	bad("escaped digits", `{"note":"order `+escapeDigits(fmt.Sprint(c))+`"}`, "note")
	bad("hex in a note", fmt.Sprintf(`{"note":"0x%x"}`, c), "note")
	bad("known id inside a longer run", fmt.Sprintf(`{"id":"%d","note":"99%d99"}`, a, a), "note")
	bad("request's id in a note", fmt.Sprintf(`{"note":"x%dx"}`, c), "note", c)
	bad("id as an int", fmt.Sprintf(`{"total_cents":%d}`, a), "total_cents")
	bad("negated id", fmt.Sprintf(`{"total_cents":-%d}`, a), "total_cents")
	bad("id glued to hex letters", fmt.Sprintf(`{"note":"ORD%dA"}`, c), "note")
	bad("id as a cursor", fmt.Sprintf(`{"note":"%s"}`, base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(`{"after":%d}`, c)))), "note")
	bad("id as a float", fmt.Sprintf(`{"weight":%g}`, float64(a)), "weight")
	bad("float as int", `{"total_cents":42.0}`, "total_cents")
	bad("object as id", `{"id":{"x":1}}`, "id")
	bad("word as id", `{"id":"abc"}`, "id")
	bad("negative id", `{"id":-5}`, "id")
	bad("not an enum value", `{"status":"lost"}`, "status")
	bad("too long", `{"note":"`+strings.Repeat("x", 201)+`"}`, "note")
	bad("not a time", `{"created_at":"yesterday"}`, "created_at")
	bad("too many items", `{"items":[{},{},{},{},{},{}]}`, "items")
	bad("array for object", `[]`, "")
	bad("duplicate names", fmt.Sprintf(`{"id":"%d","id":"%d"}`, a, c), "")
	bad("two values", `{} {}`, "")
	bad("not JSON", fmt.Sprintf(`order=%d`, a), "")
	bad("deep undeclared", `{"x":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`, "")
	bad("deep declared", `{"items":[{"sku":"a"}],"x":{"y":`+strings.Repeat("[", 70)+`}}`, "")
}

func escapeDigits(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

func asUnsafe(err error, target **gateway.UnsafeError) bool {
	ue, ok := err.(*gateway.UnsafeError)
	if ok {
		*target = ue
	}
	return ok
}

func TestDeepBodyIsCheap(t *testing.T) {
	body := bytes.Repeat([]byte("["), 1<<20)
	typ := orderType(t)
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := gateway.Rewrite(body, typ, detector(), gateway.Limits{}); err == nil {
			t.Fatal("a megabyte of [ was accepted")
		}
	})
	if allocs > 200 {
		t.Fatalf("%v allocations to refuse a deep body: the refusal should come at depth 64", allocs)
	}
}

// FuzzRewrite: whatever an upstream sends, no rewritten body shows an internal ID the upstream
// sent or the request carried (its id fields, any number the detector reads in the body, the
// request's own ID), in any spelling leakcheck knows. Besides the body the fuzzer mutates, it
// picks an ID and one of the spellings above and splices it into the body at a byte offset,
// so that every spelling meets every context.
func FuzzRewrite(f *testing.F) {
	a := idAt(now.Add(-time.Minute), 1)
	f.Add([]byte(fmt.Sprintf(`{"id":"%d","note":"thanks","items":[{"order_id":%d,"sku":"%x"}]}`, a, a+1, a+2)), a, int64(0), uint8(0), uint16(0))
	f.Add([]byte(fmt.Sprintf(`{"id":%d,"ID":%d,"note":"x %d"}`, a, a, a-1)), a, int64(0), uint8(0), uint16(0))
	f.Add([]byte(`{"total_cents":4200,"weight":1e17,"status":"placed","paid":false}`), int64(0), int64(0), uint8(0), uint16(0))
	f.Add([]byte(`[1,2,{"id":[1,"2"]}]`), int64(5), int64(0), uint8(0), uint16(0))
	// The input that found an ID inside a longer digit run of a plain field.
	f.Add([]byte(`{"":12085610152058265,"note":"212085610152058265"}`), int64(0), int64(0), uint8(0), uint16(0))
	// Each spelling, of an unknown ID and of the request's, inside a note and an ETag-like word.
	if len(leakcheck.Spellings) >= 0x7f {
		f.Fatalf("%d spellings: form's 7 bits name at most 126 and the ID times ten", len(leakcheck.Spellings))
	}
	for i := range leakcheck.Spellings {
		f.Add([]byte(`{"note":"ref  ok","sku":"x"}`), a, a+7, uint8(i), uint16(13))
		f.Add([]byte(`{"note":"ref  ok","sku":"x"}`), a, a+7, uint8(i|0x80), uint16(12))
	}
	f.Add([]byte(`{"total_cents":}`), a, a, uint8(0x7f), uint16(15)) // the ID times ten in an int (0x7f: past the spellings)
	// The accidental spellings of issue 32 as bodies: page tokens, share codes, hex bytes, a hex
	// float, escapes, and sixteen a's and b's (no ID).
	for _, note := range []string{
		base64.RawURLEncoding.EncodeToString(binary.AppendUvarint([]byte{0x08}, uint64(a))),
		base64.RawURLEncoding.EncodeToString(binary.LittleEndian.AppendUint64([]byte{0x09}, uint64(a))),
		"cur:" + base64.RawStdEncoding.EncodeToString(binary.BigEndian.AppendUint64([]byte{'x'}, uint64(a))),
		base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, uint64(a))))),
		scan.EncodeBase(uint64(a), "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
		scan.EncodeBase(uint64(a), "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"),
		scan.EncodeBase(uint64(a), "0123456789ABCDEFGHJKMNPQRSTVWXYZ"),
		fmt.Sprintf("% x", binary.BigEndian.AppendUint64(nil, uint64(a))),
		strconv.FormatFloat(float64(a), 'x', -1, 64),
		leakcheck.Interleave(fmt.Sprint(a), "&shy;"),
		"%3" + strings.Join(strings.Split(fmt.Sprint(a), ""), "%3"),
		fmt.Sprint(a)[2:], "abababababababab",
	} {
		f.Add([]byte(`{"note":"`+note+`"}`), a, int64(0), uint8(0x7e), uint16(0))
		f.Add([]byte(`{"id":"`+fmt.Sprint(a)+`","note":"`+note+`"}`), a, int64(0), uint8(0x7e), uint16(0))
	}
	typ := orderType(f)
	scan := detector()
	lo, hi := gateway.DetectorWindow(scan)
	f.Fuzz(func(t *testing.T, body []byte, requestID, embed int64, form uint8, at uint16) {
		if requestID < 0 {
			return // internal IDs are never negative
		}
		var sent []int64
		// An ID to splice in: one in the detector's window, or the request's own.
		x := lo + int64(uint64(embed)%uint64(hi-lo+1))
		if form&0x80 != 0 {
			x = requestID
		}
		var spliced string
		switch sp := int(form & 0x7f); {
		case sp < len(leakcheck.Spellings):
			spliced = leakcheck.Spellings[sp].Fn(x)
			if b, err := json.Marshal(spliced); err == nil {
				spliced = string(b[1 : len(b)-1]) // as it is written inside a JSON string
			}
		case sp == 0x7f && x <= math.MaxInt64/10:
			spliced = strconv.FormatInt(x*10, 10)
		}
		if spliced != "" {
			pos := int(at) % (len(body) + 1)
			body = append(append(append([]byte{}, body[:pos]...), spliced...), body[pos:]...)
			sent = append(sent, x)
		}
		rw, err := gateway.Rewrite(body, typ, scan, gateway.Limits{})
		if err != nil {
			return
		}
		ids, res := rw.IDs()
		var k gateway.Known
		k.Add(requestID)
		pubs := map[int64]string{}
		for i, id := range ids {
			pubs[id] = res[i] + "_X" + strconv.Itoa(i)
			k.Add(id)
		}
		out, err := rw.Fill(pubs, &k)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q: %q", body, out)
		}
		own := append([]int64{requestID}, ids...)
		sent = append(sent, own...)
		sent = append(sent, gateway.DetectorAll(scan, string(body))...)
		if l, ok := leakcheck.JSON(string(out), sent); ok {
			t.Fatalf("internal id %d (as %s) in %q out of %q", l.ID, l.Form, out, body)
		}
		if l, ok := leakcheck.JSONOwn(string(out), own); ok {
			t.Fatalf("the response's own id %d (as %s) in %q out of %q", l.ID, l.Form, out, body)
		}
	})
}

// TestRouteTarget: the upstream URL a route makes for an ID is the one its template gives with
// the ID written in and parsed, with the query after the template's own.
func TestRouteTarget(t *testing.T) {
	for _, up := range []string{
		"http://orders.internal/internal/orders/{internal_id}",
		"http://orders.internal:8080/internal/orders/{internal_id}/items?v=2",
		"http://orders.internal/internal/orders/{internal_id}?",
		"http://orders.internal/internal/a%20b/{internal_id}",
		"http://orders.internal/internal/a%2Fb/{internal_id}.json",
		"http://orders.internal/internal/orders?id={internal_id}",
		"http://[::1]:9000/o/{internal_id}",
		"https://orders.internal:/o/{internal_id}",
	} {
		file := strings.Replace(orderRoutes, "http://orders.internal/internal/orders/{internal_id}", up, 1)
		file = strings.Replace(file, `"query": {"expand": {"type": "enum", "values": ["items"]}, "limit": {"type": "int", "min": 1, "max": 50}},`, "", 1)
		c, err := routes.Parse([]byte(file))
		if err != nil {
			t.Fatalf("%s: %v", up, err)
		}
		for _, id := range []int64{0, 7, idAt(now, 5)} {
			for _, query := range []string{"", "limit=5", "expand=items&limit=5"} {
				s := strings.Replace(up, "{internal_id}", strconv.FormatInt(id, 10), 1)
				if query != "" {
					if strings.Contains(up, "?") {
						s += "&" + query
					} else {
						s += "?" + query
					}
				}
				want, err := url.Parse(s)
				if err != nil {
					t.Fatal(err)
				}
				got, err := gateway.RouteTarget(c.Routes[0], id, query)
				if err != nil {
					t.Fatalf("%s, %d, %q: %v", up, id, query, err)
				}
				if *got != *want || got.String() != s || got.RequestURI() != want.RequestURI() {
					t.Errorf("%s, %d, %q: %#v (%s), want %#v (%s)", up, id, query, *got, got, *want, s)
				}
			}
		}
	}
}
