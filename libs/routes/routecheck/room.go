package routecheck

import (
	"fmt"
	"maps"
	"math"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/idgen/idgen/libs/routes"
)

// TimeBits is how many bits an ID's time takes (milliseconds since the epoch). An object whose
// numbers, times, enums and bools can carry that many together can carry an ID's time, and its
// region, machine and sequence (22 bits) fit beside it in any small int.
const TimeBits = 41

// Room is what one object of a route's response can carry in its plain values, beside its IDs
// (which the gateway rewrites): the log2 of how many values each field may take, summed.
type Room struct {
	// Route is the route's name.
	Route string `json:"route"`
	// Object is the object's path: response, response.items[], response.orders[].items[]. A
	// response that is not an object has a Room of its own too, as response.
	Object string `json:"object"`
	// Bits is what the object carries, its nested objects included (an array of N items of b
	// bits each: N·b), to two decimals.
	Bits float64 `json:"bits"`
	// Own is the part of Bits the room finding sums: the object's ints, numbers, times, enums
	// and bools, arrays of them included, and those of its nested objects that are not in an
	// array (at any depth: an upstream can split an ID's parts over shipping{} and billing{} as
	// well as over one object's fields); not its strings, not its arrays of objects (each item
	// is an object of its own, with a Room of its own).
	Own float64 `json:"own_bits"`
	// Fields are the object's declared fields with their room, largest first.
	Fields []FieldRoom `json:"fields"`
}

// FieldRoom is one field's room.
type FieldRoom struct {
	// Name is the field's name (the route's response itself: response).
	Name string `json:"name"`
	// Type is the field's declared type (array: the array's).
	Type string `json:"type"`
	// Bits is what the field carries, to two decimals: an array's MaxItems × ItemBits.
	Bits float64 `json:"bits"`
	// MaxItems and ItemBits are an array's bound and what each of its items carries.
	MaxItems int     `json:"max_items,omitempty"`
	ItemBits float64 `json:"item_bits,omitempty"`
	// Counted says whether the field is summed into the object's Own.
	Counted bool `json:"counted"`

	bits, itemBits, own float64 // exact
}

// String is the room as one line, in whole bits (rounded down), its ids left out (they carry
// nothing): "ROUTE OBJECT: N bits (total_cents 26, created_at 8, items 100 × 418); M in its
// numbers, times, enums and bools" (M the sum the room finding takes).
func (r Room) String() string {
	var parts []string
	for _, f := range r.Fields {
		switch {
		case f.Type == "id":
			continue
		case f.MaxItems > 0:
			parts = append(parts, fmt.Sprintf("%s %d × %d", f.Name, f.MaxItems, whole(f.ItemBits)))
		default:
			parts = append(parts, fmt.Sprintf("%s %d", f.Name, whole(f.Bits)))
		}
	}
	return fmt.Sprintf("%s %s: %d bits (%s); %d in its numbers, times, enums and bools", r.Route, r.Object, whole(r.Bits),
		strings.Join(parts, ", "), whole(r.Own))
}

// whole is bits in whole bits, rounded down: what can be carried bit for bit.
func whole(bits float64) int64 { return int64(math.Floor(bits + 1e-9)) }

// hundredths rounds bits down to two decimals, for the JSON form.
func hundredths(bits float64) float64 { return math.Floor(bits*100+1e-6) / 100 }

// rooms returns the room of each object of route r's response, in the order walk visits them,
// with now for the relative bounds of times.
func rooms(r *routes.Route, now time.Time) []Room {
	var out []Room
	var visit func(t *routes.Type, path string)
	visit = func(t *routes.Type, path string) {
		switch t.Type {
		case "object":
			room := Room{Route: r.Name, Object: path}
			var bits, own float64
			for _, name := range slices.Sorted(maps.Keys(t.Fields)) {
				f := fieldRoom(name, t.Fields[name], now)
				bits += f.bits
				own += f.own
				room.Fields = append(room.Fields, f)
			}
			room.Bits, room.Own = hundredths(bits), hundredths(own)
			slices.SortStableFunc(room.Fields, func(a, b FieldRoom) int {
				if a.bits != b.bits {
					if a.bits > b.bits {
						return -1
					}
					return 1
				}
				return 0
			})
			out = append(out, room)
			for _, name := range slices.Sorted(maps.Keys(t.Fields)) {
				visitNested(t.Fields[name], path+"."+name, visit)
			}
		default:
			if path == "response" {
				f := fieldRoom("response", t, now)
				out = append(out, Room{Route: r.Name, Object: path, Bits: f.Bits, Own: hundredths(f.own), Fields: []FieldRoom{f}})
			}
			visitNested(t, path, visit)
		}
	}
	visit(r.Response, "response")
	return out
}

// visitNested visits the objects in t: t itself, or an array's items (PATH[]), at any depth of
// arrays.
func visitNested(t *routes.Type, path string, visit func(*routes.Type, string)) {
	switch t.Type {
	case "object":
		visit(t, path)
	case "array":
		visitNested(t.Items, path+"[]", visit)
	}
}

