package gateway

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalize returns text in the form the scanner reads besides the text itself: NFKC
// (full-width and mathematical digits become ASCII digits, ligatures letters), every character
// that does not show removed (control and format characters, combining marks, default-ignorable
// code points such as zero-width spaces and Hangul fillers, bytes that are not UTF-8), every
// other Unicode decimal digit (Arabic-Indic, Devanagari, …) written as its ASCII digit, and every
// Unicode space or line separator written as one ASCII space. changed says whether the result
// differs from text; printable ASCII is returned as it is, without a copy.
func Normalize(text []byte) (out []byte, changed bool) {
	ascii := true
	for _, c := range text {
		if c < 0x20 || c > 0x7e {
			ascii = false
			break
		}
	}
	if ascii {
		return text, false
	}
	n := norm.NFKC.Bytes(text)
	out = make([]byte, 0, len(n))
	for i := 0; i < len(n); {
		r, size := utf8.DecodeRune(n[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			// not UTF-8: dropped, as an invisible character is
		case r < utf8.RuneSelf && r >= 0x20 && r != 0x7f:
			out = append(out, byte(r))
		case invisible(r):
		case unicode.Is(unicode.Nd, r):
			out = append(out, '0'+digitValue(r))
		case unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
			out = append(out, ' ')
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return out, !bytes.Equal(out, text)
}

// invisible: characters a reader does not see between two digits.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Mn, unicode.Me, unicode.Other_Default_Ignorable_Code_Point,
		unicode.Variation_Selector)
}

// digitValue is the value of a Unicode decimal digit (category Nd). Unicode encodes every set
// of decimal digits as ten contiguous code points, zero first (a stability guarantee), so the
// value is the offset within the table's range, modulo ten; TestDigitRanges checks the tables.
func digitValue(r rune) byte {
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return byte((r - rune(rg.Lo)) % 10)
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return byte((r - rune(rg.Lo)) % 10)
		}
	}
	return 0
}
