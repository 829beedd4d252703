package scan

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// The readers of Table's spellings. A text reader reads the whole text; a run reader reads one
// whole run of letters and digits (with and without a 0x or 0o before it). Each is linear in
// the length of what it reads.

// readDecimal: every window of an ID's length in each decimal group.
func readDecimal(r *reading, text []byte, _ int) bool {
	return eachDigitGroup(text, &r.digits, func(start, end int, digits []byte) bool {
		return r.windows(digits, 10, r.s.decMin, r.s.decMax, text, start, end)
	})
}

// readReversed: the same windows in each decimal group read backwards.
func readReversed(r *reading, text []byte, _ int) bool {
	return eachDigitGroup(text, &r.digits, func(start, end int, digits []byte) bool {
		if len(digits) < r.s.decMin {
			return true
		}
		r.rev = append(r.rev[:0], digits...)
		for a, b := 0, len(r.rev)-1; a < b; a, b = a+1, b-1 {
			r.rev[a], r.rev[b] = r.rev[b], r.rev[a]
		}
		return r.windows(r.rev, 10, r.s.decMin, r.s.decMax, text, start, end)
	})
}

// readFloat: a float literal (digits, an optional fraction, an exponent) at the start of each run
// of digits.
func readFloat(r *reading, text []byte, _ int) bool {
	return eachRun(text, isDigit, func(start, _ int) bool {
		if e := floatEnd(text, start); e > start {
			if v, err := strconv.ParseFloat(string(text[start:e]), 64); err == nil && !r.float(v, text, start, e) {
				return false
			}
		}
		return true
	})
}

// readHexFloat: a hexadecimal float literal, 0x1.abcp+56.
func readHexFloat(r *reading, text []byte, _ int) bool {
	for i := 0; i+4 < len(text); i++ {
		if text[i] != '0' || text[i+1]|0x20 != 'x' {
			continue
		}
		j := i + 2
		for j < len(text) && isHex(text[j]) {
			j++
		}
		if j < len(text) && text[j] == '.' {
			j++
			for j < len(text) && isHex(text[j]) {
				j++
			}
		}
		if j == i+2 || j >= len(text) || text[j]|0x20 != 'p' {
			i = j - 1
			continue
		}
		k := j + 1
		if k < len(text) && (text[k] == '+' || text[k] == '-') {
			k++
		}
		e := k
		for e < len(text) && isDigit(text[e]) && e-k < 4 {
			e++
		}
		if e > k {
			if v, err := strconv.ParseFloat(string(text[i:e]), 64); err == nil && !r.float(v, text, i, e) {
				return false
			}
		}
		i = e - 1
	}
	return true
}

// readHex: every window of an ID's length in a run of hex digits that holds a letter and a
// digit, groups joined by '-' (a UUID) included.
func readHex(r *reading, text []byte, _ int) bool {
	for i := 0; i < len(text); {
		if !isHex(text[i]) {
			i++
			continue
		}
		j, letter, digit := i, false, false
		r.digits = r.digits[:0]
		for j < len(text) && (isHex(text[j]) || text[j] == '-' && j+1 < len(text) && isHex(text[j+1]) && j > i) {
			if c := text[j]; c != '-' {
				letter, digit = letter || c > '9', digit || c <= '9'
				r.digits = append(r.digits, lower(c))
			}
			j++
		}
		if letter && digit && !r.windows(r.digits, 16, r.s.hexMin, r.s.hexMax, text, i, j) {
			return false
		}
		i = j
	}
	return true
}

// readHexBytes: seven or more bytes written as two hex digits each, joined by one of
// : - . , or a space (spaces may follow the joiner), holding a letter and a digit: the windows
// of an ID's length in their digits, and every 8 of them little-endian.
func readHexBytes(r *reading, text []byte, _ int) bool {
	isByte := func(j int) bool {
		return j+1 < len(text) && isHex(text[j]) && isHex(text[j+1]) && (j+2 == len(text) || !isHex(text[j+2])) && (j == 0 || !isHex(text[j-1]))
	}
	for i := 0; i < len(text); i++ {
		if !isByte(i) {
			continue
		}
		r.digits = r.digits[:0]
		letter, digit := false, false
		j, end := i, i
		for isByte(j) {
			for _, c := range text[j : j+2] {
				letter, digit = letter || !isDigit(c), digit || isDigit(c)
				r.digits = append(r.digits, lower(c))
			}
			end = j + 2
			k := end
			if k < len(text) && isByteJoiner(text[k]) {
				k++
				for k < len(text) && text[k] == ' ' {
					k++
				}
			}
			if k == end {
				break
			}
			j = k
		}
		if n := len(r.digits) / 2; n >= 7 && letter && digit {
			if !r.windows(r.digits, 16, r.s.hexMin, r.s.hexMax, text, i, end) {
				return false
			}
			for a := 0; a+8 <= n; a++ {
				var le uint64
				for b := 7; b >= 0; b-- {
					d := r.digits[2*(a+b):]
					le = le<<8 | uint64(hexValue(d[0])<<4|hexValue(d[1]))
				}
				if !r.int(le, text, i, end) {
					return false
				}
			}
		}
		i = end - 1
	}
	return true
}

