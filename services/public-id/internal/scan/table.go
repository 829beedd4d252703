package scan

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Entry is one spelling of an ID: one row of Table. Its name and doc are the README's line
// ("What the gateway refuses"); its encoders write an ID in it, for the tests, the oracle
// (leakcheck) and the own-ID check; its reader is how the detector finds an unknown ID in it;
// its forms are what Known looks for, anywhere, to find one of the response's own IDs.
type Entry struct {
	Name string
	Doc  string
	// Encoders write an ID in this spelling, each as an upstream could; the first is the plain
	// one.
	Encoders []Encoder
	// Admits tells whether the detector's reader takes a text written by an encoder (its rule,
	// such as base 62's a digit and a letter of each case); nil: always.
	Admits func(spelling string) bool
	// encAdmits are the rules of some encoders, by name, in place of Admits.
	encAdmits map[string]func(spelling string) bool

	// The detector's reader: text reads a whole text, run one whole run of letters and digits.
	// Neither: the spelling is read through the normal form (Normalize), or, with own set, only
	// as one of the response's own IDs.
	text func(r *reading, text []byte, depth int) bool
	run  func(r *reading, text []byte, i, j int) bool
	own  bool
	// windows: the reader finds the spelling whatever surrounds it (windows of an ID's length
	// in digit or hex runs); the other readers read whole runs or tokens.
	windows bool
	// caseSensitive: the spelling's letters mean what their case says (base 62, 58, 64, named
	// HTML references), so its texts are compared as they are, not case-folded.
	caseSensitive bool
	// normal: read through the normal form.
	normal bool
	// forms appends the texts Known looks for, anywhere, to find id, each ended by '\n' when it
	// is case-folded (lower case, found in digit groups, hex groups and runs of letters and
	// digits, lower-cased) or by '\t' when it is exact (found in runs of letters and digits as
	// they are). nil: Known reads this spelling with the reader, taking only the response's own
	// IDs.
	forms func(b []byte, id int64) []byte
}

// Encoder writes an ID in one way.
type Encoder struct {
	Name string
	Fn   func(id int64) string
}

// Detects tells whether the detector is to find the text s that enc of this entry wrote for an
// ID of its window: the entry has a reader (or is read through the normal form) and its rule
// admits s. Known finds every text of every encoder of its own IDs, whatever the rule.
func (e *Entry) Detects(enc Encoder, s string) bool {
	switch {
	case e.own:
		return false
	case e.encAdmits[enc.Name] != nil:
		return e.encAdmits[enc.Name](s)
	case e.Admits != nil:
		return e.Admits(s)
	}
	return true
}

// Anywhere tells whether a text of this entry's encoders is found inside any longer text: for
// an own ID (own), when Known has forms for the entry; for an unknown one, when the detector's
// reader reads windows of an ID's length (decimal, hex) or the normal form does (whose
// encoders write decimal digits). Otherwise it is found as a token of its own.
func (e *Entry) Anywhere(own bool) bool {
	if own {
		return e.forms != nil || e.normal
	}
	return e.windows || e.normal
}

// FoldsCase tells whether the spelling reads letters whatever their case (hex, base 36, 32,
// Crockford): its texts match case-folded.
func (e *Entry) FoldsCase() bool { return !e.caseSensitive }

// afterPrefix is s after a prefix such as "cur:" or "v1_".
func afterPrefix(s string) string {
	if i := strings.IndexAny(s, ":._"); i >= 0 && i < 4 {
		return s[i+1:]
	}
	return s
}

// tokenMixed: the token holds both cases, as the detector's reading of binary payloads needs.
func tokenMixed(s string) bool { return mixedCase([]byte(afterPrefix(s))) }

// Reader names what reads the spelling: "detector" (an unknown ID in the window, and the
// response's own), "normal form" (every reader, through Normalize), or "own IDs only".
func (e *Entry) Reader() string {
	switch {
	case e.normal:
		return "normal form"
	case e.own:
		return "own IDs only"
	}
	return "detector"
}

func dec(id int64) string { return strconv.FormatInt(id, 10) }
func hx(id int64) string  { return strconv.FormatInt(id, 16) }
func be(id int64) []byte  { return binary.BigEndian.AppendUint64(nil, uint64(id)) }
func le(id int64) []byte  { return binary.LittleEndian.AppendUint64(nil, uint64(id)) }

