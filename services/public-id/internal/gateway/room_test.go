package gateway_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/routes/routecheck"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
)

// TestRebuildIDFromRoom: what the room finding is about. An upstream that means to leak hides a
// whole internal ID in legitimate values of two route shapes that pass every other check: the
// gateway passes them (nothing in them looks like an ID, even to the scan for the response's
// own IDs), a customer rebuilds the ID, and routes check names the fields.
func TestRebuildIDFromRoom(t *testing.T) {
	// An ID of an hour ago: its milliseconds, then region 2, machine 170, sequence 7.
	ms := typesClock.Add(-time.Hour+123*time.Millisecond).UnixMilli() - idcore.EpochUnixMs
	id := idcore.ID(ms<<idcore.TimestampShift | 2<<19 | 170<<10 | 7)
	low := int64(id) & (1<<idcore.TimestampShift - 1)
	if !id.Time().Equal(typesClock.Add(-time.Hour + 123*time.Millisecond)) {
		t.Fatalf("the ID's time: %v", id.Time())
	}
	for _, tt := range []struct {
		name, fields, body string
		rebuild            func(out map[string]any) int64
		finding            string
		fixed              [2]string // declared as the finding says, the route refuses the body
	}{{
		// The local stack's order as it was: the ID's second in created_at, its millisecond
		// within that second and its 22 low bits in total_cents (under 4.2·10^9, within 10^12).
		name: "order",
		fields: `"id": "id:ord", "status": {"type": "enum", "values": ["placed", "shipped"]},
			"total_cents": {"type": "int", "min": 0, "max": 1000000000000}, "created_at": {"type": "time", "precision": "s"}`,
		body: fmt.Sprintf(`{"id":"%d","status":"placed","total_cents":%d,"created_at":%q}`, int64(id)+1,
			ms%1000<<idcore.TimestampShift|low, id.Time().Format(time.RFC3339Nano)),
		rebuild: func(out map[string]any) int64 {
			at, err := time.Parse(time.RFC3339, out["created_at"].(string))
			if err != nil {
				t.Fatal(err)
			}
			cents := int64(out["total_cents"].(float64))
			ms := at.UnixMilli() - idcore.EpochUnixMs + cents>>idcore.TimestampShift
			return ms<<idcore.TimestampShift | cents&(1<<idcore.TimestampShift-1)
		},
		finding: "(total_cents 39, created_at 38, status 1)",
		fixed:   [2]string{`"max": 1000000000000}`, `"max": 100000000}`},
	}, {
		// A ratio in 0..1 holds all but the ID's 10 low bits as a decimal fraction of 15 digits
		// (too short for the scan of decimal runs), an int in 0..1023 the rest.
		name:   "ratio",
		fields: `"id": "id:ord", "ratio": {"type": "number", "min": 0, "max": 1}, "n": {"type": "int", "min": 0, "max": 1023}`,
		body:   fmt.Sprintf(`{"id":"%d","ratio":%s,"n":%d}`, int64(id)+1, fmt.Sprintf("0.%015d", int64(id)>>10), int64(id)&1023),
		rebuild: func(out map[string]any) int64 {
			return int64(math.Round(out["ratio"].(float64)*1e15))<<10 | int64(out["n"].(float64))
		},
		finding: "(ratio 61, n 10)",
		fixed:   [2]string{`"max": 1}`, `"max": 1, "decimals": 3}`},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			file := typesRoutes(tt.fields, "")
			c, err := routes.Parse([]byte(file))
			if err != nil {
				t.Fatal(err)
			}
			rw, err := gateway.Rewrite([]byte(tt.body), c.Routes[0].Response, typesDetector(), gateway.Limits{})
			if err != nil {
				t.Fatalf("the gateway refused %s: %v", tt.body, err)
			}
			known := &gateway.Known{}
			known.Add(int64(id))
			known.Add(int64(id) + 1)
			out, err := rw.Fill(map[int64]string{int64(id) + 1: "ord_x"}, known)
			if err != nil {
				t.Fatalf("the gateway refused %s: %v", tt.body, err)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), id.String()) {
				t.Fatalf("the ID in plain sight: %s", out)
			}
			if rebuilt := tt.rebuild(got); rebuilt != int64(id) {
				t.Fatalf("rebuilt %d from %s, want %d", rebuilt, out, id)
			}

			res, err := routecheck.Lint([]byte(file), typesClock)
			if err != nil {
				t.Fatal(err)
			}
			var room []string
			for _, f := range res.Findings {
				if strings.HasPrefix(f.Problem, routecheck.RoomForTime) {
					room = append(room, f.String())
				}
			}
			if len(room) != 1 || !strings.HasPrefix(room[0], "t response: ") || !strings.Contains(room[0], tt.finding) {
				t.Fatalf("routes check: %q, want a room finding naming %s", room, tt.finding)
			}

			fixed, err := routes.Parse([]byte(strings.Replace(file, tt.fixed[0], tt.fixed[1], 1)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := gateway.Rewrite([]byte(tt.body), fixed.Routes[0].Response, typesDetector(), gateway.Limits{}); err == nil {
				t.Fatalf("declared with %s, the route passed %s", tt.fixed[1], tt.body)
			}
		})
	}
}
