package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// Detector tells whether a value looks like an internal ID: a positive 64-bit integer whose
// timestamp bits (the top 41 of every layout) fall inside the window of times at which IDs have
// been issued. It is the backstop behind the route allowlist: a declared plain field or header
// that holds such a value, in any spelling the scanner reads (see scanner.each), is refused,
// never passed on.
//
// The window starts at Since, not at the epoch: numbers of up to 16 decimal digits (prices,
// phone and card numbers) decode to the first weeks after the epoch, and treating them as IDs
// would refuse ordinary responses. It ends a day after now, for clock error.
type Detector struct {
	// Since is the earliest time an ID was issued. Default: the epoch plus 30 days, so that no
	// number below 10^16 is taken for an ID.
	Since time.Time
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultSince is Detector's default start of the window.
var DefaultSince = idcore.Epoch.Add(30 * 24 * time.Hour)

func (d Detector) window() (lo, hi int64) {
	since, now := d.Since, time.Now
	if since.IsZero() {
		since = DefaultSince
	}
	if d.Now != nil {
		now = d.Now
	}
	lo = max(max(since.UnixMilli()-idcore.EpochUnixMs, 0)<<idcore.TimestampShift, 1)
	hiMs := now().Add(24*time.Hour).UnixMilli() - idcore.EpochUnixMs
	hi = min(hiMs, 1<<41-1)<<idcore.TimestampShift | (1<<idcore.TimestampShift - 1)
	return lo, hi
}

// scanner finds internal-ID-looking values in text with one window computed per response.
type scanner struct {
	lo, hi         int64
	decMin, decMax int // the decimal digits of lo and of hi: the lengths an ID can have
	hexMin, hexMax int // and its hexadecimal digits
}

func (d Detector) scanner() scanner {
	lo, hi := d.window()
	return scanner{lo: lo, hi: hi, decMin: numDigits(lo, 10), decMax: numDigits(hi, 10), hexMin: numDigits(lo, 16), hexMax: numDigits(hi, 16)}
}

// numDigits is the number of digits of v > 0 in base: len(strconv.FormatInt(v, base)), without
// writing them out.
func numDigits(v, base int64) int {
	n := 1
	for ; v >= base; v /= base {
		n++
	}
	return n
}

func (s scanner) plausible(v int64) bool { return v >= s.lo && v <= s.hi && v > 0 }

// plausibleFloat is plausible for a number that is not an integer literal (1.2e17), either sign.
func (s scanner) plausibleFloat(f float64) bool {
	f = math.Abs(f)
	return f >= float64(s.lo) && f <= float64(s.hi)
}

// find returns the first internal-ID-looking value in text, or "" when there is none.
func (s scanner) find(text []byte) string {
	var hit string
	s.each(text, 1, func(v int64, run []byte) bool {
		if s.plausible(v) {
			hit = string(run)
			return false
		}
		return true
	})
	return hit
}

// values returns every internal-ID-looking value find would see in text.
func (s scanner) values(text []byte) []int64 {
	var out []int64
	s.each(text, 1, func(v int64, _ []byte) bool {
		if s.plausible(v) {
			out = append(out, v)
		}
		return true
	})
	return out
}

// each calls f with every candidate value of text, and of its normal form (Normalize) when that
// differs, until f returns false. It reads text the ways an upstream can write an ID:
//   - decimal: every window of an ID's length in a run of digits, whatever surrounds it
//     ("ORD120921027492620299", "9912092102749262029999"), the run continued across separators
//     (one of , - _ . ' / : with spaces around it, or spaces alone: "120,950,460", "1209 5046");
//     and a float written out ("1.2095046089091686e+17");
//   - hexadecimal: every window of an ID's length in a run of hex digits that holds a letter,
//     groups joined by '-' (a UUID holding the ID in its low bits) included; and a run of 16
//     hex digits read as the ID's 8 bytes little-endian;
//   - a whole run of letters and digits read as base 36 (when it holds both), as base 32
//     (RFC 4648, 13 characters, either case, the 8 bytes in either order) and as octal, after
//     an optional 0x or 0o;
//   - base64 or base64url of any of these, or of the ID's 8 bytes (a cursor such as
//     base64 of {"after":120950460890916871}), nested up to depth times.
//
// Every pass is linear in the length of text.
func (s scanner) each(text []byte, depth int, f func(v int64, run []byte) bool) bool {
	if !s.eachIn(text, depth, f) {
		return false
	}
	if n, changed := Normalize(text); changed {
		return s.eachIn(n, depth, f)
	}
	return true
}

func (s scanner) eachIn(text []byte, depth int, f func(v int64, run []byte) bool) bool {
	var digits []byte
	ok := eachDigitGroup(text, &digits, func(start, end int, digits []byte) bool {
		if !s.windows(digits, 10, s.decMin, s.decMax, text[start:end], f) {
			return false
		}
		// A float: digits, an optional fraction, an exponent.
		if e := floatEnd(text, start); e > start {
			if v, err := strconv.ParseFloat(string(text[start:e]), 64); err == nil && v < math.MaxInt64 && !f(int64(v), text[start:e]) {
				return false
			}
		}
		return true
	})
	if !ok {
		return false
	}
	// Hex runs with a letter, and hex groups joined by '-' (UUIDs).
	for i := 0; i < len(text); {
		if !isHex(text[i]) {
			i++
			continue
		}
		j, letters := i, false
		digits = digits[:0]
		for j < len(text) && (isHex(text[j]) || text[j] == '-' && j+1 < len(text) && isHex(text[j+1]) && j > i) {
			if c := text[j]; c != '-' {
				letters = letters || c > '9'
				digits = append(digits, lower(c))
			}
			j++
		}
		if letters && !s.windows(digits, 16, s.hexMin, s.hexMax, text[i:j], f) {
			return false
		}
		i = j
	}
	// Whole runs of letters and digits, in the other bases.
	ok = eachRun(text, isAlnum, func(i, j int) bool {
		run := text[i:j]
		if !s.otherBases(run, f) {
			return false
		}
		return !(len(run) > 2 && run[0] == '0' && (run[1]|0x20 == 'x' || run[1]|0x20 == 'o')) || s.otherBases(run[2:], f)
	})
	if !ok || depth == 0 {
		return ok
	}
	// Base64 and base64url runs, decoded.
	return eachRun(text, isB64, func(i, j int) bool {
		dec, ok := decodeB64(text[i:j])
		if !ok {
			return true
		}
		if len(dec) == 8 {
			for _, v := range []int64{int64(binary.BigEndian.Uint64(dec)), int64(binary.LittleEndian.Uint64(dec))} {
				if !f(v, text[i:j]) {
					return false
				}
			}
		}
		return s.each(dec, depth-1, func(v int64, _ []byte) bool { return f(v, text[i:j]) })
	})
}

// eachRun calls f with the start and end of every longest run of text's bytes that are in the
// class, until f returns false.
func eachRun(text []byte, in func(byte) bool, f func(i, j int) bool) bool {
	for i := 0; i < len(text); {
		if !in(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && in(text[j]) {
			j++
		}
		if !f(i, j) {
			return false
		}
		i = j
	}
	return true
}

// windows calls f with the value of every window of digits (in base 10 or 16, lower case) whose
// length an ID can have, starting at a non-zero digit (a window with leading zeros is the
// shorter one after them).
func (s scanner) windows(digits []byte, base uint64, minLen, maxLen int, run []byte, f func(int64, []byte) bool) bool {
	for a := 0; a+minLen <= len(digits); a++ {
		if digits[a] == '0' {
			continue
		}
		var v uint64
		for b := a; b < len(digits) && b-a < maxLen; b++ {
			v = v*base + uint64(hexValue(digits[b]))
			if b-a+1 >= minLen && v <= math.MaxInt64 && s.plausible(int64(v)) && !f(int64(v), run) {
				return false
			}
		}
	}
	return true
}

// otherBases reads a whole alphanumeric run as base 36, base 32 (RFC 4648), octal and
// little-endian hex.
func (s scanner) otherBases(run []byte, f func(int64, []byte) bool) bool {
	digit, letter, b32, oct, hx := false, false, true, true, true
	for _, c := range run {
		d := isDigit(c)
		digit, letter = digit || d, letter || !d
		b32 = b32 && (!d || '2' <= c && c <= '7')
		oct = oct && '0' <= c && c <= '7'
		hx = hx && isHex(c)
	}
	try := func(v uint64, ok bool) bool {
		return !ok || v > math.MaxInt64 || !s.plausible(int64(v)) || f(int64(v), run)
	}
	if digit && letter && len(run) <= 13 {
		if !try(parseBase(run, 36)) {
			return false
		}
	}
	if b32 && len(run) == 13 {
		// RFC 4648: 5 bits a character, the 8 bytes in the first 64 of the 65 bits.
		var v uint64
		for _, c := range run[:12] {
			v = v<<5 | b32Value(c)
		}
		v = v<<4 | b32Value(run[12])>>1
		var be [8]byte
		binary.BigEndian.PutUint64(be[:], v)
		if !try(v, true) || !try(binary.LittleEndian.Uint64(be[:]), true) {
			return false
		}
	}
	if oct {
		if !try(parseBase(run, 8)) {
			return false
		}
	}
	if hx && len(run) == 16 {
		var dec [8]byte
		if _, err := hex.Decode(dec[:], run); err == nil && !try(binary.LittleEndian.Uint64(dec[:]), true) {
			return false
		}
	}
	return true
}

// eachDigitGroup calls f with every group of decimal digits in text: a run of digits continued
// across separators (isSepRun), with its digits (separators dropped) in *digits, until f
// returns false.
func eachDigitGroup(text []byte, digits *[]byte, f func(start, end int, digits []byte) bool) bool {
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		start, j := i, i
		*digits = (*digits)[:0]
		for {
			for j < len(text) && isDigit(text[j]) {
				*digits = append(*digits, text[j])
				j++
			}
			k := sepEnd(text, j)
			if k == j || k == len(text) || !isDigit(text[k]) {
				break
			}
			j = k
		}
		if !f(start, j, *digits) {
			return false
		}
		i = j
	}
	return true
}

// sepEnd returns the end of the separator between two digit groups that starts at text[i]:
// spaces, at most one of , - _ . ' / : and spaces again; i when there is none.
func sepEnd(text []byte, i int) int {
	j := i
	for j < len(text) && text[j] == ' ' {
		j++
	}
	if j < len(text) && isSep(text[j]) {
		j++
		for j < len(text) && text[j] == ' ' {
			j++
		}
	}
	return j
}

// floatEnd returns the end of a float literal that starts at text[i] (digits, an optional
// fraction, an optional exponent), or i when there is none.
func floatEnd(text []byte, i int) int {
	j := i
	for j < len(text) && isDigit(text[j]) {
		j++
	}
	if j < len(text) && text[j] == '.' {
		j++
		for j < len(text) && isDigit(text[j]) {
			j++
		}
	}
	if j < len(text) && (text[j] == 'e' || text[j] == 'E') {
		k := j + 1
		if k < len(text) && (text[k] == '+' || text[k] == '-') {
			k++
		}
		if k < len(text) && isDigit(text[k]) {
			for k < len(text) && isDigit(text[k]) {
				k++
			}
			return k
		}
	}
	return i
}

// decodeB64 decodes a run of 11 characters or more (what 8 bytes take) as base64 or base64url,
// padded or not: the encoding is the one its characters and its end allow, so a run is decoded
// at most once.
func decodeB64(run []byte) ([]byte, bool) {
	if len(run) < 11 {
		return nil, false
	}
	url, std := bytes.ContainsAny(run, "-_"), bytes.ContainsAny(run, "+/")
	if url && std {
		return nil, false
	}
	enc := base64.StdEncoding
	if url {
		enc = base64.URLEncoding
	}
	if run[len(run)-1] != '=' {
		enc = enc.WithPadding(base64.NoPadding)
	}
	dec := make([]byte, enc.DecodedLen(len(run)))
	n, err := enc.Decode(dec, run)
	return dec[:n], err == nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isSep(c byte) bool {
	return c == ',' || c == '-' || c == '_' || c == '.' || c == '\'' || c == '/' || c == ':'
}
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isB64(c byte) bool {
	return isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_' || c == '='
}
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
func hexValue(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// parseBase reads an alphanumeric run as a number in base (up to 36, letters of either case);
// ok is false when a character is not a digit of the base or the value passes 64 bits.
func parseBase(run []byte, base uint64) (v uint64, ok bool) {
	for _, c := range run {
		var d uint64
		if isDigit(c) {
			d = uint64(c - '0')
		} else {
			d = uint64(lower(c)-'a') + 10
		}
		if d >= base || v > (math.MaxUint64-d)/base {
			return 0, false
		}
		v = v*base + d
	}
	return v, true
}

// b32Value is the value of an RFC 4648 base-32 character (A–Z 0–25, 2–7 26–31), either case.
func b32Value(c byte) uint64 {
	if isDigit(c) {
		return uint64(c-'2') + 26
	}
	return uint64(lower(c) - 'a')
}
