// Package routecheck lints a gateway route file for types that leave an upstream room to pass an
// internal ID to a customer: the gateway refuses whatever looks like one, but an int with no
// bounds holds an ID times ten, a free-form string holds it in a spelling the scan does not know,
// and a time to the millisecond beside int fields holds an ID's time beside its region, machine
// and sequence, from which the ID is rebuilt. Each finding says what to declare instead.
//
// What is checked, for each route's query parameters and response fields:
//
//   - an int or a number without both min and max ("unbounded int: an ID fits"). A query
//     parameter counts too: unbounded, it lets a customer send the upstream an internal ID.
//   - a string with neither a pattern nor a charset ("free-form string").
//   - a time at precision ms in a response that has an int or a number field anywhere (an
//     upstream writes the whole body, so it can put the parts of an ID in any of its fields,
//     bounded or not: region, machine and sequence fit in small ints).
//   - the room of each object of a response (Room): the bits its plain values can carry, the
//     log2 of how many values each may take (LeafBits, StringBits; an array of N items of b bits
//     each carries N·b). An object whose ints, numbers, times, enums and bools (arrays of them
//     and its nested objects' included, at any depth; not its strings, not its arrays of
//     objects, whose items are objects of their own) carry 41 bits or more together ("room
//     for an ID's time") can hold an ID's time in legitimate
//     values, which no scan can tell from real ones: total_cents holding an ID's millisecond,
//     region, machine and sequence beside created_at holding its second rebuilds the ID.
//
// Ids pass: an id is rewritten to a public ID. An enum and a bool hold only their declared
// values, and a number's room depends on its decimals: without them any float64 in its bounds
// passes (about 62 bits between 0 and 1).
//
// The room counts values, not the other choices an upstream has: a member written or left out,
// null, the order of an object's members, an array's length (a number without decimals is
// also passed as the upstream spelled it).
package routecheck

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/routes"
)

// Finding is one field whose type leaves room for an internal ID.
type Finding struct {
	// Route is the route's name.
	Route string `json:"route"`
	// Field is the field's path: query.limit, response.total_cents, response.items[].sku
	// (response alone for the body itself).
	Field string `json:"field"`
	// Problem says what room the type leaves.
	Problem string `json:"problem"`
	// Declare says what to declare instead.
	Declare string `json:"declare"`
}

// String is the finding as one line: "ROUTE FIELD: problem; declare …".
func (f Finding) String() string {
	return fmt.Sprintf("%s %s: %s; declare %s", f.Route, f.Field, f.Problem, f.Declare)
}

// The problems a finding names (a millisecond time's goes on to name the int fields).
const (
	UnboundedInt    = "unbounded int: an ID fits"
	UnboundedNumber = "unbounded number: an ID fits"
	FreeFormString  = "free-form string: any text passes"
	MillisecondTime = "a millisecond time beside int fields"
	RoomForTime     = "room for an ID's time"
)

// What each finding says to declare instead.
const (
	declareInt     = `min and max, the field's smallest and largest values ({"type": "int", "min": 0, "max": 100000})`
	declareNumber  = `min and max ({"type": "number", "min": 0, "max": 1000}), or, when its values are whole, an int with min and max (a number's fraction holds digits whatever its bounds)`
	declareString  = `a pattern, an RE2 expression the whole value must match ({"type": "string", "pattern": "[A-Z]{3}"}), or a charset (printable-ascii, alphanumeric or letters)`
	declareTimeInS = `precision s, the default ({"type": "time"}): drop the millisecond`
)

// namedInts is how many int fields a millisecond time's finding names.
const namedInts = 3

// Result is a route file's lint: its findings, and the room of each object of each route's
// response.
type Result struct {
	Findings []Finding
	Room     []Room
}

// Check lints a route file. The error is the gateway's own when the file does not parse or does
// not pass its check (the gateway would not start on it); there are no findings then.
func Check(file []byte) ([]Finding, error) {
	res, err := Lint(file, time.Now())
	if err != nil {
		return nil, err
	}
	return res.Findings, nil
}

// CheckFile lints the route file at path; its error is the one the gateway's start-up gives
// (routes.Load).
func CheckFile(path string) ([]Finding, error) {
	res, err := LintFile(path, time.Now())
	if err != nil {
		return nil, err
	}
	return res.Findings, nil
}

// Lint is Check with the room of each object; now is the moment a time's relative bounds
// ("now+24h") are taken at.
func Lint(file []byte, now time.Time) (*Result, error) {
	c, err := routes.Parse(file)
	if err != nil {
		return nil, err
	}
	return check(c, now), nil
}

// LintFile is Lint of the route file at path, with the gateway's start-up error (routes.Load).
func LintFile(path string, now time.Time) (*Result, error) {
	c, err := routes.Load(path)
	if err != nil {
		return nil, err
	}
	return check(c, now), nil
}

