package routecheck_test

import (
	"math"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/routes/routecheck"
)

// fieldTypes parses a route whose response object declares fields, and returns them by name.
func fieldTypes(t *testing.T, fields string) map[string]*routes.Type {
	t.Helper()
	c, err := routes.Parse([]byte(route("r", fields)))
	if err != nil {
		t.Fatalf("%s: %v", fields, err)
	}
	return c.Routes[0].Response.Fields
}

func route(name, fields string) string {
	return `{"routes": [{"name": "` + name + `", "public": "/` + name + `/{public_id}", "upstream": "http://up.internal/` + name + `/{internal_id}",
  "resource": "ord", "response": {"type": "object", "fields": {` + fields + `}}}]}`
}

// TestLeafBits: each plain type's room, the log2 of how many values the gateway passes for it.
func TestLeafBits(t *testing.T) {
	secondsSince0 := float64(253402300799 + 62167219200 + 1) // 0000-01-01 to 9999-12-31T23:59:59, inclusive
	for _, tt := range []struct {
		name, typ string
		want      float64
	}{
		{"id", `"id:ord"`, 0},
		{"int 0..1023", `{"type": "int", "min": 0, "max": 1023}`, 10},
		{"int -512..511", `{"type": "int", "min": -512, "max": 511}`, 10},
		{"int of one value", `{"type": "int", "min": 7, "max": 7}`, 0},
		{"int 0..10^12", `{"type": "int", "min": 0, "max": 1000000000000}`, math.Log2(1e12 + 1)},
		{"int without bounds", `"int"`, 64},
		{"int with min only", `{"type": "int", "min": 0}`, 63},
		// Without decimals, every float64 in the range.
		{"number 1..2", `{"type": "number", "min": 1, "max": 2}`, math.Log2(1<<52 + 1)},
		{"number 0..1", `{"type": "number", "min": 0, "max": 1}`, math.Log2(float64(math.Float64bits(1)) + 1)},
		{"number -1..1", `{"type": "number", "min": -1, "max": 1}`, math.Log2(2*float64(math.Float64bits(1)) + 1)},
		{"number of one value", `{"type": "number", "min": 0.5, "max": 0.5}`, 0},
		{"number without bounds", `"number"`, math.Log2(2*float64(math.Float64bits(math.MaxFloat64)) + 1)},
		{"number 0..100 at 2 decimals", `{"type": "number", "min": 0, "max": 100, "decimals": 2}`, math.Log2(10001)},
		{"number 0..1 at 0 decimals", `{"type": "number", "min": 0, "max": 1, "decimals": 0}`, 1},
		{"number 0..1e300 at 2 decimals: the floats bound it", `{"type": "number", "min": 0, "max": 1e300, "decimals": 2}`, math.Log2(float64(math.Float64bits(1e300)) + 1)},
		// A time: the values of its precision in its span, at testNow (2026-11-30T12:00:00Z).
		{"time s, no bounds", `"time"`, math.Log2(secondsSince0)},
		{"time ms, no bounds", `{"type": "time", "precision": "ms"}`, math.Log2(secondsSince0 * 1000)},
		{"time day, no bounds", `{"type": "time", "precision": "day"}`, math.Log2(secondsSince0 / 86400)},
		{"time day in January", `{"type": "time", "precision": "day", "min": "2026-01-01T00:00:00Z", "max": "2026-01-31T23:59:59Z"}`, math.Log2(31)},
		{"time day to now+24h", `{"type": "time", "precision": "day", "min": "2026-01-01T00:00:00Z", "max": "now+24h"}`, math.Log2(335)},
		{"time s in the last hour", `{"type": "time", "min": "now-1h", "max": "now"}`, math.Log2(3601)},
		{"time ms in the last second", `{"type": "time", "precision": "ms", "min": "now-1s", "max": "now"}`, math.Log2(1001)},
		{"time whose span is empty at now", `{"type": "time", "min": "2027-01-01T00:00:00Z", "max": "now"}`, 0},
		{"enum of 3", `{"type": "enum", "values": ["a", "b", "c"]}`, math.Log2(3)},
		{"enum of 1", `{"type": "enum", "values": ["EUR"]}`, 0},
		{"enum with a value twice", `{"type": "enum", "values": ["a", "b", "a"]}`, 1},
		{"bool", `"bool"`, 1},
	} {
		typ := fieldTypes(t, `"f": `+tt.typ)["f"]
		if got := routecheck.LeafBits(typ, testNow); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("%s: %.4f bits, want %.4f", tt.name, got, tt.want)
		}
	}
}

