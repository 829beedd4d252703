// Package leakcheck is the tests' judge of the gateway: it looks for internal IDs in what a
// customer received, in every spelling the gateway promises never to pass (services/public-id
// README, "What the gateway refuses"). It reads a text two ways:
//
//   - it writes each ID with every encoder of the scanner's table (scan.Table) and looks for the
//     texts: anywhere where the promise says anywhere (an own ID's forms, decimal and hex
//     windows), else as a token of its own;
//   - and, apart from the scanner, with regular expressions: decimal and hex groups, whole runs
//     in the other bases, floats, base64 decoded (the ID's bytes, varints, and all of this
//     inside), so that the scanner and its judge do not share a mistake.
//
// Only the normal form (scan.Normalize) and the table's rules on which texts the detector reads
// (a digit and both cases for base 62, …: the README's promise) are shared.
//
// Text and JSON judge the IDs a response may not show in the spellings the detector reads;
// Own and JSONOwn the response's own IDs, which the gateway refuses in every spelling, anywhere.
package leakcheck

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/idgen/idgen/services/public-id/internal/scan"
)

var (
	// decimal groups: digits continued across a separator (spaces, or one of , - _ . ' / :
	// with spaces around it)
	decGroup = regexp.MustCompile(`[0-9]+(?:(?: *[,\-_.'/:] *| +)[0-9]+)*`)
	// hex runs and hex groups joined by '-'
	hexGroup = regexp.MustCompile(`[0-9a-f]+(?:-[0-9a-f]+)*`)
	// hex bytes joined by one of : - . , or a space, spaces after it
	hexBytes = regexp.MustCompile(`[0-9a-f]{2}(?:[:\-., ] *[0-9a-f]{2}){6,}`)
	// any hex digits joined by single joiners (an own ID's hex inside bytes or a UUID)
	hexJoined = regexp.MustCompile(`[0-9a-f]+(?:[:\-., ] *[0-9a-f]+)*`)
	alnum     = regexp.MustCompile(`[0-9A-Za-z]+`)
	floatLit  = regexp.MustCompile(`[0-9]+(?:\.[0-9]*)?[eE][+-]?[0-9]+`)
	hexFloat  = regexp.MustCompile(`0[xX][0-9a-fA-F]*(?:\.[0-9a-fA-F]*)?[pP][+-]?[0-9]+`)
	b64run    = regexp.MustCompile(`[0-9A-Za-z+/\-_]{11,}=*`)
	nonDigit  = regexp.MustCompile(`[^0-9]`)
	nonHex    = regexp.MustCompile(`[^0-9a-f]`)
	letter    = regexp.MustCompile(`[a-zA-Z]`)
	nonHexLet = regexp.MustCompile(`[g-zG-Z]`)
	digit     = regexp.MustCompile(`[0-9]`)
	upperRe   = regexp.MustCompile(`[A-Z]`)
	lowerRe   = regexp.MustCompile(`[a-z]`)
)

// Leak is an internal ID found, and the spelling it was found in.
type Leak struct {
	ID   int64
	Form string
}

// Spelling is one encoder of the scanner's table.
type Spelling struct {
	Name  string // "entry: encoder"
	Entry *scan.Entry
	Enc   scan.Encoder
	Fn    func(id int64) string
}

// Detected tells whether the gateway promises to refuse sp's text of id as an unknown ID (in
// the detector's window): its entry has a reader and its rule admits the text.
func (sp Spelling) Detected(id int64) bool { return sp.Entry.Detects(sp.Enc, sp.Fn(id)) }

// Spellings are every encoder of every entry of the table, in its order: the fuzzer's encoders,
// the detector's tests and the attack tests use them.
var Spellings = func() []Spelling {
	var out []Spelling
	for _, e := range scan.Table {
		for _, enc := range e.Encoders {
			out = append(out, Spelling{e.Name + ": " + enc.Name, e, enc, enc.Fn})
		}
	}
	return out
}()

