package gateway

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// Detector tells whether a value looks like an internal ID: a positive 64-bit integer whose
// timestamp bits (the top 41 of every layout) fall inside the window of times at which IDs have
// been issued. It is the backstop behind the route allowlist: a declared plain field or header
// that holds such a value is refused, never passed on.
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
	lo = max(since.UnixMilli()-idcore.EpochUnixMs, 0) << idcore.TimestampShift
	hiMs := now().Add(24*time.Hour).UnixMilli() - idcore.EpochUnixMs
	hi = min(hiMs, 1<<41-1)<<idcore.TimestampShift | (1<<idcore.TimestampShift - 1)
	return lo, hi
}

// scanner finds internal-ID-looking values in text with one window computed per response.
type scanner struct{ lo, hi int64 }

func (d Detector) scanner() scanner {
	lo, hi := d.window()
	return scanner{lo, hi}
}

func (s scanner) plausible(v int64) bool { return v >= s.lo && v <= s.hi && v > 0 }

// plausibleFloat is plausible for a number that is not an integer literal (1.2e17), either sign.
func (s scanner) plausibleFloat(f float64) bool {
	f = math.Abs(f)
	return f >= float64(s.lo) && f <= float64(s.hi)
}

// find returns the first internal-ID-looking value in text, or "" when there is none. It reads
// text the ways an upstream is likely to write an ID:
//   - a run of decimal digits, whatever letters surround it ("ORD120921027492620299");
//   - a run of hex digits with at least one letter ("1adb3c…", "0x1adb3c…");
//   - decimal digit groups joined by one separator ("120,950,460,890,916,871", "1209-5046-…");
//   - hex groups joined by '-' (a UUID holding the ID in its low bits);
//   - a float written in a string ("1.2095046089091686e+17");
//   - base64 or base64url of any of these, or of the ID's 8 bytes (a cursor such as
//     base64 of {"after":120950460890916871}).
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

// each calls f with every candidate value of text until f returns false; base64 runs are
// decoded and read again, nested up to depth times.
func (s scanner) each(text []byte, depth int, f func(v int64, run []byte) bool) bool {
	// Decimal runs, and decimal groups joined by one separator.
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isDigit(text[j]) {
			j++
		}
		if v, ok := parseDec(text[i:j]); ok && !f(v, text[i:j]) {
			return false
		}
		// Groups: 120,950,460 … or 1209-5046-…; read the joined digits as one number.
		k, groups := j, 1
		for k+1 < len(text) && isSep(text[k]) && isDigit(text[k+1]) {
			k++
			for k < len(text) && isDigit(text[k]) {
				k++
			}
			groups++
		}
		if groups > 1 {
			joined := make([]byte, 0, k-i)
			for _, c := range text[i:k] {
				if isDigit(c) {
					joined = append(joined, c)
				}
			}
			if v, ok := parseDec(joined); ok && !f(v, text[i:k]) {
				return false
			}
		}
		// A float: digits, an optional fraction, an exponent.
		if e := floatEnd(text, i); e > j {
			if v, err := strconv.ParseFloat(string(text[i:e]), 64); err == nil && v < math.MaxInt64 && !f(int64(v), text[i:e]) {
				return false
			}
		}
		i = j
	}
	// Hex runs with a letter, and hex groups joined by '-' (UUIDs).
	for i := 0; i < len(text); {
		if !isHex(text[i]) {
			i++
			continue
		}
		j, letters := i, false
		for j < len(text) && (isHex(text[j]) || text[j] == '-' && j+1 < len(text) && isHex(text[j+1]) && j > i) {
			letters = letters || text[j] > '9' && text[j] != '-'
			j++
		}
		if letters {
			if v, ok := parseHexRun(text[i:j]); ok && !f(v, text[i:j]) {
				return false
			}
		}
		i = j
	}
	// Base64 and base64url runs, decoded.
	if depth > 0 {
		for i := 0; i < len(text); {
			if !isB64(text[i]) {
				i++
				continue
			}
			j := i
			for j < len(text) && isB64(text[j]) {
				j++
			}
			if j-i >= 11 {
				if dec, ok := decodeB64(text[i:j]); ok {
					if len(dec) == 8 {
						for _, v := range []int64{int64(binary.BigEndian.Uint64(dec)), int64(binary.LittleEndian.Uint64(dec))} {
							if !f(v, text[i:j]) {
								return false
							}
						}
					}
					if !s.each(dec, depth-1, func(v int64, _ []byte) bool { return f(v, text[i:j]) }) {
						return false
					}
				}
			}
			i = j
		}
	}
	return true
}

func parseDec(run []byte) (int64, bool) {
	for len(run) > 1 && run[0] == '0' {
		run = run[1:]
	}
	if len(run) > 19 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(run), 10, 64)
	return v, err == nil
}

// parseHexRun reads a hex run, '-' separators dropped, leading zeros ignored.
func parseHexRun(run []byte) (int64, bool) {
	digits := make([]byte, 0, len(run))
	for _, c := range run {
		if c != '-' {
			digits = append(digits, c)
		}
	}
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) > 16 || len(digits) < 10 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(digits), 16, 63)
	return int64(v), err == nil
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
	return j
}

func decodeB64(run []byte) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if dec, err := enc.DecodeString(string(run)); err == nil {
			return dec, true
		}
	}
	return nil, false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isSep(c byte) bool   { return c == ',' || c == '-' || c == '_' || c == ' ' || c == '.' || c == '\'' }
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isB64(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '+' || c == '/' || c == '-' || c == '_' || c == '='
}
