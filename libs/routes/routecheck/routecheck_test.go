package routecheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/routes/routecheck"
)

// oneOfEach is a route file with one of each finding, and fields that pass beside them.
const oneOfEach = `{"routes": [
 {"name": "order", "public": "/orders/{public_id}", "upstream": "http://orders.internal/orders/{internal_id}", "resource": "ord",
  "query": {"limit": "int", "page": {"type": "int", "min": 1, "max": 100}, "q": {"type": "string", "max_len": 20},
            "sort": {"type": "enum", "values": ["new", "old"]}, "since": "time"},
  "response": {"type": "object", "fields": {
    "id": "id:ord", "customer_id": "id:cus", "status": {"type": "enum", "values": ["placed"]}, "paid": "bool",
    "total_cents": {"type": "int", "min": 0}, "weight": "number",
    "currency": {"type": "string", "pattern": "[A-Z]{3}"}, "note": {"type": "string", "charset": "printable-ascii"},
    "created_at": {"type": "time", "precision": "ms"}, "shipped_at": "time",
    "items": {"type": "array", "items": {"type": "object", "fields": {"sku": "string", "quantity": {"type": "int", "min": 1, "max": 1000}}}}}}},
 {"name": "event", "public": "/events/{public_id}", "upstream": "http://events.internal/events/{internal_id}", "resource": "evt",
  "response": {"type": "object", "fields": {"at": {"type": "time", "precision": "ms"}, "kind": {"type": "string", "charset": "letters"},
    "ratio": {"type": "number", "min": 0, "max": 1}}}},
 {"name": "log", "public": "/logs/{public_id}", "upstream": "http://logs.internal/logs/{internal_id}", "resource": "log",
  "response": {"type": "array", "max_items": 10, "items": {"type": "time", "precision": "ms"}}}
]}`