func isByteJoiner(c byte) bool { return c == ':' || c == '-' || c == '.' || c == ',' || c == ' ' }

// windows offers the value of every window of digits (in base 10 or 16, lower case) whose length
// an ID can have, starting at a non-zero digit (a window with leading zeros is the shorter one
// after them). The windows are reported as text[i:j].
func (r *reading) windows(digits []byte, base uint64, minLen, maxLen int, text []byte, i, j int) bool {
	for a := 0; a+minLen <= len(digits); a++ {
		if digits[a] == '0' {
			continue
		}
		var v uint64
		for b := a; b < len(digits) && b-a < maxLen; b++ {
			v = v*base + uint64(hexValue(digits[b]))
			if b-a+1 >= minLen && v <= math.MaxInt64 && r.s.Plausible(int64(v)) && !r.int(v, text, i, j) {
				return false
			}
		}
	}
	return true
}

// Run readers: text[i:j] is one whole run of letters and digits.

func runOctal(r *reading, text []byte, i, j int) bool {
	v, ok := parseDigits(text[i:j], 8, digitValue36)
	return !ok || r.int(v, text, i, j)
}

// allHex: a run of hex digits only is a hex number (a short git SHA), read as hex and not as
// base 36 or Crockford's base 32.
func allHex(run []byte) bool {
	for _, c := range run {
		if !isHex(c) {
			return false
		}
	}
	return true
}

func runBase36(r *reading, text []byte, i, j int) bool {
	run := text[i:j]
	if len(run) > 13 || !hasDigit(run) || !hasLetter(run) || allHex(run) {
		return true
	}
	v, ok := parseDigits(run, 36, digitValue36)
	return !ok || r.int(v, text, i, j)
}

// runBase32: RFC 4648, 5 bits a character, the 8 bytes in the first 64 of the 65 bits, in either
// byte order.
func runBase32(r *reading, text []byte, i, j int) bool {
	run := text[i:j]
	if len(run) != 13 {
		return true
	}
	var v uint64
	for n, c := range run {
		d := b32Value(c)
		if d > 31 {
			return true
		}
		if n < 12 {
			v = v<<5 | d
		} else {
			v = v<<4 | d>>1
		}
	}
	return r.int(v, text, i, j) && r.int(bits.ReverseBytes64(v), text, i, j)
}

// runCrockford: Crockford's base 32 (ULID's), the number written in 12 characters, or 13 after
// a 0, either case, I and L read as 1 and O as 0, holding a letter other than a–f and a digit.
func runCrockford(r *reading, text []byte, i, j int) bool {
	run := text[i:j]
	if len(run) < 12 || len(run) > 13 || len(run) == 13 && run[0] != '0' || !hasDigit(run) || !hasLetter(run) || allHex(run) {
		return true
	}
	v, ok := parseDigits(run, 32, crockfordValue)
	return !ok || r.int(v, text, i, j)
}

// runLittleEndianHex: 16 hex digits, holding a letter and a digit, read as the ID's 8 bytes
// little-endian.
func runLittleEndianHex(r *reading, text []byte, i, j int) bool {
	run := text[i:j]
	if len(run) != 16 || !hasDigit(run) || !hasLetter(run) {
		return true
	}
	var le uint64
	for b := 7; b >= 0; b-- {
		if !isHex(run[2*b]) || !isHex(run[2*b+1]) {
			return true
		}
		le = le<<8 | uint64(hexValue(lower(run[2*b]))<<4|hexValue(lower(run[2*b+1])))
	}
	return r.int(le, text, i, j)
}

// mixedCase: an upper-case and a lower-case letter.
func mixedCase(run []byte) bool {
	u, l := false, false
	for _, c := range run {
		u, l = u || 'A' <= c && c <= 'Z', l || 'a' <= c && c <= 'z'
	}
	return u && l
}

// mixed: a digit, an upper-case and a lower-case letter: what base 62 and base 58 readings need.
func mixed(run []byte) bool {
	d, u, l := false, false, false
	for _, c := range run {
		d, u, l = d || isDigit(c), u || 'A' <= c && c <= 'Z', l || 'a' <= c && c <= 'z'
	}
	return d && u && l
}

