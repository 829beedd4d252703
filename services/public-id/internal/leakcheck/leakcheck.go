// Package leakcheck is the tests' judge of the gateway: it looks for internal IDs in what a
// customer received, in every spelling the gateway promises never to pass (services/public-id
// README, "What the gateway refuses"). It is written apart from the gateway's scanner, with
// regular expressions, so that the two do not share a mistake; only the normal form
// (gateway.Normalize) is shared.
package leakcheck

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/idgen/idgen/services/public-id/internal/gateway"
)

var (
	// decimal groups: digits continued across a separator (spaces, or one of , - _ . ' / :
	// with spaces around it)
	decGroup = regexp.MustCompile(`[0-9]+(?:(?: *[,\-_.'/:] *| +)[0-9]+)*`)
	// hex runs and hex groups joined by '-'
	hexGroup = regexp.MustCompile(`[0-9a-f]+(?:-[0-9a-f]+)*`)
	alnum    = regexp.MustCompile(`[0-9a-z]+`)
	b64run   = regexp.MustCompile(`[0-9A-Za-z+/\-_=]{11,}`)
	nonDigit = regexp.MustCompile(`[^0-9]`)
	letter   = regexp.MustCompile(`[a-z]`)
	digit    = regexp.MustCompile(`[0-9]`)
)

// Leak is an internal ID found, and the spelling it was found in.
type Leak struct {
	ID   int64
	Form string
}

// Text returns the first of ids that text shows, in text as it is or in its normal form.
func Text(text string, ids []int64) (Leak, bool) {
	for _, t := range variants(text) {
		if l, ok := find(strings.ToLower(t), ids, 1); ok {
			return l, true
		}
		// base 32 and base64 are read before case folding
		if l, ok := b64(t, ids); ok {
			return l, true
		}
	}
	return Leak{}, false
}

// JSON returns the first of ids that a JSON body shows: in its text, and in every string and
// number of it, unquoted (an escape such as \u0000 then splits nothing).
func JSON(body string, ids []int64) (Leak, bool) {
	if l, ok := Text(body, ids); ok {
		return l, true
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return Leak{}, false
	}
	var walk func(v any) (Leak, bool)
	walk = func(v any) (Leak, bool) {
		switch v := v.(type) {
		case string:
			return Text(v, ids)
		case json.Number:
			return Text(string(v), ids)
		case []any:
			for _, e := range v {
				if l, ok := walk(e); ok {
					return l, true
				}
			}
		case map[string]any:
			for k, e := range v {
				if l, ok := Text(k, ids); ok {
					return l, true
				}
				if l, ok := walk(e); ok {
					return l, true
				}
			}
		}
		return Leak{}, false
	}
	return walk(v)
}

func variants(text string) []string {
	if n, changed := gateway.Normalize([]byte(text)); changed {
		return []string{text, string(n)}
	}
	return []string{text}
}

// find looks in lower-case text for the spellings of each id. The text is cut into its runs
// once; each id's spellings are then looked for in them.
func find(text string, ids []int64, depth int) (Leak, bool) {
	var decs, hexes []string
	for _, g := range decGroup.FindAllString(text, -1) {
		decs = append(decs, nonDigit.ReplaceAllString(g, ""))
	}
	for _, g := range hexGroup.FindAllString(text, -1) {
		if letter.MatchString(g) {
			hexes = append(hexes, strings.ReplaceAll(g, "-", ""))
		}
	}
	runs := map[string]bool{} // whole runs, with and without a 0x or 0o prefix
	octs := map[string]bool{} // and without their leading zeros, for octal
	for _, run := range alnum.FindAllString(text, -1) {
		for _, r := range []string{run, strings.TrimPrefix(strings.TrimPrefix(run, "0x"), "0o")} {
			runs[r] = true
			octs[strings.TrimLeft(r, "0")] = true
		}
	}
	for _, id := range ids {
		if dec := strconv.FormatInt(id, 10); len(dec) >= 6 {
			for _, d := range decs {
				if strings.Contains(d, dec) {
					return Leak{id, "decimal " + dec}, true
				}
			}
		}
		if hx := strconv.FormatInt(id, 16); len(hx) >= 6 {
			for _, h := range hexes {
				if strings.Contains(h, hx) {
					return Leak{id, "hex " + hx}, true
				}
			}
		}
		// whole runs: compared exactly, but octal, whose leading zeros the gateway ignores
		if oct := strconv.FormatInt(id, 8); len(oct) >= 6 && octs[oct] {
			return Leak{id, "octal " + oct}, true
		}
		if b36 := strconv.FormatInt(id, 36); len(b36) >= 6 && letter.MatchString(b36) && digit.MatchString(b36) && runs[b36] {
			return Leak{id, "base36 " + b36}, true
		}
		if id >= 1<<40 {
			be, le := binary.BigEndian.AppendUint64(nil, uint64(id)), binary.LittleEndian.AppendUint64(nil, uint64(id))
			enc := base32.StdEncoding.WithPadding(base32.NoPadding)
			for name, form := range map[string]string{
				"base32":               strings.ToLower(enc.EncodeToString(be)),
				"base32 little-endian": strings.ToLower(enc.EncodeToString(le)),
				"hex little-endian":    hex.EncodeToString(le),
			} {
				if runs[form] {
					return Leak{id, name + " " + form}, true
				}
			}
		}
	}
	return Leak{}, false
}