func check(c *routes.Config, now time.Time) *Result {
	res := &Result{Findings: []Finding{}, Room: []Room{}}
	for _, r := range c.Routes {
		out := res.Findings
		add := func(field, problem, declare string) {
			out = append(out, Finding{Route: r.Name, Field: field, Problem: problem, Declare: declare})
		}
		for _, name := range slices.Sorted(maps.Keys(r.Query)) {
			leaf(r.Query[name], "query."+name, add)
		}
		var ints, msTimes []string
		walk(r.Response, "response", func(t *routes.Type, path string) {
			leaf(t, path, add)
			switch {
			case t.Type == "int" || t.Type == "number":
				ints = append(ints, path)
			case t.Type == "time" && t.Precision == "ms":
				msTimes = append(msTimes, path)
			}
		})
		if len(ints) > 0 {
			named := strings.Join(ints[:min(len(ints), namedInts)], ", ")
			if len(ints) > namedInts {
				named += fmt.Sprintf(" and %d more", len(ints)-namedInts)
			}
			for _, path := range msTimes {
				add(path, MillisecondTime+" ("+named+") can rebuild an ID", declareTimeInS)
			}
		}
		for _, room := range rooms(r, now) {
			res.Room = append(res.Room, room)
			if room.Own >= TimeBits {
				add(room.Object, roomProblem(room), roomDeclare(room, r))
			}
		}
		res.Findings = out
	}
	return res
}

// namedFields is how many fields a room finding names.
const namedFields = 6

// roomProblem names the counted fields of an object that can carry an ID's time, largest first.
func roomProblem(room Room) string {
	var parts []string
	n := 0
	for _, f := range byOwn(room.Fields) {
		if !f.Counted || f.own == 0 {
			continue
		}
		if n++; n <= namedFields {
			parts = append(parts, fmt.Sprintf("%s %d", f.Name, whole(f.own)))
		}
	}
	if n > namedFields {
		parts = append(parts, fmt.Sprintf("and %d more", n-namedFields))
	}
	return fmt.Sprintf("%s: its numbers, times, enums and bools carry %d bits together (%s), and an ID's time takes %d",
		RoomForTime, whole(room.Own), strings.Join(parts, ", "), TimeBits)
}

// byOwn is fields by what they carry into their object's Own, largest first (a nested object
// carries less there than in Bits: its strings are not counted).
func byOwn(fields []FieldRoom) []FieldRoom {
	return slices.SortedStableFunc(slices.Values(fields), func(a, b FieldRoom) int { return cmp.Compare(b.own, a.own) })
}

// roomDeclare says, for each named field that can be narrowed, how.
func roomDeclare(room Room, r *routes.Route) string {
	obj := objectAt(r.Response, strings.TrimPrefix(room.Object, "response"))
	var advice []string
	n := 0
	for _, f := range byOwn(room.Fields) {
		if !f.Counted || f.own == 0 {
			continue
		}
		if n++; n > namedFields {
			break
		}
		t := obj
		if t != nil && t.Type == "object" {
			t = t.Fields[f.Name]
		}
		if t == nil {
			continue
		}
		if a := narrow(f.Name, t); a != "" {
			advice = append(advice, a)
		}
	}
	if len(advice) == 0 {
		advice = append(advice, "fewer fields, or enums with fewer values")
	}
	return strings.Join(advice, "; ") + fmt.Sprintf(", until they carry under %d bits together", TimeBits)
}

// narrow says how to narrow field name of type t.
func narrow(name string, t *routes.Type) string {
	switch t.Type {
	case "int":
		return name + `: a min and max nearer its real values ({"type": "int", "min": 0, "max": 100000000})`
	case "number":
		if t.Decimals == nil {
			return name + `: its decimals ({"type": "number", "min": 0, "max": 1000, "decimals": 2}; without, any float64 in its bounds passes)`
		}
		return name + ": a min and max nearer its real values, or fewer decimals"
	case "time":
		if t.Precision != "day" {
			return name + `: precision day, or a min and max ({"type": "time", "min": "2026-01-01T00:00:00Z", "max": "now+24h"})`
		}
		return name + `: a min and max ({"type": "time", "precision": "day", "min": "2026-01-01T00:00:00Z", "max": "now+24h"})`
	case "array":
		return name + ": fewer max_items, or narrower items"
	case "object":
		return name + ": narrower fields (its own line of room names them)"
	}
	return ""
}

// objectAt is the type at an object's path below the response (".items[]", "" for the response).
func objectAt(t *routes.Type, path string) *routes.Type {
	for path != "" && t != nil {
		if rest, ok := strings.CutPrefix(path, "[]"); ok {
			if t.Type != "array" {
				return nil
			}
			t, path = t.Items, rest
			continue
		}
		path = strings.TrimPrefix(path, ".")
		i := strings.IndexAny(path, ".[")
		if i < 0 {
			i = len(path)
		}
		if t.Type != "object" {
			return nil
		}
		t, path = t.Fields[path[:i]], path[i:]
	}
	return t
}

// walk calls f for each leaf type under t (object fields in name order; an array's items as
// PATH[]).
func walk(t *routes.Type, path string, f func(t *routes.Type, path string)) {
	if t == nil {
		return
	}
	switch t.Type {
	case "object":
		for _, name := range slices.Sorted(maps.Keys(t.Fields)) {
			walk(t.Fields[name], path+"."+name, f)
		}
	case "array":
		walk(t.Items, path+"[]", f)
	default:
		f(t, path)
	}
}

// leaf reports an unbounded int or number and a free-form string.
func leaf(t *routes.Type, path string, add func(field, problem, declare string)) {
	switch t.Type {
	case "int":
		if t.Min == nil || t.Max == nil {
			add(path, UnboundedInt, declareInt)
		}
	case "number":
		if t.MinNumber == nil || t.MaxNumber == nil {
			add(path, UnboundedNumber, declareNumber)
		}
	case "string":
		if t.Pattern == "" && t.Charset == "" {
			add(path, FreeFormString, declareString)
		}
	}
}