func fieldRoom(name string, t *routes.Type, now time.Time) FieldRoom {
	f := FieldRoom{Name: name, Type: t.Type}
	f.bits, f.own = bitsOf(t, now)
	f.Counted = counted(t)
	if t.Type == "array" {
		f.MaxItems = t.MaxItems
		f.itemBits, _ = bitsOf(t.Items, now)
		f.ItemBits = hundredths(f.itemBits)
	}
	f.Bits = hundredths(f.bits)
	return f
}

// counted says whether a field of type t is summed into its object's Own: an int, a number, a
// time, an enum, a bool, an array of them, or a nested object (its own Own); not an array of
// objects.
func counted(t *routes.Type) bool {
	switch t.Type {
	case "array":
		return t.Items.Type != "object" && counted(t.Items)
	case "string", "id":
		return false
	}
	return true
}

// bitsOf returns what a value of type t carries (all), and the part of it its object's room
// finding sums (own: not strings, and not arrays of objects, whose items are objects of their
// own; a nested object's own is its fields').
func bitsOf(t *routes.Type, now time.Time) (all, own float64) {
	switch t.Type {
	case "object":
		for _, f := range t.Fields {
			b, o := bitsOf(f, now)
			all += b
			own += o
		}
		return all, own
	case "array":
		b, o := bitsOf(t.Items, now)
		n := float64(t.MaxItems)
		if !counted(t) {
			o = 0
		}
		return n * b, n * o
	case "string":
		return StringBits(t), 0
	}
	b := LeafBits(t, now)
	return b, b
}

// LeafBits is the room of a plain value that is not a string, in bits: the log2 of how many
// values the gateway passes for it.
//
//   - an id: 0 (rewritten to a public ID).
//   - an int: log2(max−min+1); a side not declared is the int64's.
//   - a number with decimals d: log2((max−min)·10^d+1); without: the log2 of how many float64
//     values lie between min and max (2^52 between 1 and 2, about 2^62 between 0 and 1), the
//     float64's limits for a side not declared.
//   - a time: the log2 of how many values of its precision (s, ms, day) lie in its span (its
//     min and max at now; years 0000 to 9999 for a side not declared).
//   - an enum: log2 of its values; a bool: 1.
func LeafBits(t *routes.Type, now time.Time) float64 {
	switch t.Type {
	case "int":
		lo, hi := float64(math.MinInt64), float64(math.MaxInt64)
		if t.Min != nil {
			lo = float64(*t.Min)
		}
		if t.Max != nil {
			hi = float64(*t.Max)
		}
		return log2Count(hi - lo + 1)
	case "number":
		lo, hi := -math.MaxFloat64, math.MaxFloat64
		if t.MinNumber != nil {
			lo = *t.MinNumber
		}
		if t.MaxNumber != nil {
			hi = *t.MaxNumber
		}
		floats := log2Count(float64(floatIndex(hi)) - float64(floatIndex(lo)) + 1)
		if t.Decimals == nil {
			return floats
		}
		return min(floats, log2Count((hi-lo)*math.Pow(10, float64(*t.Decimals))+1))
	case "time":
		lo, hi := t.TimeSpan(now)
		var n float64
		switch t.Precision {
		case "ms":
			n = float64(hi.UnixMilli()) - float64(lo.UnixMilli()) + 1
		case "day":
			n = float64(floorDiv(hi.Unix(), 86400)) - float64(floorDiv(lo.Unix(), 86400)) + 1
		default:
			n = float64(hi.Unix()) - float64(lo.Unix()) + 1
		}
		return log2Count(n)
	case "enum":
		return log2Count(float64(len(slices.Compact(slices.Sorted(slices.Values(t.Values))))))
	case "bool":
		return 1
	}
	return 0
}

// StringBits bounds what a string carries: the lesser of what its pattern can match (each
// character class the log2 of its characters, each repetition up to max_len) and what its
// length can hold (max_len characters of its charset, or max_len bytes).
func StringBits(t *routes.Type) float64 {
	n := t.MaxLen
	bits := geom(8, 0, n) // any max_len bytes
	if t.Charset != "" {
		bits = min(bits, geom(math.Log2(float64(charsetSize(t))), 0, n))
	}
	if t.Pattern != "" {
		if re, err := syntax.Parse(t.Pattern, syntax.Perl); err == nil {
			bits = min(bits, max(patternRoom(re, n).bits, 0))
		}
	}
	return bits
}

// charsetSizes memoizes how many characters each charset holds.
var charsetSizes sync.Map

func charsetSize(t *routes.Type) int {
	if n, ok := charsetSizes.Load(t.Charset); ok {
		return n.(int)
	}
	n := 0
	var buf [utf8.UTFMax]byte
	for c := rune(0); c <= unicode.MaxRune; c++ {
		if utf8.ValidRune(c) && t.InCharset(buf[:utf8.EncodeRune(buf[:], c)]) {
			n++
		}
	}
	charsetSizes.Store(t.Charset, n)
	return n
}

