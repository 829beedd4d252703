package scan

import (
	"math"
	"unicode/utf8"
)

// Depth is how many levels of base64 the scanner decodes: base64 of base64 of base64 of a
// spelling is read, one more level is not.
const Depth = 3

// Scanner finds internal-ID-looking values in text: a positive 64-bit integer between Lo and Hi
// (the window of IDs issued, which the caller works out from the clock), read in any spelling
// of Table that has a reader. It is a value; one is made per response.
type Scanner struct {
	lo, hi         int64
	decMin, decMax int // the decimal digits of lo and of hi: the lengths an ID can have
	hexMin, hexMax int // and its hexadecimal digits
}

// New returns a scanner of the window [lo, hi] (1 ≤ lo ≤ hi).
func New(lo, hi int64) Scanner {
	lo = max(lo, 1)
	hi = max(hi, lo)
	return Scanner{lo: lo, hi: hi, decMin: numDigits(lo, 10), decMax: numDigits(hi, 10), hexMin: numDigits(lo, 16), hexMax: numDigits(hi, 16)}
}

// Window returns the smallest and largest value s takes for an internal ID.
func (s Scanner) Window() (lo, hi int64) { return s.lo, s.hi }

// numDigits is the number of digits of v > 0 in base: len(strconv.FormatInt(v, base)), without
// writing them out.
func numDigits(v, base int64) int {
	n := 1
	for ; v >= base; v /= base {
		n++
	}
	return n
}

// Plausible tells whether v is in the window.
func (s Scanner) Plausible(v int64) bool { return v >= s.lo && v <= s.hi && v > 0 }

// PlausibleFloat is Plausible for a number that is not an integer literal (1.2e17), either sign.
func (s Scanner) PlausibleFloat(f float64) bool {
	f = math.Abs(f)
	return f >= float64(s.lo) && f <= float64(s.hi)
}

// Find returns the first internal-ID-looking value in text (the run of text it was read from),
// or "" when there is none.
func (s Scanner) Find(text []byte) string {
	run, _ := s.FindSpelling(text)
	return run
}

// FindSpelling is Find, also naming the spelling of Table the value was read in.
func (s Scanner) FindSpelling(text []byte) (run string, e *Entry) {
	s.Each(text, func(_ int64, r []byte, sp *Entry) bool {
		run, e = string(r), sp
		return false
	})
	return run, e
}

// Values returns every internal-ID-looking value Find would see in text.
func (s Scanner) Values(text []byte) []int64 {
	var out []int64
	s.Each(text, func(v int64, _ []byte, _ *Entry) bool {
		out = append(out, v)
		return true
	})
	return out
}

// Each calls f with every internal-ID-looking value of text and of its normal form (Normalize)
// when that differs, with the run it was read from and its spelling, until f returns false.
// Every pass is linear in the length of text.
func (s Scanner) Each(text []byte, f func(v int64, run []byte, e *Entry) bool) {
	r := reading{s: &s, emit: f}
	r.each(text, Depth)
}

// reading is one scan of a text: by the detector (s, emit) or by Known (k).
type reading struct {
	s    *Scanner
	emit func(v int64, run []byte, e *Entry) bool
	k    *Known

	cur        *Entry // the spelling being read
	outer      []byte // inside a decoded payload: the run of the top text it came from
	outerAt    int    // and its offset there
	outerEntry *Entry // and the spelling that decoded it
	found      bool   // Known: a hit
	at         int    // Known: its offset in the top text
	digits     []byte // scratch
	rev        []byte
}

// int offers the value v read from text[i:j]; false stops the scan.
func (r *reading) int(v uint64, text []byte, i, j int) bool {
	if v == 0 || v > math.MaxInt64 {
		return true
	}
	if r.k != nil {
		if !r.k.hasID(int64(v)) {
			return true
		}
		return r.hit(i)
	}
	if !r.s.Plausible(int64(v)) {
		return true
	}
	if r.outer != nil {
		return r.emit(int64(v), r.outer, r.outerEntry)
	}
	return r.emit(int64(v), text[i:j], r.cur)
}

// float offers the number f read from text[i:j].
func (r *reading) float(f float64, text []byte, i, j int) bool {
	if r.k != nil {
		if !r.k.hasFloat(f) {
			return true
		}
		return r.hit(i)
	}
	if !r.s.PlausibleFloat(f) {
		return true
	}
	if r.outer != nil {
		return r.emit(int64(math.Abs(f)), r.outer, r.outerEntry)
	}
	return r.emit(int64(math.Abs(f)), text[i:j], r.cur)
}

// hit records Known's first hit, at offset i of the text being read; false stops the scan.
func (r *reading) hit(i int) bool {
	r.found = true
	if r.outer != nil {
		r.at = r.outerAt
	} else {
		r.at = i
	}
	return false
}

// each reads text and its normal form.
func (r *reading) each(text []byte, depth int) bool {
	if !r.eachIn(text, depth) {
		return false
	}
	if n, changed := Normalize(text); changed {
		return r.eachIn(n, depth)
	}
	return true
}

// eachIn reads text as it is: the detector with every reader of the table, Known with its forms
// and the readers of the spellings it has no forms for.
func (r *reading) eachIn(text []byte, depth int) bool {
	if r.k != nil {
		return r.k.readIn(r, text, depth)
	}
	for _, e := range textReaders {
		r.cur = e
		if !e.text(r, text, depth) {
			return false
		}
	}
	return eachRun(text, isAlnum, func(i, j int) bool {
		// 0x and 0o say the base: the run is read after them only.
		if j-i > 2 && text[i] == '0' && (text[i+1]|0x20 == 'x' || text[i+1]|0x20 == 'o') {
			i += 2
		}
		return r.runs(text, i, j)
	})
}

func (r *reading) runs(text []byte, i, j int) bool {
	for _, e := range runReaders {
		r.cur = e
		if !e.run(r, text, i, j) {
			return false
		}
	}
	return true
}

// inner reads a decoded payload: everything, one level of base64 less; its normal form only
// when it is UTF-8 text (the normal form of binary bytes drops most of them, and would join the
// letters and digits left into runs that no one wrote).
func (r *reading) inner(dec []byte, depth int) bool {
	if !utf8.Valid(dec) {
		return r.eachIn(dec, depth)
	}
	return r.each(dec, depth)
}