// testNow is the moment the tests take a time's relative bounds at.
var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestCheckFindsOneOfEach(t *testing.T) {
	res, err := routecheck.Lint([]byte(oneOfEach), testNow)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Findings
	want := []routecheck.Finding{
		{Route: "order", Field: "query.limit", Problem: routecheck.UnboundedInt},
		{Route: "order", Field: "query.q", Problem: routecheck.FreeFormString},
		{Route: "order", Field: "response.items[].sku", Problem: routecheck.FreeFormString},
		{Route: "order", Field: "response.total_cents", Problem: routecheck.UnboundedInt},
		{Route: "order", Field: "response.weight", Problem: routecheck.UnboundedNumber},
		{Route: "order", Field: "response.created_at", Problem: routecheck.MillisecondTime + " (response.items[].quantity, response.total_cents, response.weight) can rebuild an ID"},
		{Route: "order", Field: "response", Problem: routecheck.RoomForTime + ": its numbers, times, enums and bools carry 214 bits together " +
			"(weight 63, total_cents 63, created_at 48, shipped_at 38, paid 1), and an ID's time takes 41"},
		// A bounded number is an int field too; a millisecond time alone is not a finding.
		{Route: "event", Field: "response.at", Problem: routecheck.MillisecondTime + " (response.ratio) can rebuild an ID"},
		{Route: "event", Field: "response", Problem: routecheck.RoomForTime + ": its numbers, times, enums and bools carry 110 bits together " +
			"(ratio 61, at 48), and an ID's time takes 41"},
		// A response that is not an object: ten millisecond times.
		{Route: "log", Field: "response", Problem: routecheck.RoomForTime + ": its numbers, times, enums and bools carry 481 bits together " +
			"(response 481), and an ID's time takes 41"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d findings, want %d:\n%s", len(got), len(want), lines(got))
	}
	for i, w := range want {
		g := got[i]
		if g.Route != w.Route || g.Field != w.Field || g.Problem != w.Problem || g.Declare == "" {
			t.Errorf("finding %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	// Each finding says what to declare, in words a route file uses.
	for _, f := range got {
		var key string
		switch {
		case f.Problem == routecheck.UnboundedInt, f.Problem == routecheck.UnboundedNumber:
			key = `"min": 0, "max": `
		case f.Problem == routecheck.FreeFormString:
			key = `"pattern": `
		case strings.HasPrefix(f.Problem, routecheck.RoomForTime):
			key = ", until they carry under 41 bits together"
		default:
			key = "precision s"
		}
		if !strings.Contains(f.Declare, key) {
			t.Errorf("%s: the declaration lacks %q", f, key)
		}
	}
	if s := got[0].String(); s != "order query.limit: unbounded int: an ID fits; declare min and max, the field's smallest and largest values "+
		`({"type": "int", "min": 0, "max": 100000})` {
		t.Errorf("String: %s", s)
	}
}

// TestDeclarationsPass: each finding's field, declared as the finding says, passes the check.
func TestDeclarationsPass(t *testing.T) {
	day := `{"type": "time", "precision": "day", "min": "2026-01-01T00:00:00Z", "max": "now+24h"}`
	fixed := strings.NewReplacer(
		`"limit": "int"`, `"limit": {"type": "int", "min": 1, "max": 50}`,
		`"q": {"type": "string", "max_len": 20}`, `"q": {"type": "string", "max_len": 20, "charset": "printable-ascii"}`,
		`"sku": "string"`, `"sku": {"type": "string", "pattern": "[a-z0-9-]{1,64}"}`,
		`"total_cents": {"type": "int", "min": 0}`, `"total_cents": {"type": "int", "min": 0, "max": 10000}`,
		`"weight": "number"`, `"weight": {"type": "number", "min": 0, "max": 100, "decimals": 0}`,
		`"created_at": {"type": "time", "precision": "ms"}`, `"created_at": `+day, `"shipped_at": "time"`, `"shipped_at": `+day,
		`"at": {"type": "time", "precision": "ms"}`, `"at": {"type": "time", "precision": "day"}`,
		`"ratio": {"type": "number", "min": 0, "max": 1}`, `"ratio": {"type": "number", "min": 0, "max": 1, "decimals": 2}`,
		`"items": {"type": "time", "precision": "ms"}`, `"items": {"type": "time", "precision": "day", "min": "now-72h", "max": "now"}`,
	).Replace(oneOfEach)
	res, err := routecheck.Lint([]byte(fixed), testNow)
	if err != nil || len(res.Findings) != 0 {
		t.Fatalf("%v\n%s", err, lines(res.Findings))
	}
}

// TestCheckErrors: a file the gateway would not start on is an error, the gateway's own.
func TestCheckErrors(t *testing.T) {
	for _, bad := range []string{
		`{"routes": []}`,
		`not json`,
		strings.Replace(oneOfEach, `"pattern": "[A-Z]{3}"`, `"pattern": "[A-Z"`, 1),
		strings.Replace(oneOfEach, `"paid": "bool"`, `"paid": {"type": "bool", "charset": "letters"}`, 1),
	} {
		f, err := routecheck.Check([]byte(bad))
		_, gwErr := routes.Parse([]byte(bad))
		if err == nil || f != nil || gwErr == nil || err.Error() != gwErr.Error() {
			t.Errorf("%.60s: findings %v, err %v; want the gateway's error %v", bad, f, err, gwErr)
		}
	}
	path := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(path, []byte(`{"routes": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := routecheck.CheckFile(path)
	_, gwErr := routes.Load(path)
	if err == nil || err.Error() != gwErr.Error() || !strings.Contains(err.Error(), path) {
		t.Errorf("CheckFile: %v; want the gateway's %v", err, gwErr)
	}
	if _, err := routecheck.CheckFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file passed")
	}
}

// TestLocalRoutesAreClean: the local stack's route file, the one a newcomer copies, has no
// findings.
func TestLocalRoutesAreClean(t *testing.T) {
	got, err := routecheck.CheckFile("../../../deploy/local/routes.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Fatalf("deploy/local/routes.json:\n%s", lines(got))
	}
}

func lines(fs []routecheck.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.String())
	}
	return strings.Join(out, "\n")
}

// TestReadmeExampleIsClean: the route in the service README's gateway section, the other file a
// newcomer copies, has no findings.
func TestReadmeExampleIsClean(t *testing.T) {
	b, err := os.ReadFile("../../../services/public-id/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## The gateway\n")
	_, rest, ok2 := strings.Cut(rest, "```json\n")
	example, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("no JSON example in the README's gateway section")
	}
	got, err := routecheck.Check([]byte(example))
	if err != nil || len(got) > 0 {
		t.Fatalf("the README's example: %v\n%s", err, lines(got))
	}
}
