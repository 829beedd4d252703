package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// routesOneOfEach has one of each finding of routes check: an unbounded int, a free-form string,
// an unbounded number, a millisecond time beside int fields, an object with room for an ID's time.
const routesOneOfEach = `{"routes": [{"name": "order", "public": "/orders/{public_id}",
  "upstream": "http://orders.internal/orders/{internal_id}", "resource": "ord",
  "query": {"limit": "int"},
  "response": {"type": "object", "fields": {"id": "id:ord", "status": {"type": "enum", "values": ["placed"]},
    "total_cents": {"type": "int", "min": 0, "max": 100000}, "weight": "number", "sku": "string",
    "created_at": {"type": "time", "precision": "ms"}}}}]}`

// routesClean declares what routes check asked for.
const routesClean = `{"routes": [{"name": "order", "public": "/orders/{public_id}",
  "upstream": "http://orders.internal/orders/{internal_id}", "resource": "ord",
  "query": {"limit": {"type": "int", "min": 1, "max": 50}},
  "response": {"type": "object", "fields": {"id": "id:ord", "status": {"type": "enum", "values": ["placed"]},
    "total_cents": {"type": "int", "min": 0, "max": 100000}, "weight": {"type": "number", "min": 0, "max": 1000, "decimals": 0},
    "sku": {"type": "string", "pattern": "[a-z0-9-]{1,64}"}, "note": {"type": "string", "charset": "printable-ascii"},
    "created_at": {"type": "time", "precision": "day", "min": "2026-01-01T00:00:00Z", "max": "2030-01-01T00:00:00Z"}}}}]}`