// pattern is what a part of a pattern matches: the log2 of how many strings (bits), and the
// fewest and most characters they have (most capped at the string's max_len).
type pattern struct {
	bits     float64
	min, max int
}

// patternRoom bounds from above how many strings of at most n characters re matches.
func patternRoom(re *syntax.Regexp, n int) pattern {
	switch re.Op {
	case syntax.OpNoMatch:
		return pattern{bits: math.Inf(-1)}
	case syntax.OpLiteral:
		p := pattern{min: len(re.Rune), max: min(len(re.Rune), n)}
		if re.Flags&syntax.FoldCase != 0 {
			for _, c := range re.Rune {
				p.bits += math.Log2(float64(foldOrbit(c)))
			}
		}
		return p
	case syntax.OpCharClass:
		count := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			count += int(re.Rune[i+1]-re.Rune[i]) + 1
		}
		if count == 0 {
			return pattern{bits: math.Inf(-1)}
		}
		return pattern{bits: math.Log2(float64(count)), min: 1, max: 1}
	case syntax.OpAnyCharNotNL:
		return pattern{bits: math.Log2(unicode.MaxRune), min: 1, max: 1}
	case syntax.OpAnyChar:
		return pattern{bits: math.Log2(unicode.MaxRune + 1), min: 1, max: 1}
	case syntax.OpCapture:
		return patternRoom(re.Sub[0], n)
	case syntax.OpStar:
		return repeat(patternRoom(re.Sub[0], n), 0, -1, n)
	case syntax.OpPlus:
		return repeat(patternRoom(re.Sub[0], n), 1, -1, n)
	case syntax.OpQuest:
		return repeat(patternRoom(re.Sub[0], n), 0, 1, n)
	case syntax.OpRepeat:
		return repeat(patternRoom(re.Sub[0], n), re.Min, re.Max, n)
	case syntax.OpConcat:
		var p pattern
		for _, sub := range re.Sub {
			s := patternRoom(sub, n)
			p.bits += s.bits
			p.min += s.min
			p.max = min(p.max+s.max, n)
		}
		return p
	case syntax.OpAlternate:
		p := pattern{bits: math.Inf(-1), min: math.MaxInt}
		for _, sub := range re.Sub {
			s := patternRoom(sub, n)
			p.bits = log2Add(p.bits, s.bits)
			p.min = min(p.min, s.min)
			p.max = max(p.max, s.max)
		}
		return p
	}
	// Empty matches and anchors (^, $, \A, \z, \b, \B) match no character.
	return pattern{}
}

// repeat is sub repeated lo to hi times (hi -1: any number of times), within n characters.
func repeat(sub pattern, lo, hi, n int) pattern {
	most := n // repetitions that fit in n characters
	if sub.min > 0 {
		most = n / sub.min
	}
	if hi < 0 || hi > most {
		hi = most
	}
	if hi < lo {
		return pattern{bits: math.Inf(-1), min: lo * sub.min}
	}
	return pattern{bits: geom(sub.bits, lo, hi), min: lo * sub.min, max: min(hi*sub.max, n)}
}

// foldOrbit is how many characters c matches case-insensitively.
func foldOrbit(c rune) int {
	n := 1
	for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
		n++
	}
	return n
}

// geom is log2 of the sum of 2^(k·b) for k from lo to hi: how many sequences of lo to hi parts
// of 2^b values each.
func geom(b float64, lo, hi int) float64 {
	switch {
	case hi < lo:
		return math.Inf(-1)
	case math.IsInf(b, -1): // a part matches nothing: only the empty sequence
		if lo == 0 {
			return 0
		}
		return math.Inf(-1)
	case b == 0:
		return math.Log2(float64(hi - lo + 1))
	}
	k := float64(hi - lo + 1)
	return float64(lo)*b + log2Pow2Minus1(k*b) - log2Pow2Minus1(b)
}

// log2Pow2Minus1 is log2(2^x − 1), for x > 0.
func log2Pow2Minus1(x float64) float64 { return x + math.Log1p(-math.Exp2(-x))/math.Ln2 }

// log2Add is log2(2^a + 2^b).
func log2Add(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log2(1+math.Exp2(b-a))
}

// log2Count is the log2 of a count of values, 0 for one value or none.
func log2Count(n float64) float64 {
	if n <= 1 {
		return 0
	}
	return math.Log2(n)
}

// floatIndex numbers the float64 values in order (−0 and +0 both 0), so that the count of
// values from lo to hi is floatIndex(hi) − floatIndex(lo) + 1.
func floatIndex(f float64) int64 {
	u := math.Float64bits(f)
	if u>>63 == 1 {
		return -int64(u &^ (1 << 63))
	}
	return int64(u)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