// drop2 drops the first two characters of s (its leading digits, which a reader gets from the
// date), keeping at least 6.
func drop2(s string) string {
	if len(s) >= 8 {
		return s[2:]
	}
	return s
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

var b32NoPad = base32.StdEncoding.WithPadding(base32.NoPadding)

// Appending forms: each appends to b and returns it.

func fold(b []byte) []byte  { return append(b, '\n') }
func exact(b []byte) []byte { return append(b, '\t') }

// reverseTail reverses b[from:] in place.
func reverseTail(b []byte, from int) []byte {
	for i, j := from, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return b
}

// drop2Tail drops the first two characters of b[from:], as drop2 does.
func drop2Tail(b []byte, from int) []byte {
	if len(b)-from >= 8 {
		return append(b[:from], b[from+2:]...)
	}
	return b
}

func lowerTail(b []byte, from int) []byte {
	for i := from; i < len(b); i++ {
		b[i] = lower(b[i])
	}
	return b
}

func appendLittleEndianHex(b []byte, id int64) []byte {
	var raw [8]byte
	binary.LittleEndian.PutUint64(raw[:], uint64(id))
	return fold(hex.AppendEncode(b, raw[:]))
}

// appendBase appends v in the alphabet (its length is the base), without leading zeros.
func appendBase(b []byte, v uint64, alphabet string) []byte {
	var out [64]byte
	i, base := len(out), uint64(len(alphabet))
	for {
		i--
		out[i] = alphabet[v%base]
		if v /= base; v == 0 {
			return append(b, out[i:]...)
		}
	}
}

// EncodeBase writes v in the alphabet (its length is the base), without leading zeros.
func EncodeBase(v uint64, alphabet string) string {
	var out [64]byte
	i, base := len(out), uint64(len(alphabet))
	for {
		i--
		out[i] = alphabet[v%base]
		if v /= base; v == 0 {
			return string(out[i:])
		}
	}
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

// hexBytes writes b as two hex digits a byte joined by sep.
func hexBytes(b []byte, sep string) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02x", c)
	}
	return strings.Join(parts, sep)
}

// wireVarint is protobuf's wire type of a varint field (the low 3 bits of a field's tag).
var wireVarint byte

// varintToken is base64url of a protobuf message whose field 1 is the varint v.
func protoVarint(field int, v uint64) []byte {
	return binary.AppendUvarint([]byte{byte(field<<3) | wireVarint}, v)
}

func letterAndDigit(s string) bool { return hasDigit([]byte(s)) && hasLetter([]byte(s)) }

// hexLetterAndDigit: the hex digits of s hold a letter and a digit.
func hexLetterAndDigit(s string) bool {
	var d []byte
	for i := 0; i < len(s); i++ {
		if isHex(s[i]) && !(s[i] == '0' && i+1 < len(s) && s[i+1]|0x20 == 'x') {
			d = append(d, s[i])
		}
	}
	return letterAndDigit(string(d))
}

func mixedString(s string) bool  { return mixed([]byte(s)) }
func allHexString(s string) bool { return allHex([]byte(s)) }

