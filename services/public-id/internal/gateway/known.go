package gateway

import (
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
)

// Known is a set of internal IDs that no response may show in any spelling the scanner reads:
// decimal, hexadecimal, octal, base 36, and for an ID of 2^40 or more (a real one: its bytes are
// not mostly zero) base 32 of its 8 bytes in either order and its bytes little-endian in hex.
// Unlike the scanner's window, it finds them anywhere: inside any longer run of letters and
// digits, and inside decimal groups joined by separators.
type Known struct {
	list    []string            // every form, each once
	set     map[string]struct{} // the forms as a set, once there are more than knownListed
	lengths []int
	ids     []int64 // the first IDs added, so that adding one again costs nothing
}

// knownListed is how many forms Known looks up in its list; past it, in a set.
const knownListed = 32

// knownIDsListed bounds Known.ids: past it, an ID added again is spelt out again (the forms are
// a set, so the result is the same).
const knownIDsListed = 32

var b32NoPad = base32.StdEncoding.WithPadding(base32.NoPadding)

// has tells whether s is a known form.
func (k *Known) has(s []byte) bool {
	if k.set != nil {
		_, ok := k.set[string(s)]
		return ok
	}
	for _, f := range k.list {
		if f == string(s) {
			return true
		}
	}
	return false
}

// Add adds an internal ID.
func (k *Known) Add(id int64) {
	if slices.Contains(k.ids, id) {
		return
	}
	if k.ids == nil {
		k.ids, k.list, k.lengths = make([]int64, 0, 4), make([]string, 0, 8), make([]int, 0, 8)
	}
	if len(k.ids) < knownIDsListed {
		k.ids = append(k.ids, id)
	}
	// Every spelling written into one buffer, which becomes one string that the forms slice.
	var buf [160]byte
	var ends [7]int
	b, n := buf[:0], 0
	for _, base := range []int{10, 16, 8, 36} {
		b = strconv.AppendInt(b, id, base)
		ends[n], n = len(b), n+1
	}
	if id >= 1<<40 {
		var be, le [8]byte
		binary.BigEndian.PutUint64(be[:], uint64(id))
		binary.LittleEndian.PutUint64(le[:], uint64(id))
		for _, raw := range [][]byte{be[:], le[:]} {
			at := len(b)
			b = b32NoPad.AppendEncode(b, raw)
			for i := at; i < len(b); i++ {
				b[i] = lower(b[i])
			}
			ends[n], n = len(b), n+1
		}
		b = hex.AppendEncode(b, le[:])
		ends[n], n = len(b), n+1
	}
	all, start := string(b), 0
	for _, end := range ends[:n] {
		s := all[start:end]
		start = end
		if len(s) < 6 || k.has([]byte(s)) {
			continue // too short to tell from any other number, or known already
		}
		k.list = append(k.list, s)
		switch {
		case k.set != nil:
			k.set[s] = struct{}{}
		case len(k.list) > knownListed:
			k.set = make(map[string]struct{}, 2*len(k.list))
			for _, f := range k.list {
				k.set[f] = struct{}{}
			}
		}
		if !slices.Contains(k.lengths, len(s)) {
			k.lengths = append(k.lengths, len(s))
		}
	}
}

// find returns the offset of the first known ID in text as it is (any run of letters and
// digits, case folded; any decimal group; or base64 of either, or of the ID's bytes), or -1.
func (k *Known) find(text []byte) int {
	if k == nil || len(k.list) == 0 {
		return -1
	}
	return k.findIn(text, 1)
}

func (k *Known) findIn(text []byte, depth int) int {
	at := -1
	var buf []byte
	eachRun(text, isAlnum, func(i, j int) bool {
		buf = append(buf[:0], text[i:j]...)
		for n := range buf {
			buf[n] = lower(buf[n])
		}
		if a := k.in(buf); a >= 0 {
			at = i + a
			return false
		}
		return true
	})
	if at >= 0 {
		return at
	}
	eachDigitGroup(text, &buf, func(start, _ int, digits []byte) bool {
		if k.in(digits) >= 0 {
			at = start
			return false
		}
		return true
	})
	if at >= 0 || depth == 0 {
		return at
	}
	// Base64 runs, decoded: the ID's 8 bytes, or a spelling of it inside.
	eachRun(text, isB64, func(i, j int) bool {
		dec, ok := decodeB64(text[i:j])
		if !ok {
			return true
		}
		if len(dec) == 8 {
			for _, v := range []uint64{binary.BigEndian.Uint64(dec), binary.LittleEndian.Uint64(dec)} {
				var d [20]byte
				if k.has(strconv.AppendUint(d[:0], v, 10)) {
					at = i
					return false
				}
			}
		}
		if k.findIn(dec, 0) >= 0 {
			at = i
			return false
		}
		return true
	})
	return at
}

// in returns the offset of the first known form inside run, or -1.
func (k *Known) in(run []byte) int {
	for a := range run {
		for _, n := range k.lengths {
			if a+n <= len(run) {
				if k.has(run[a : a+n]) {
					return a
				}
			}
		}
	}
	return -1
}

// contains tells whether text, or its normal form, shows a known ID.
func (k *Known) contains(text []byte) bool {
	if k.find(text) >= 0 {
		return true
	}
	n, changed := Normalize(text)
	return changed && k.find(n) >= 0
}