func runBase62(r *reading, text []byte, i, j int) bool {
	run := text[i:j]
	if len(run) < 10 || len(run) > 11 || !mixed(run) {
		return true
	}
	for _, val := range []func(byte) uint64{base62Value, base62LowerFirstValue} {
		if v, ok := parseDigits(run, 62, val); ok && !r.int(v, text, i, j) {
			return false
		}
	}
	return true
}

func runBase58(r *reading, text []byte, i, j int) bool {
	run := text[i:j]
	if len(run) < 10 || len(run) > 11 || !mixed(run) {
		return true
	}
	v, ok := parseDigits(run, 58, base58Value)
	return !ok || r.int(v, text, i, j)
}

// readBase64: every run of base64 or base64url characters of 11 or more (8 bytes) decoded, and
// at the top level the part of a run after a prefix glued by '_' or '-' ("v1_", "cur-") too.
func readBase64(r *reading, text []byte, depth int) bool {
	if depth == 0 {
		return true
	}
	return eachRun(text, isB64, func(i, j int) bool {
		if !r.payload(text, i, j, depth) {
			return false
		}
		if r.outer == nil {
			for p := i + 1; p < j && p < i+10; p++ {
				if text[p] == '_' || text[p] == '-' {
					return j-p-1 < 11 || r.payload(text, p+1, j, depth)
				}
			}
		}
		return true
	})
}

// payload reads the decoded run text[i:j]: the ID's 8 bytes in either order (the detector: in a
// payload of 8 or 9 bytes, at each offset, when the run holds an upper-case and a lower-case
// letter, as base64 of binary bytes all but always does; Known: at every offset of any payload), a protobuf
// message's varint and fixed64 fields (Known: every varint, as it is and zigzag-decoded), and everything else in the decoded
// bytes as text, one level of base64 less. The detector reads a 9-byte payload and the message
// only when the run holds an upper-case and a lower-case letter, as base64 of binary bytes all but always
// does (a product code's capitals and digits decode to bytes that look like long varints).
func (r *reading) payload(text []byte, i, j, depth int) bool {
	dec := decodeB64(text[i:j])
	if len(dec) < 8 {
		return true
	}
	if r.outer == nil {
		r.outer, r.outerAt, r.outerEntry = text[i:j], i, r.cur
		defer func() { r.outer = nil }()
	}
	bin := r.k != nil || mixedCase(text[i:j])
	if r.k != nil || len(dec) == 8 || len(dec) == 9 && bin {
		for o := 0; o+8 <= len(dec); o++ {
			be := binary.BigEndian.Uint64(dec[o:])
			if !r.int(be, dec, o, o+8) || !r.int(bits.ReverseBytes64(be), dec, o, o+8) {
				return false
			}
		}
	}
	if r.k != nil {
		for o := range dec {
			if v, n := binary.Uvarint(dec[o:]); n > 0 && (!r.int(v, dec, o, o+n) || !r.int(v>>1^-(v&1), dec, o, o+n)) {
				return false
			}
		}
	} else if bin && protoValid(dec, 0) && !r.protobuf(dec, 0) {
		return false
	}
	return r.inner(dec, depth-1)
}

// protoValid tells whether b is a protobuf message to its last byte (nested messages checked up
// to 3 deep are only what the fields' lengths say; a length-delimited field is any bytes).
func protoValid(b []byte, _ int) bool {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 || tag>>3 == 0 || tag>>3 > 1<<29-1 {
			return false
		}
		b = b[n:]
		switch tag & 7 {
		case 0:
			if _, n = binary.Uvarint(b); n <= 0 {
				return false
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return false
			}
			b = b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return false
			}
			b = b[n+int(l):]
		case 5:
			if len(b) < 4 {
				return false
			}
			b = b[4:]
		default:
			return false
		}
	}
	return true
}

// protobuf offers every varint field (as it is and zigzag-decoded, for sint64) and fixed64 field
// (either byte order) of the valid message b, and of the messages nested in it, 3 deep.
func (r *reading) protobuf(b []byte, level int) bool {
	msg := b
	for o := 0; o < len(msg); {
		tag, n := binary.Uvarint(msg[o:])
		o += n
		switch tag & 7 {
		case 0:
			v, n := binary.Uvarint(msg[o:])
			if !r.int(v, msg, o, o+n) || !r.int(v>>1^-(v&1), msg, o, o+n) {
				return false
			}
			o += n
		case 1:
			le := binary.LittleEndian.Uint64(msg[o:])
			if !r.int(le, msg, o, o+8) || !r.int(bits.ReverseBytes64(le), msg, o, o+8) {
				return false
			}
			o += 8
		case 2:
			l, n := binary.Uvarint(msg[o:])
			o += n
			if sub := msg[o : o+int(l)]; level < 3 && len(sub) > 0 && protoValid(sub, 0) && !r.protobuf(sub, level+1) {
				return false
			}
			o += int(l)
		case 5:
			o += 4
		}
	}
	return true
}