// Table is every spelling of an ID the gateway refuses. It drives the detector (each entry's
// reader), the own-ID check (each entry's forms, or its reader), the tests' oracle (leakcheck
// writes every ID in each encoder) and the README's list, which TestREADMESpellings checks
// against Markdown.
var Table = []*Entry{
	{
		Name: "decimal",
		Doc: "every window of an ID's length (17–18 digits today) in a run of decimal digits, whatever surrounds it " +
			"(`INV12…34X`, a digit before, digits after; an int's or a number's digits included, so the ID times ten is refused), " +
			"the run continued across separators: spaces of any count, or one of `, - _ . ' / :` with spaces around it " +
			"(`120,950,460,…`, `1209 - 5046 - …`)",
		Encoders: []Encoder{
			{"decimal", dec},
			{"a digit before", func(id int64) string { return "7" + dec(id) }},
			{"digits after", func(id int64) string { return dec(id) + "42" }},
			{"digits glued to both ends of a word", func(id int64) string { return "INV12" + dec(id) + "34X" }},
			{"groups joined by /", func(id int64) string { return Groups(dec(id), "/") }},
			{"groups joined by :", func(id int64) string { return Groups(dec(id), ":") }},
			{"groups joined by three spaces", func(id int64) string { return Groups(dec(id), "   ") }},
			{"groups joined by ' - '", func(id int64) string { return Groups(dec(id), " - ") }},
		},
		text:    readDecimal,
		windows: true,
		forms:   func(b []byte, id int64) []byte { return fold(strconv.AppendInt(b, id, 10)) },
	},
	{
		Name:     "decimal, reversed",
		Doc:      "the same windows in a run of digits read backwards",
		Encoders: []Encoder{{"reversed", func(id int64) string { return reverse(dec(id)) }}},
		text:     readReversed,
		windows:  true,
		forms:    func(b []byte, id int64) []byte { return fold(reverseTail(strconv.AppendInt(b, id, 10), len(b))) },
	},
	{
		Name: "decimal, without its leading digits",
		Doc: "an own ID's digits without their first one or two (a reader gets those from the date), and reversed " +
			"without them, inside any run",
		Encoders: []Encoder{
			{"without its first two digits", func(id int64) string { return drop2(dec(id)) }},
			{"without its first digit", func(id int64) string { return dec(id)[1:] }},
			{"reversed, without its first two digits", func(id int64) string { return reverse(drop2(dec(id))) }},
		},
		own: true,
		forms: func(b []byte, id int64) []byte {
			b = fold(drop2Tail(strconv.AppendInt(b, id, 10), len(b)))
			return fold(reverseTail(drop2Tail(strconv.AppendInt(b, id, 10), len(b)), len(b)))
		},
	},
	{
		Name:     "float",
		Doc:      "a float written out (`1.2095046089091686e+17`); an own ID when it is the float nearest to it",
		Encoders: []Encoder{{"float", func(id int64) string { return strconv.FormatFloat(float64(id), 'g', -1, 64) }}},
		text:     readFloat,
	},
	{
		Name:     "hex float",
		Doc:      "a hexadecimal float (`0x1.abcp+56`, either case)",
		Encoders: []Encoder{{"hex float", func(id int64) string { return strconv.FormatFloat(float64(id), 'x', -1, 64) }}},
		text:     readHexFloat,
	},
	{
		Name: "hex",
		Doc: "every window of an ID's length (14–15 hex digits) in a run of hex digits that holds both a letter and a digit " +
			"(groups joined by `-`, as in a UUID, included)",
		Encoders: []Encoder{
			{"hex", hx},
			{"hex inside a longer hex run", func(id int64) string { return "cafe" + hx(id) + "be" }},
			{"upper-case hex, 0x", func(id int64) string { return "0x" + strings.ToUpper(hx(id)) }},
			{"in a UUID", func(id int64) string {
				return fmt.Sprintf("00000000-0000-4000-8%03x-%012x", uint64(id)>>48&0xfff, uint64(id)&(1<<48-1))
			}},
		},
		Admits:  hexLetterAndDigit,
		text:    readHex,
		windows: true,
		forms:   func(b []byte, id int64) []byte { return fold(strconv.AppendInt(b, id, 16)) },
	},
	{
		Name:     "hex, without its leading digits",
		Doc:      "an own ID's hex digits without their first two, inside any run of hex digits or of letters and digits",
		Encoders: []Encoder{{"without its first two hex digits", func(id int64) string { return drop2(hx(id)) }}},
		own:      true,
		forms:    func(b []byte, id int64) []byte { return fold(drop2Tail(strconv.AppendInt(b, id, 16), len(b))) },
	},
	{
		Name: "hex bytes",
		Doc: "seven or more bytes as two hex digits each joined by `:`, `-`, `.`, `,` or a space " +
			"(`01:af:1c:78:32:40:00:a1`), holding a letter and a digit: read as hex, and every 8 of them little-endian",
		Encoders: []Encoder{
			{"joined by :", func(id int64) string { return hexBytes(be(id), ":") }},
			{"joined by spaces", func(id int64) string { return hexBytes(be(id), " ") }},
			{"joined by -", func(id int64) string { return hexBytes(be(id), "-") }},
			{"joined by .", func(id int64) string { return hexBytes(be(id), ".") }},
			{"joined by ', '", func(id int64) string { return hexBytes(be(id), ", ") }},
			{"little-endian, joined by :", func(id int64) string { return strings.ToUpper(hexBytes(le(id), ":")) }},
		},
		Admits: hexLetterAndDigit,
		text:   readHexBytes,
		forms:  appendLittleEndianHex,
	},
	{
		Name:     "little-endian hex",
		Doc:      "a whole run of 16 hex digits holding a letter and a digit, read as the ID's 8 bytes little-endian",
		Encoders: []Encoder{{"little-endian hex", func(id int64) string { return hex.EncodeToString(le(id)) }}, {"little-endian hex, 0x", func(id int64) string { return "0x" + strings.ToUpper(hex.EncodeToString(le(id))) }}},
		Admits:   hexLetterAndDigit,
		run:      runLittleEndianHex,
		forms:    appendLittleEndianHex,
	},
	{
		Name:     "octal",
		Doc:      "a whole run of octal digits, with or without `0o`",
		Encoders: []Encoder{{"octal", func(id int64) string { return strconv.FormatInt(id, 8) }}, {"octal, 0o", func(id int64) string { return "0o" + strconv.FormatInt(id, 8) }}},
		run:      runOctal,
		forms:    func(b []byte, id int64) []byte { return fold(strconv.AppendInt(b, id, 8)) },
	},
	{
		Name:     "base 36",
		Doc:      "a whole run of up to 13 letters and digits that holds both and a letter other than a–f, either case",
		Encoders: []Encoder{{"base 36", func(id int64) string { return strconv.FormatInt(id, 36) }}, {"base 36, upper case", func(id int64) string { return strings.ToUpper(strconv.FormatInt(id, 36)) }}},
		Admits:   func(s string) bool { return letterAndDigit(s) && !allHexString(s) },
		run:      runBase36,
		forms:    func(b []byte, id int64) []byte { return fold(strconv.AppendInt(b, id, 36)) },
	},
	{
		Name: "base 32",
		Doc:  "RFC 4648: a whole run of the 13 characters of 8 bytes, either case, either byte order",
		Encoders: []Encoder{
			{"base 32", func(id int64) string { return b32NoPad.EncodeToString(be(id)) }},
			{"base 32, lower case", func(id int64) string { return strings.ToLower(b32NoPad.EncodeToString(be(id))) }},
			{"base 32 of the bytes little-endian", func(id int64) string { return b32NoPad.EncodeToString(le(id)) }},
		},
		run: runBase32,
		forms: func(b []byte, id int64) []byte {
			var raw [8]byte
			binary.BigEndian.PutUint64(raw[:], uint64(id))
			b = fold(lowerTail(b32NoPad.AppendEncode(b, raw[:]), len(b)))
			binary.LittleEndian.PutUint64(raw[:], uint64(id))
			return fold(lowerTail(b32NoPad.AppendEncode(b, raw[:]), len(b)))
		},
	},
	{
		Name: "Crockford base 32",
		Doc: "ULID style: a whole run of 12 characters (13 after a `0`) that holds a digit and a letter other than a–f, the number in " +
			"`0123456789ABCDEFGHJKMNPQRSTVWXYZ`, either case, `I` and `L` read as 1, `O` as 0",
		Encoders: []Encoder{
			{"Crockford base 32", func(id int64) string { return EncodeBase(uint64(id), crockfordAlphabet) }},
			{"Crockford base 32, 13 characters, lower case", func(id int64) string {
				c := EncodeBase(uint64(id), crockfordAlphabet)
				return strings.ToLower(strings.Repeat("0", max(13-len(c), 0)) + c)
			}},
		},
		Admits: func(s string) bool { return letterAndDigit(s) && !allHexString(s) },
		run:    runCrockford,
		forms: func(b []byte, id int64) []byte {
			return fold(lowerTail(appendBase(b, uint64(id), crockfordAlphabet), len(b)))
		},
	},
	{
		Name:          "base 62",
		caseSensitive: true,
		Doc: "a whole run of 10–11 letters and digits that holds a digit, an upper-case and a lower-case letter, in " +
			"either alphabet (`0-9A-Za-z`, `0-9a-zA-Z`)",
		Encoders: []Encoder{
			{"base 62", func(id int64) string { return EncodeBase(uint64(id), base62Alphabet) }},
			{"base 62, lower case first", func(id int64) string { return EncodeBase(uint64(id), base62LowerFirst) }},
		},
		Admits: func(s string) bool { return len(s) >= 10 && mixedString(s) },
		run:    runBase62,
		forms: func(b []byte, id int64) []byte {
			return exact(appendBase(exact(appendBase(b, uint64(id), base62Alphabet)), uint64(id), base62LowerFirst))
		},
	},
	{
		Name:          "base 58",
		caseSensitive: true,
		Doc:           "the bitcoin alphabet: a whole run of 10–11 characters that holds a digit, an upper-case and a lower-case letter",
		Encoders:      []Encoder{{"base 58", func(id int64) string { return EncodeBase(uint64(id), base58Alphabet) }}},
		Admits:        func(s string) bool { return len(s) >= 10 && mixedString(s) },
		run:           runBase58,
		forms:         func(b []byte, id int64) []byte { return exact(appendBase(b, uint64(id), base58Alphabet)) },
	},
	{
		Name:          "base64 and page tokens",
		caseSensitive: true,
		Doc: "a run of base64 or base64url of 11 characters or more, padded or not, after any prefix (`cur:`, `v1.`, `v1_`), " +
			"nested up to 3 deep, decoded: any spelling above in the decoded bytes (their normal form when they are UTF-8), at any offset (a cursor such as " +
			"`{\"after\":120950460890916871}`); a protobuf message's varint (also zigzag) and fixed64 fields " +
			"(either byte order) and the ID's 8 bytes in either order in a payload of 9 bytes (after a prefix byte), " +
			"when the run holds both cases; the ID's 8 bytes, either order, as the whole payload; " +
			"an own ID's 8 bytes and varint at any offset of any payload",
		Encoders: []Encoder{
			{"base64 of its bytes", func(id int64) string { return base64.StdEncoding.EncodeToString(be(id)) }},
			{"base64url of its bytes little-endian", func(id int64) string { return base64.RawURLEncoding.EncodeToString(le(id)) }},
			{"a cursor", func(id int64) string {
				return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, `{"after":%d}`, id))
			}},
			{"a protobuf varint page token", func(id int64) string {
				return base64.RawURLEncoding.EncodeToString(protoVarint(1, uint64(id)))
			}},
			{"a protobuf fixed64 page token", func(id int64) string {
				return base64.URLEncoding.EncodeToString(append([]byte{1<<3 | 1}, le(id)...))
			}},
			{"a protobuf sint64 in a nested message, v1_", func(id int64) string {
				inner := binary.AppendUvarint([]byte{2<<3 | wireVarint}, uint64(id)<<1)
				msg := append(append(binary.AppendUvarint([]byte{1<<3 | wireVarint}, 20), 3<<3|2, byte(len(inner))), inner...)
				return "v1_" + base64.RawURLEncoding.EncodeToString(msg)
			}},
			{"cur: and a one-byte prefix", func(id int64) string {
				return "cur:" + base64.RawStdEncoding.EncodeToString(append([]byte{'x'}, be(id)...))
			}},
			{"base64 twice", func(id int64) string {
				return base64.StdEncoding.EncodeToString([]byte(base64.RawURLEncoding.EncodeToString(be(id))))
			}},
			{"the decimal digits at an offset", func(id int64) string {
				return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "\x01\x02page=%d;", id))
			}},
		},
		encAdmits: map[string]func(string) bool{
			"a protobuf varint page token": tokenMixed, "a protobuf fixed64 page token": tokenMixed,
			"a protobuf sint64 in a nested message, v1_": tokenMixed, "cur: and a one-byte prefix": tokenMixed,
		},
		text: readBase64,
	},
	{
		Name: "invisible characters",
		Doc: "every character that does not show removed: control and format characters such as NUL, zero-width " +
			"spaces, soft hyphens, combining marks, Hangul fillers",
		Encoders: []Encoder{
			{"zero-width spaces", func(id int64) string { return Interleave(dec(id), "\u200b") }},
			{"word joiners and soft hyphens", func(id int64) string { return Interleave(dec(id), "\u2060\u00ad") }},
			{"NUL bytes", func(id int64) string { return Interleave(dec(id), "\x00") }},
			{"combining marks", func(id int64) string { return Interleave(dec(id), "\u0303") }},
		},
		normal: true,
	},
	{
		Name: "Unicode digits",
		Doc:  "NFKC (full-width and mathematical digits become ASCII), every other Unicode decimal digit (Arabic-Indic, Devanagari, …) read as its digit, every Unicode space read as a space",
		Encoders: []Encoder{
			{"full-width digits", func(id int64) string { return DigitsIn(dec(id), '０') }},
			{"Arabic-Indic digits", func(id int64) string { return DigitsIn(dec(id), '٠') }},
			{"Devanagari digits", func(id int64) string { return DigitsIn(dec(id), '०') }},
			{"mathematical bold digits", func(id int64) string { return DigitsIn(dec(id), '𝟎') }},
			{"groups joined by no-break spaces", func(id int64) string { return Groups(dec(id), "\u00a0") }},
		},
		normal: true,
	},
	{
		Name: "percent-encoding",
		Doc:  "`%31%32…` decoded, once, before the rest of the normal form",
		Encoders: []Encoder{
			{"percent-encoded digits", func(id int64) string {
				var b strings.Builder
				for _, c := range []byte(dec(id)) {
					fmt.Fprintf(&b, "%%%02X", c)
				}
				return b.String()
			}},
			{"percent-encoded hex", func(id int64) string { return "%30x" + strings.ReplaceAll(hx(id), "a", "%61") }},
		},
		normal: true,
	},
	{
		Name:          "HTML entities",
		caseSensitive: true,
		Doc: "`&#49;`, `&#x31;` (with or without `;`) and the named ones that can stand for an ID's neighbours " +
			"(`&nbsp;`, `&comma;`, `&colon;`, `&shy;`, `&ZeroWidthSpace;`, `&amp;`, …) resolved, once, after percent-encoding",
		Encoders: []Encoder{
			{"decimal entities", func(id int64) string {
				var b strings.Builder
				for _, c := range []byte(dec(id)) {
					fmt.Fprintf(&b, "&#%d;", c)
				}
				return b.String()
			}},
			{"hex entities", func(id int64) string {
				var b strings.Builder
				for _, c := range []byte(dec(id)) {
					fmt.Fprintf(&b, "&#x%x;", c)
				}
				return b.String()
			}},
			{"groups joined by &nbsp;", func(id int64) string { return Groups(dec(id), "&nbsp;") }},
			{"digits split by &shy;", func(id int64) string { return Interleave(dec(id), "&shy;") }},
		},
		normal: true,
	},
}