// encodings caches each ID's texts, one per spelling, as written and in lower case.
var encodings sync.Map // int64 → [2][]string

func encoded(id int64) (texts, lower []string) {
	if v, ok := encodings.Load(id); ok {
		e := v.([2][]string)
		return e[0], e[1]
	}
	texts, lower = make([]string, len(Spellings)), make([]string, len(Spellings))
	for i, sp := range Spellings {
		texts[i] = sp.Fn(id)
		lower[i] = asciiLower(texts[i])
	}
	encodings.Store(id, [2][]string{texts, lower})
	return texts, lower
}

// Text returns the first of ids that text shows in a spelling the detector reads, in text as it
// is or in its normal form.
func Text(text string, ids []int64) (Leak, bool) { return check(text, ids, false) }

// Own returns the first of ids (the response's own) that text shows in any spelling, anywhere.
func Own(text string, ids []int64) (Leak, bool) { return check(text, ids, true) }

// JSON is Text for a JSON body: its text, and every string and number of it, unquoted (an
// escape such as \u0000 then splits nothing).
func JSON(body string, ids []int64) (Leak, bool) { return checkJSON(body, ids, false) }

// JSONOwn is Own for a JSON body.
func JSONOwn(body string, ids []int64) (Leak, bool) { return checkJSON(body, ids, true) }

func check(text string, ids []int64, own bool) (Leak, bool) {
	ids = realIDs(ids)
	if len(ids) == 0 {
		return Leak{}, false
	}
	for _, t := range variants(text) {
		if l, ok := byTable(t, ids, own); ok {
			return l, true
		}
		if l, ok := find(t, ids, own, scan.Depth); ok {
			return l, true
		}
	}
	return Leak{}, false
}