// TestStringBits: a string's room, bounded by its pattern and its length.
func TestStringBits(t *testing.T) {
	sum := func(c float64, n int) float64 { // log2 of the strings of 0..n characters of c
		s := 0.0
		for k := 0; k <= n; k++ {
			s += math.Pow(c, float64(k))
		}
		return math.Log2(s)
	}
	for _, tt := range []struct {
		name, typ string
		want      float64
	}{
		{"three capitals", `{"type": "string", "pattern": "[A-Z]{3}"}`, 3 * math.Log2(26)},
		{"alternatives", `{"type": "string", "pattern": "EUR|USD|GBP"}`, math.Log2(3)},
		{"a literal", `{"type": "string", "pattern": "none"}`, 0},
		{"a literal in any case", `{"type": "string", "pattern": "(?i)eur"}`, 3},
		{"an optional part", `{"type": "string", "pattern": "ab(-[0-9])?"}`, math.Log2(11)},
		{"1 to 3 letters", `{"type": "string", "pattern": "[a-z]{1,3}"}`, math.Log2(26 + 26*26 + 26*26*26)},
		{"a star, within max_len", `{"type": "string", "max_len": 4, "pattern": "[a-z]*"}`, sum(26, 4)},
		{"anchors match no character", `{"type": "string", "pattern": "^[ab]$"}`, 1},
		{"max_len below the pattern's", `{"type": "string", "max_len": 2, "pattern": "[A-Z]{1,8}"}`, math.Log2(26 + 26*26)},
		{"the local sku", `{"type": "string", "max_len": 64, "pattern": "[A-Za-z0-9._-]{1,64}"}`, 64*math.Log2(65) + math.Log2(65.0/64)},
		{"a charset", `{"type": "string", "max_len": 3, "charset": "letters"}`, sum(52, 3)},
		{"alphanumeric", `{"type": "string", "max_len": 2, "charset": "alphanumeric"}`, sum(62, 2)},
		{"printable-ascii", `{"type": "string", "max_len": 2, "charset": "printable-ascii"}`, sum(95, 2)},
		{"pattern and charset: the lesser", `{"type": "string", "max_len": 2, "charset": "letters", "pattern": ".*"}`, sum(52, 2)},
		{"free-form: max_len bytes", `{"type": "string", "max_len": 2}`, sum(256, 2)},
	} {
		typ := fieldTypes(t, `"s": `+tt.typ)["s"]
		if got := routecheck.StringBits(typ); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("%s: %.4f bits, want %.4f", tt.name, got, tt.want)
		}
	}
}

