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
//
// Ids, enums and bools pass: an id is rewritten to a public ID, an enum and a bool hold only
// their declared values. A bounded number passes, but a number's fraction holds digits whatever
// its bounds, so an int with bounds is the better declaration for whole values.
package routecheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"

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

// Check lints a route file. The error is the gateway's own when the file does not parse or does
// not pass its check (the gateway would not start on it); there are no findings then.
func Check(file []byte) ([]Finding, error) {
	c, err := routes.Parse(file)
	if err != nil {
		return nil, err
	}
	return check(c), nil
}

// CheckFile lints the route file at path; its error is the one the gateway's start-up gives
// (routes.Load).
func CheckFile(path string) ([]Finding, error) {
	c, err := routes.Load(path)
	if err != nil {
		return nil, err
	}
	return check(c), nil
}

func check(c *routes.Config) []Finding {
	out := []Finding{}
	for _, r := range c.Routes {
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
	}
	return out
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