func checkJSON(body string, ids []int64, own bool) (Leak, bool) {
	if l, ok := check(body, ids, own); ok {
		return l, true
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return Leak{}, false
	}
	// A string or number written in the body as it is was judged with the body (between quotes
	// or separators, which bound a token as the string's ends do); the others hold escapes.
	var walk func(v any) (Leak, bool)
	walk = func(v any) (Leak, bool) {
		switch v := v.(type) {
		case string:
			if strings.Contains(body, `"`+v+`"`) {
				return Leak{}, false
			}
			return check(v, ids, own)
		case json.Number:
			return Leak{}, false // a number is written as it is
		case []any:
			for _, e := range v {
				if l, ok := walk(e); ok {
					return l, true
				}
			}
		case map[string]any:
			for k, e := range v {
				if strings.Contains(body, `"`+k+`"`) {
					if l, ok := walk(e); ok {
						return l, true
					}
					continue
				}
				if l, ok := check(k, ids, own); ok {
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
	if n, changed := scan.Normalize([]byte(text)); changed {
		return []string{text, string(n)}
	}
	return []string{text}
}

// byTable looks for every table text of each id of 2^40 or more (a real one) in text, case
// folded where the spelling folds case: anywhere where the entry says so, else as a token (with no letter, digit or base64 character on either side). The texts
// are indexed by their first four bytes, so that the text is read once whatever the number of IDs.
func byTable(text string, ids []int64, own bool) (Leak, bool) {
	idx := indexOf(ids, own)
	lt := asciiLower(text)
	for k := 0; k+4 <= len(lt); k++ {
		for _, f := range idx.by[lt[k:k+4]] {
			if f.fold && !strings.HasPrefix(lt[k:], f.lower) || !f.fold && !strings.HasPrefix(text[k:], f.text) {
				continue
			}
			if f.anywhere || (k == 0 || boundary(lt[k-1])) && (k+len(f.lower) == len(lt) || boundary(lt[k+len(f.lower)])) {
				return Leak{f.id, f.name + " " + f.text}, true
			}
		}
	}
	return Leak{}, false
}

// form is one table text of one ID.
type form struct {
	id             int64
	name, text     string
	lower          string
	fold, anywhere bool
}

// asciiLower lowers A–Z only, so that offsets in it are offsets in s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

type index struct {
	ids []int64
	own bool
	by  map[string][]form // by the first four bytes of the lower-case text
}

// lastIndex is the index of the last list of IDs judged (a test judges every response of a run
// against one list).
var lastIndex struct {
	sync.Mutex
	idx *index
}

// minRealID is the smallest ID both readers judge: a smaller one (0 among them, which Known never
// holds) is no real ID, its forms are too short for Known, and a text of its digits or of its
// varint in a decoded payload too likely.
const minRealID = 1 << 40

// realIDs returns the IDs of ids of minRealID or more (ids itself when all are).
func realIDs(ids []int64) []int64 {
	if !slices.ContainsFunc(ids, func(id int64) bool { return id < minRealID }) {
		return ids
	}
	return slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return id < minRealID })
}

func indexOf(ids []int64, own bool) *index {
	lastIndex.Lock()
	defer lastIndex.Unlock()
	if i := lastIndex.idx; i != nil && i.own == own && slices.Equal(i.ids, ids) {
		return i
	}
	i := &index{ids: slices.Clone(ids), own: own, by: map[string][]form{}}
	for _, id := range ids {
		texts, lower := encoded(id)
		for n, s := range texts {
			sp := Spellings[n]
			if len(s) < 6 || !own && !sp.Entry.Detects(sp.Enc, s) {
				continue
			}
			key := lower[n][:4]
			i.by[key] = append(i.by[key], form{id, sp.Name, s, lower[n], sp.Entry.FoldsCase(), sp.Entry.Anywhere(own)})
		}
	}
	lastIndex.idx = i
	return i
}

func boundary(c byte) bool {
	return !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') && !strings.ContainsRune("+/_-=.%&#", rune(c))
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// encode writes v in alphabet (its length the base), as scan.EncodeBase does but apart from it.
func encode(v uint64, alphabet string) string {
	var out []byte
	for b := uint64(len(alphabet)); v > 0; v /= b {
		out = append([]byte{alphabet[v%b]}, out...)
	}
	return string(out)
}

const (
	crockford = "0123456789abcdefghjkmnpqrstvwxyz"
	base62    = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	base62Low = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	base58    = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
)

// find reads text with regular expressions and looks for the spellings of each id. The text is
// cut into its runs once; each id's spellings are then looked for in them.
func find(text string, ids []int64, own bool, depth int) (Leak, bool) {
	lt := strings.ToLower(text)
	var decs, hexes, joined, byteRuns []string
	for _, g := range decGroup.FindAllString(lt, -1) {
		decs = append(decs, nonDigit.ReplaceAllString(g, ""))
	}
	for _, g := range hexGroup.FindAllString(lt, -1) {
		if own || letter.MatchString(g) && digit.MatchString(g) {
			hexes = append(hexes, strings.ReplaceAll(g, "-", ""))
		}
	}
	for _, loc := range hexBytes.FindAllStringIndex(lt, -1) {
		g := lt[loc[0]:loc[1]]
		if (loc[0] == 0 || !isHex(lt[loc[0]-1])) && (loc[1] == len(lt) || !isHex(lt[loc[1]])) && letter.MatchString(g) && digit.MatchString(g) {
			byteRuns = append(byteRuns, nonHex.ReplaceAllString(g, ""))
		}
	}
	if own {
		for _, g := range hexJoined.FindAllString(lt, -1) {
			joined = append(joined, nonHex.ReplaceAllString(g, ""))
		}
	}
	runs := map[string]bool{}   // whole runs, lower case, after a 0x or 0o prefix
	exact := map[string]bool{}  // whole runs as they are
	octs := map[string]bool{}   // and without their leading zeros, for octal
	crocks := map[string]bool{} // Crockford runs of 12 characters, or more after zeros, read
	for _, run := range alnum.FindAllString(text, -1) {
		l := strings.ToLower(run)
		if len(l) > 2 && (strings.HasPrefix(l, "0x") || strings.HasPrefix(l, "0o")) {
			run, l = run[2:], l[2:]
		}
		runs[l], exact[run], octs[strings.TrimLeft(l, "0")] = true, true, true
		if len(l) == 12 || len(l) > 12 && l[0] == '0' {
			crocks[strings.TrimLeft(crockfordCanon(l), "0")] = true
		}
	}
	var floats []float64
	for _, re := range []*regexp.Regexp{floatLit, hexFloat} {
		for _, loc := range re.FindAllStringIndex(text, -1) {
			if loc[0] > 0 && (isHex(text[loc[0]-1]) || text[loc[0]-1] == '.') {
				continue // glued to digits before: another number
			}
			if f, err := strconv.ParseFloat(text[loc[0]:loc[1]], 64); err == nil {
				floats = append(floats, f)
			}
		}
	}
	for _, id := range ids {
		sp := spelt(id)
		decForms := sp.dec[:2]
		hexForms := sp.hex[:1]
		if own {
			decForms, hexForms = sp.dec, sp.hex
		}
		for _, f := range decForms {
			if len(f) < 6 {
				continue
			}
			for _, d := range decs {
				if strings.Contains(d, f) {
					return Leak{id, "decimal " + f}, true
				}
			}
		}
		for _, f := range hexForms {
			if len(f) < 6 {
				continue
			}
			for _, group := range [][]string{hexes, byteRuns, joined} {
				for _, h := range group {
					if strings.Contains(h, f) {
						return Leak{id, "hex " + f}, true
					}
				}
			}
		}
		for _, h := range byteRuns {
			for a := 0; a+16 <= len(h); a += 2 {
				if b, err := hex.DecodeString(h[a : a+16]); err == nil && binary.LittleEndian.Uint64(b) == uint64(id) {
					return Leak{id, "hex bytes little-endian " + h}, true
				}
			}
		}
		for _, f := range floats {
			if f == float64(id) || f == -float64(id) {
				return Leak{id, "float"}, true
			}
		}
		// whole runs: compared exactly, but octal, whose leading zeros the gateway ignores
		if len(sp.oct) >= 6 && octs[sp.oct] {
			return Leak{id, "octal " + sp.oct}, true
		}
		if b36 := sp.b36; len(b36) >= 6 && runs[b36] && (own || letter.MatchString(b36) && digit.MatchString(b36) && nonHexLet.MatchString(b36)) {
			return Leak{id, "base36 " + b36}, true
		}
		if c := sp.crock; len(c) >= 6 && crocks[c] && (own || len(c) == 12 && digit.MatchString(c) && nonHexLet.MatchString(c)) {
			return Leak{id, "Crockford base 32 " + c}, true
		}
		for _, f := range sp.mixed {
			if len(f) >= 6 && exact[f] && (own || len(f) >= 10 && digit.MatchString(f) && upperRe.MatchString(f) && lowerRe.MatchString(f)) {
				return Leak{id, "base62/58 " + f}, true
			}
		}
		if id >= 1<<40 {
			for i, form := range sp.bytes {
				if runs[form] && (own || i < 2 || letter.MatchString(form)) {
					return Leak{id, "base32 or little-endian hex of its bytes " + form}, true
				}
			}
		}
	}
	if depth == 0 {
		return Leak{}, false
	}
	return b64(text, ids, own, depth)
}

// spelling is an ID's forms that find looks for, written once (spelt caches them).
type spelling struct {
	dec   []string // decimal, reversed; and without the first two digits, reversed: own IDs
	hex   []string // hex; and without the first two digits: own IDs
	oct   string
	b36   string
	crock string
	mixed []string  // base 62 in both alphabets, base 58
	bytes [3]string // base 32 of the bytes big- and little-endian, little-endian hex
}

var spellings sync.Map // int64 → *spelling

func spelt(id int64) *spelling {
	if v, ok := spellings.Load(id); ok {
		return v.(*spelling)
	}
	dec, hx := strconv.FormatInt(id, 10), strconv.FormatInt(id, 16)
	sp := &spelling{dec: []string{dec, reverse(dec)}, hex: []string{hx}}
	if len(dec) >= 8 {
		sp.dec = append(sp.dec, dec[2:], reverse(dec[2:]))
		sp.hex = append(sp.hex, hx[2:])
	}
	sp.oct, sp.b36 = strconv.FormatInt(id, 8), strconv.FormatInt(id, 36)
	sp.crock = encode(uint64(id), crockford)
	sp.mixed = []string{encode(uint64(id), base62), encode(uint64(id), base62Low), encode(uint64(id), base58)}
	be, le := binary.BigEndian.AppendUint64(nil, uint64(id)), binary.LittleEndian.AppendUint64(nil, uint64(id))
	sp.bytes = [3]string{strings.ToLower(b32.EncodeToString(be)), strings.ToLower(b32.EncodeToString(le)), hex.EncodeToString(le)}
	spellings.Store(id, sp)
	return sp
}

func crockfordCanon(s string) string {
	return strings.NewReplacer("i", "1", "l", "1", "o", "0").Replace(s)
}

// b64 decodes the base64 runs of text (and, at the top, the part after a prefix glued by '_' or
// '-') and looks in what they hold: the ID's 8 bytes (a payload of 8 bytes, or of 9 whose run
// holds both cases; an own ID at any offset), an own ID's varints at any offset, and every
// spelling above in the decoded bytes.
func b64(text string, ids []int64, own bool, depth int) (Leak, bool) {
	for _, run := range b64run.FindAllString(text, -1) {
		cands := []string{run}
		if depth == scan.Depth {
			if k := strings.IndexAny(run, "_-"); k > 0 && k < 10 && len(run)-k-1 >= 11 {
				cands = append(cands, run[k+1:])
			}
		}
		for _, c := range cands {
			dec, ok := decode(c)
			if !ok {
				continue
			}
			mixed := upperRe.MatchString(c) && lowerRe.MatchString(c)
			values := map[uint64]string{}
			if own || len(dec) == 8 || len(dec) == 9 && mixed {
				for o := 0; o+8 <= len(dec); o++ {
					v := binary.BigEndian.Uint64(dec[o:])
					values[v], values[bits.ReverseBytes64(v)] = "its bytes", "its bytes"
				}
			}
			if own {
				for o := range dec {
					if v, n := binary.Uvarint(dec[o:]); n > 0 {
						values[v] = "its varint"
						if v&1 == 0 {
							values[v>>1] = "its zigzag varint"
						}
					}
				}
			}
			for _, id := range ids {
				if f, ok := values[uint64(id)]; ok {
					return Leak{id, "base64 of " + f}, true
				}
			}
			if l, ok := find(string(dec), ids, own, depth-1); ok {
				l.Form = "base64 of " + l.Form
				return l, true
			}
		}
	}
	return Leak{}, false
}

// decode decodes a base64 run in the one encoding its characters and its end allow.
func decode(run string) ([]byte, bool) {
	enc := base64.StdEncoding
	if strings.ContainsAny(run, "-_") {
		if strings.ContainsAny(run, "+/") {
			return nil, false
		}
		enc = base64.URLEncoding
	}
	if !strings.HasSuffix(run, "=") {
		enc = enc.WithPadding(base64.NoPadding)
	}
	dec, err := enc.DecodeString(run)
	return dec, err == nil
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// Interleave puts sep between the characters of s.
func Interleave(s, sep string) string { return scan.Interleave(s, sep) }

// DigitsIn writes ASCII digits as the digits of the set whose zero is zero.
func DigitsIn(s string, zero rune) string { return scan.DigitsIn(s, zero) }

// Groups writes digits in groups of three joined by sep, as thousands separators do.
func Groups(digits, sep string) string { return scan.Groups(digits, sep) }