// TestRoomOfObjects: an object's room is its fields' and its nested objects', an array N times
// its items'; the finding sums its ints, numbers, times, enums and bools only.
func TestRoomOfObjects(t *testing.T) {
	res, err := routecheck.Lint([]byte(route("order", `"id": "id:ord", "status": {"type": "enum", "values": ["placed", "shipped"]},
		"code": {"type": "string", "pattern": "[A-Z]{3}"}, "n": {"type": "int", "min": 0, "max": 1023}, "one": {"type": "enum", "values": ["x"]},
		"scores": {"type": "array", "max_items": 3, "items": {"type": "int", "min": 0, "max": 255}},
		"lines": {"type": "array", "max_items": 10, "items": {"type": "object", "fields": {"q": {"type": "int", "min": 1, "max": 16}, "on": "bool",
			"parts": {"type": "array", "max_items": 2, "items": {"type": "object", "fields": {"w": {"type": "int", "min": 0, "max": 3}}}}}}}`)), testNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 0 {
		t.Fatalf("findings: %s", lines(res.Findings))
	}
	// lines[].parts[]: w 2. lines[]: q 4 + on 1 + parts 2×2 = 9. The order: status 1, code 14.1,
	// n 10, scores 3×8, lines 10×9.
	want := []string{
		"order response: 139 bits (lines 10 × 9, scores 3 × 8, code 14, n 10, status 1, one 0); 35 in its numbers, times, enums and bools",
		"order response.lines[]: 9 bits (parts 2 × 2, q 4, on 1); 5 in its numbers, times, enums and bools",
		"order response.lines[].parts[]: 2 bits (w 2); 2 in its numbers, times, enums and bools",
	}
	if len(res.Room) != len(want) {
		t.Fatalf("%d rooms, want %d: %v", len(res.Room), len(want), res.Room)
	}
	for i, w := range want {
		if got := res.Room[i].String(); got != w {
			t.Errorf("room %d:\n got %s\nwant %s", i, got, w)
		}
	}
	r := res.Room[0]
	if r.Object != "response" || math.Abs(r.Bits-(1+3*math.Log2(26)+10+24+90)) > 0.01 || r.Own != 35 {
		t.Errorf("the order's room: %+v", r)
	}
	for _, f := range r.Fields {
		switch f.Name {
		case "lines":
			if f.MaxItems != 10 || f.ItemBits != 9 || f.Bits != 90 || f.Counted {
				t.Errorf("lines: %+v", f)
			}
		case "code":
			if f.Counted || f.Type != "string" {
				t.Errorf("a string is counted: %+v", f)
			}
		case "scores", "n", "status", "one":
			if !f.Counted {
				t.Errorf("%s is not counted: %+v", f.Name, f)
			}
		}
	}
}

// The two shapes a review rebuilt whole IDs from, which routes check passed before the room
// finding: see TestRebuildIDFromRoom in the gateway's tests, which does it.
const (
	// the local stack's order, as it was: total_cents up to 10^12 holds an ID's millisecond and
	// its 22 low bits, created_at at second precision its second.
	reviewOrder = `"id": "id:ord", "customer_id": "id:cus", "status": {"type": "enum", "values": ["placed", "shipped"]},
		"total_cents": {"type": "int", "min": 0, "max": 1000000000000}, "currency": {"type": "string", "max_len": 3, "pattern": "[A-Z]{3}"},
		"created_at": {"type": "time", "precision": "s"},
		"items": {"type": "array", "max_items": 100, "items": {"type": "object", "fields": {
			"sku": {"type": "string", "max_len": 64, "pattern": "[A-Za-z0-9._-]{1,64}"},
			"quantity": {"type": "int", "min": 1, "max": 1000}, "unit_cents": {"type": "int", "min": 0, "max": 10000000}}}}`
	// a number in 0..1 holds an ID's high bits in its fraction, an int in 0..1023 its low ten.
	reviewRatio = `"id": "id:ord", "ratio": {"type": "number", "min": 0, "max": 1}, "n": {"type": "int", "min": 0, "max": 1023}`
	// the ints split into nested objects beside a time at seconds: each object alone carries
	// under 41 bits, the order 82 with them (created_at 38, billing 24, shipping 20).
	reviewNested = `"id": "id:ord", "created_at": {"type": "time", "precision": "s"},
		"shipping": {"type": "object", "fields": {"cents": {"type": "int", "min": 0, "max": 1048575}, "to": {"type": "string", "max_len": 8, "charset": "letters"}}},
		"billing": {"type": "object", "fields": {"tax": {"type": "object", "fields": {"cents": {"type": "int", "min": 0, "max": 16777215}}}}},
		"lines": {"type": "array", "max_items": 10, "items": {"type": "object", "fields": {"q": {"type": "int", "min": 1, "max": 16}}}}`
)

func TestRoomFindsRebuiltIDShapes(t *testing.T) {
	for _, tt := range []struct {
		name, fields, problem string
		declare               []string
	}{
		{"order", reviewOrder, "carry 79 bits together (total_cents 39, created_at 38, status 1)",
			[]string{`total_cents: a min and max nearer its real values`, `created_at: precision day, or a min and max ({"type": "time", "min": "2026-01-01T00:00:00Z", "max": "now+24h"})`}},
		{"ratio", reviewRatio, "carry 71 bits together (ratio 61, n 10)",
			[]string{`ratio: its decimals ({"type": "number", "min": 0, "max": 1000, "decimals": 2}`, `n: a min and max nearer`}},
		// The nested objects count in the order's (its lines, an array of objects, do not).
		{"nested", reviewNested, "carry 82 bits together (created_at 38, billing 24, shipping 20)",
			[]string{`created_at: precision day`, `billing: narrower fields`, `shipping: narrower fields`}},
	} {
		res, err := routecheck.Lint([]byte(route(tt.name, tt.fields)), testNow)
		if err != nil {
			t.Fatal(err)
		}
		var found []routecheck.Finding
		for _, f := range res.Findings {
			if strings.HasPrefix(f.Problem, routecheck.RoomForTime) {
				found = append(found, f)
			}
		}
		if len(found) != 1 || found[0].Route != tt.name || found[0].Field != "response" {
			t.Fatalf("%s: room findings %s", tt.name, lines(found))
		}
		f := found[0]
		if want := routecheck.RoomForTime + ": its numbers, times, enums and bools " + tt.problem + ", and an ID's time takes 41"; f.Problem != want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, f.Problem, want)
		}
		for _, d := range tt.declare {
			if !strings.Contains(f.Declare, d) {
				t.Errorf("%s: the declaration lacks %q: %s", tt.name, d, f.Declare)
			}
		}
	}
	// Declared as the findings say, neither shape has room for an ID's time.
	for _, fixed := range []string{
		strings.NewReplacer(`"max": 1000000000000}`, `"max": 100000000}`,
			`"created_at": {"type": "time", "precision": "s"}`, `"created_at": {"type": "time", "precision": "day", "min": "2026-01-01T00:00:00Z", "max": "now+24h"}`).Replace(reviewOrder),
		strings.Replace(reviewRatio, `"max": 1}`, `"max": 1, "decimals": 3}`, 1),
		strings.NewReplacer(`"precision": "s"}`, `"precision": "day", "min": "2026-01-01T00:00:00Z", "max": "now+24h"}`,
			`"max": 16777215}`, `"max": 1023}`).Replace(reviewNested),
	} {
		res, err := routecheck.Lint([]byte(route("fixed", fixed)), testNow)
		if err != nil || len(res.Findings) != 0 {
			t.Errorf("%s: %v\n%s", fixed, err, lines(res.Findings))
		}
	}
}