// b64 decodes base64 runs of text and looks in what they hold.
func b64(text string, ids []int64) (Leak, bool) {
	for _, run := range b64run.FindAllString(text, -1) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			dec, err := enc.DecodeString(run)
			if err != nil {
				continue
			}
			if len(dec) == 8 {
				for _, id := range ids {
					if v := uint64(id); v == binary.BigEndian.Uint64(dec) || v == binary.LittleEndian.Uint64(dec) {
						return Leak{id, "base64 of its bytes"}, true
					}
				}
			}
			if l, ok := find(strings.ToLower(string(dec)), ids, 0); ok {
				l.Form = "base64 of " + l.Form
				return l, true
			}
		}
	}
	return Leak{}, false
}

// Spellings are the ways an upstream can write an ID that the gateway refuses, each named; the
// fuzzer's encoders, the detector's tests and the attack tests use them.
var Spellings = []struct {
	Name string
	Fn   func(id int64) string
}{
	{"decimal", func(id int64) string { return strconv.FormatInt(id, 10) }},
	{"a digit before", func(id int64) string { return "7" + strconv.FormatInt(id, 10) }},
	{"digits after", func(id int64) string { return strconv.FormatInt(id, 10) + "42" }},
	{"digits glued to both ends of a word", func(id int64) string { return "INV12" + strconv.FormatInt(id, 10) + "34X" }},
	{"groups joined by /", func(id int64) string { return Groups(strconv.FormatInt(id, 10), "/") }},
	{"groups joined by :", func(id int64) string { return Groups(strconv.FormatInt(id, 10), ":") }},
	{"groups joined by three spaces", func(id int64) string { return Groups(strconv.FormatInt(id, 10), "   ") }},
	{"groups joined by ' - '", func(id int64) string { return Groups(strconv.FormatInt(id, 10), " - ") }},
	{"zero-width spaces", func(id int64) string { return Interleave(strconv.FormatInt(id, 10), "\u200b") }},
	{"word joiners and soft hyphens", func(id int64) string { return Interleave(strconv.FormatInt(id, 10), "\u2060\u00ad") }},
	{"NUL bytes", func(id int64) string { return Interleave(strconv.FormatInt(id, 10), "\x00") }},
	{"combining marks", func(id int64) string { return Interleave(strconv.FormatInt(id, 10), "\u0303") }},
	{"full-width digits", func(id int64) string { return DigitsIn(strconv.FormatInt(id, 10), '０') }},
	{"Arabic-Indic digits", func(id int64) string { return DigitsIn(strconv.FormatInt(id, 10), '٠') }},
	{"Devanagari digits", func(id int64) string { return DigitsIn(strconv.FormatInt(id, 10), '०') }},
	{"mathematical bold digits", func(id int64) string { return DigitsIn(strconv.FormatInt(id, 10), '𝟎') }},
	{"hex inside a longer hex run", func(id int64) string { return "cafe" + strconv.FormatInt(id, 16) + "be" }},
	{"upper-case hex, 0x", func(id int64) string { return "0x" + strings.ToUpper(strconv.FormatInt(id, 16)) }},
	{"octal", func(id int64) string { return strconv.FormatInt(id, 8) }},
	{"octal, 0o", func(id int64) string { return "0o" + strconv.FormatInt(id, 8) }},
	{"base 36", func(id int64) string { return strconv.FormatInt(id, 36) }},
	{"base 36, upper case", func(id int64) string { return strings.ToUpper(strconv.FormatInt(id, 36)) }},
	{"base 32", func(id int64) string { return b32(binary.BigEndian.AppendUint64(nil, uint64(id))) }},
	{"base 32, lower case", func(id int64) string { return strings.ToLower(b32(binary.BigEndian.AppendUint64(nil, uint64(id)))) }},
	{"base 32 of the bytes little-endian", func(id int64) string { return b32(binary.LittleEndian.AppendUint64(nil, uint64(id))) }},
	{"little-endian hex", func(id int64) string { return hex.EncodeToString(binary.LittleEndian.AppendUint64(nil, uint64(id))) }},
	{"little-endian hex, 0x", func(id int64) string {
		return "0x" + strings.ToUpper(hex.EncodeToString(binary.LittleEndian.AppendUint64(nil, uint64(id))))
	}},
}

func b32(b []byte) string { return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b) }

// Interleave puts sep between the characters of s.
func Interleave(s, sep string) string { return strings.Join(strings.Split(s, ""), sep) }

// DigitsIn writes ASCII digits as the digits of the set whose zero is zero.
func DigitsIn(s string, zero rune) string {
	var b strings.Builder
	for _, c := range s {
		b.WriteRune(zero + c - '0')
	}
	return b.String()
}

// Groups writes digits in groups of three joined by sep, as thousands separators do.
func Groups(digits, sep string) string {
	var parts []string
	for len(digits) > 3 {
		parts = append([]string{digits[len(digits)-3:]}, parts...)
		digits = digits[:len(digits)-3]
	}
	return strings.Join(append([]string{digits}, parts...), sep)
}