func writeRoutes(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRoutesCheck(t *testing.T) {
	bad := writeRoutes(t, routesOneOfEach)
	code, out := run(t, "routes", "check", bad)
	if code != 1 {
		t.Fatalf("routes check, one of each: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"order query.limit: unbounded int: an ID fits; declare min and max",
		"order response.sku: free-form string: any text passes; declare a pattern",
		"order response.weight: unbounded number: an ID fits; declare min and max",
		"order response.created_at: a millisecond time beside int fields (response.total_cents, response.weight) can rebuild an ID; declare precision s",
		"order response: room for an ID's time: its numbers, times, enums and bools carry 128 bits together (weight 63, created_at 48, total_cents 16), " +
			"and an ID's time takes 41; declare weight: its decimals",
		"idgenctl: routes check: 5 findings in " + bad,
	} {
		if !strings.Contains(out, want+"") {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "; declare "); n != 5 {
		t.Errorf("%d finding lines, want 5:\n%s", n, out)
	}
	// The room comes first, a line per object, before the findings.
	room := "order response: 8320 bits (sku 8192, weight 63, created_at 48, total_cents 16, status 0); 128 in its numbers, times, enums and bools\n"
	if !strings.HasPrefix(out, room) {
		t.Errorf("the room line is not first, or is not %q:\n%s", room, out)
	}

	code, out = run(t, "routes", "check", bad, "--output", "json")
	var rep struct {
		File string `json:"file"`
		Room []struct {
			Route, Object string
			Bits          float64
			Own           float64 `json:"own_bits"`
			Fields        []struct {
				Name, Type string
				Bits       float64
				Counted    bool
			}
		} `json:"room"`
		Findings []struct {
			Route, Field, Problem, Declare string
		} `json:"findings"`
	}
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&rep); code != 1 || err != nil || rep.File != bad || len(rep.Findings) != 5 {
		t.Fatalf("--output json: exit %d, %v\n%s", code, err, out)
	}
	if f := rep.Findings[0]; f.Route != "order" || f.Field != "query.limit" || !strings.HasPrefix(f.Problem, "unbounded int") || !strings.Contains(f.Declare, `"min"`) {
		t.Errorf("first finding: %+v", f)
	}
	if len(rep.Room) != 1 || rep.Room[0].Route != "order" || rep.Room[0].Object != "response" || rep.Room[0].Own < 128 || rep.Room[0].Own >= 129 ||
		len(rep.Room[0].Fields) != 6 || rep.Room[0].Fields[0].Name != "sku" || rep.Room[0].Fields[0].Bits != 8192 || rep.Room[0].Fields[0].Counted || !rep.Room[0].Fields[1].Counted {
		t.Errorf("--output json room: %+v", rep.Room)
	}

	clean := writeRoutes(t, routesClean)
	code, out = run(t, "routes", "check", clean)
	if code != 0 || !strings.HasSuffix(out, "\n"+clean+": no findings\n") ||
		!strings.HasPrefix(out, "order response: 7098 bits (note 6727, sku 333, total_cents 16, created_at 10, weight 9, status 0); 37 in its numbers") {
		t.Errorf("clean file: exit %d\n%s", code, out)
	}
	code, out = run(t, "--output", "json", "routes", "check", clean)
	if m := jsonOf(t, out); code != 0 || m["file"] != clean || m["findings"] == nil || len(m["findings"].([]any)) != 0 || len(m["room"].([]any)) != 1 {
		t.Errorf("clean file, json: exit %d\n%s", code, out)
	}
}

// TestRoutesCheckLocalStack: the local stack's routes, the file a newcomer copies, are clean.
func TestRoutesCheckLocalStack(t *testing.T) {
	code, out := run(t, "routes", "check", "../../../../deploy/local/routes.json")
	if code != 0 || !strings.HasSuffix(out, "deploy/local/routes.json: no findings\n") {
		t.Fatalf("deploy/local/routes.json: exit %d\n%s", code, out)
	}
	for _, want := range []string{"order response: ", "order response.items[]: ", "customer-orders response: ",
		"customer-orders response.orders[]: ", "customer-orders response.orders[].items[]: "} {
		if !strings.Contains(out, "\n"+want) && !strings.HasPrefix(out, want) {
			t.Errorf("no room line %q:\n%s", want, out)
		}
	}
}

// TestRoutesCheckRefuses: a file that cannot be read, or that the gateway would refuse, is exit 2
// with the gateway's message; no file is bad usage.
func TestRoutesCheckRefuses(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.json")
	if code, out := run(t, "routes", "check", missing); code != 2 || !strings.Contains(out, "idgenctl: routes check: routes: open "+missing) {
		t.Errorf("missing file: exit %d\n%s", code, out)
	}
	for _, tt := range []struct{ body, want string }{
		{`{"routes": [`, "unexpected EOF"},
		{strings.Replace(routesClean, `"pattern": "[a-z0-9-]{1,64}"`, `"pattern": "[a-z"`, 1), `route "order": response: field "sku": pattern "[a-z"`},
		{strings.Replace(routesClean, `"precision": "day"`, `"precision": "us"`, 1), `precision "us"`},
		{strings.Replace(routesClean, `"charset": "printable-ascii"`, `"charset": "digits"`, 1), `charset "digits"`},
	} {
		p := writeRoutes(t, tt.body)
		code, out := run(t, "routes", "check", p)
		if code != 2 || !strings.Contains(out, "idgenctl: routes check: routes "+p+": ") || !strings.Contains(out, tt.want) {
			t.Errorf("%.50s: exit %d, want 2 saying %q\n%s", tt.body, code, tt.want, out)
		}
	}
	if code, out := run(t, "routes", "check"); code != 2 || !strings.Contains(out, "want 1 argument(s)") {
		t.Errorf("no file: exit %d\n%s", code, out)
	}
	if code, out := run(t, "routes"); code != 0 || !strings.Contains(out, "Available Commands:") || !strings.Contains(out, "check") {
		t.Errorf("idgenctl routes: exit %d\n%s", code, out)
	}
	if _, out := run(t, "help"); !strings.Contains(out, "idgenctl routes check FILE") {
		t.Errorf("the overview lacks routes check:\n%s", out)
	}
}