// TestLocalRoutesRoom: the local stack's routes leave under 41 bits in each object's numbers,
// times, enums and bools; their room, as routes check prints it.
func TestLocalRoutesRoom(t *testing.T) {
	res, err := routecheck.LintFile("../../../deploy/local/routes.json", testNow)
	if err != nil {
		t.Fatal(err)
	}
	order := "(items 100 × 418, total_cents 26, created_at 8, status 1, currency 0); 35 in its numbers, times, enums and bools"
	items := "418 bits (sku 385, unit_cents 23, quantity 9); 33 in its numbers, times, enums and bools"
	want := []string{
		"order response: 41903 bits " + order,
		"order response.items[]: " + items,
		"customer-orders response: 2095164 bits (orders 50 × 41903, next_cursor 0); 0 in its numbers, times, enums and bools",
		"customer-orders response.orders[]: 41903 bits " + order,
		"customer-orders response.orders[].items[]: " + items,
	}
	if len(res.Findings) != 0 || len(res.Room) != len(want) {
		t.Fatalf("findings:\n%s\nroom: %v", lines(res.Findings), res.Room)
	}
	for i, w := range want {
		if got := res.Room[i].String(); !strings.HasPrefix(got, w) {
			t.Errorf("room %d:\n got %s\nwant %s", i, got, w)
		}
	}
}