// decodeB64 decodes a run of 11 characters or more (what 8 bytes take) as base64, leniently:
// either alphabet (+/ and -_), padded or not, unused bits ignored, a stray last character
// dropped.
func decodeB64(run []byte) []byte {
	n := len(run)
	for n > 0 && run[n-1] == '=' {
		n--
	}
	if n < 11 {
		return nil
	}
	if n%4 == 1 {
		n--
	}
	out := make([]byte, 0, n*3/4)
	var acc uint32
	nbits := 0
	for _, c := range run[:n] {
		acc = acc<<6 | uint32(b64Value(c))
		nbits += 6
		if nbits >= 8 {
			nbits -= 8
			out = append(out, byte(acc>>nbits))
		}
	}
	return out
}

func b64Value(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c - 'A'
	case 'a' <= c && c <= 'z':
		return c - 'a' + 26
	case isDigit(c):
		return c - '0' + 52
	case c == '+' || c == '-':
		return 62
	}
	return 63
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

// eachDigitGroup calls f with every group of decimal digits in text: a run of digits continued
// across separators (sepEnd), with its digits (separators dropped) in *digits, until f returns
// false.
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
// fraction, an exponent), or i when there is none.
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

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isSep(c byte) bool {
	return c == ',' || c == '-' || c == '_' || c == '.' || c == '\'' || c == '/' || c == ':'
}
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isB64(c byte) bool   { return isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_' }
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
func hasDigit(run []byte) bool {
	for _, c := range run {
		if isDigit(c) {
			return true
		}
	}
	return false
}
func hasLetter(run []byte) bool {
	for _, c := range run {
		if !isDigit(c) {
			return true
		}
	}
	return false
}

// bad is the value of a character outside a base's alphabet.
const bad = 255

// parseDigits reads a run as a number in base with the digit values val gives; ok is false when
// a character is not a digit of the base or the value passes 64 bits.
func parseDigits(run []byte, base uint64, val func(byte) uint64) (v uint64, ok bool) {
	for _, c := range run {
		d := val(c)
		if d >= base || v > (math.MaxUint64-d)/base {
			return 0, false
		}
		v = v*base + d
	}
	return v, true
}

// digitValue36: 0–9, then a–z (either case) 10–35.
func digitValue36(c byte) uint64 {
	switch {
	case isDigit(c):
		return uint64(c - '0')
	case 'a' <= c && c <= 'z':
		return uint64(c-'a') + 10
	case 'A' <= c && c <= 'Z':
		return uint64(c-'A') + 10
	}
	return bad
}

// b32Value is the value of an RFC 4648 base-32 character (A–Z 0–25, 2–7 26–31), either case;
// over 31 for any other.
func b32Value(c byte) uint64 {
	switch {
	case '2' <= c && c <= '7':
		return uint64(c-'2') + 26
	case 'a' <= c && c <= 'z':
		return uint64(c - 'a')
	case 'A' <= c && c <= 'Z':
		return uint64(c - 'A')
	}
	return bad
}

const (
	crockfordAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	base62Alphabet    = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	base62LowerFirst  = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	base58Alphabet    = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
)

var crockfordTable, base62Table, base62LowerTable, base58Table = valueTable(crockfordAlphabet), valueTable(base62Alphabet), valueTable(base62LowerFirst), valueTable(base58Alphabet)

func init() {
	// Crockford: either case, I and L are 1, O is 0.
	for i := 0; i < len(crockfordAlphabet); i++ {
		crockfordTable[lower(crockfordAlphabet[i])] = crockfordTable[crockfordAlphabet[i]]
	}
	for _, c := range "IiLl" {
		crockfordTable[c] = 1
	}
	crockfordTable['O'], crockfordTable['o'] = 0, 0
}

func valueTable(alphabet string) *[256]byte {
	var t [256]byte
	for i := range t {
		t[i] = bad
	}
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	return &t
}

func crockfordValue(c byte) uint64        { return uint64(crockfordTable[c]) }
func base62Value(c byte) uint64           { return uint64(base62Table[c]) }
func base62LowerFirstValue(c byte) uint64 { return uint64(base62LowerTable[c]) }
func base58Value(c byte) uint64           { return uint64(base58Table[c]) }