// textReaders and runReaders are the table's readers, by kind.
var textReaders, runReaders []*Entry

func init() {
	for _, e := range Table {
		for name := range e.encAdmits {
			if !slices.ContainsFunc(e.Encoders, func(enc Encoder) bool { return enc.Name == name }) {
				panic("scan: entry " + e.Name + ": a rule for no encoder " + name)
			}
		}
		switch {
		case e.text != nil:
			textReaders = append(textReaders, e)
		case e.run != nil:
			runReaders = append(runReaders, e)
		}
	}
}

// Markdown is the README's list of spellings: one bullet an entry, its name, its doc and what
// reads it, wrapped at 100 columns and indented as a sub-list of the README's first bullet.
func Markdown() string {
	var b strings.Builder
	for _, e := range Table {
		line := "**" + e.Name + "**: " + e.Doc
		switch {
		case e.own:
			line += " (own IDs only)"
		case e.normal:
			line += " (the normal form)"
		}
		wrap(&b, "  - ", "    ", line+";", 100)
	}
	return b.String()
}

func wrap(b *strings.Builder, first, rest, text string, width int) {
	col := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
			b.WriteString(first)
			col = len(first)
		case col+1+len([]rune(w)) > width:
			b.WriteString("\n" + rest)
			col = len(rest)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len([]rune(w))
	}
	b.WriteByte('\n')
}
