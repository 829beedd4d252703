package scan

import (
	"bytes"
	"strconv"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalize returns text in the form the scanner reads besides the text itself:
//   - percent-escapes decoded (%31 is 1, %E2%80%8B a zero-width space), one pass;
//   - then HTML character references resolved (&#49; and &#x31; with or without their ';', and
//     the named ones that can stand for a digit's neighbours: spaces, separators, invisible
//     characters, &amp;), one pass;
//   - then NFKC (full-width and mathematical digits become ASCII digits, ligatures letters),
//     every character that does not show removed (control and format characters, combining
//     marks, default-ignorable code points such as zero-width spaces and Hangul fillers, bytes
//     that are not UTF-8), every other Unicode decimal digit (Arabic-Indic, Devanagari, …)
//     written as its ASCII digit, and every Unicode space or line separator written as one ASCII
//     space.
//
// changed says whether the result differs from text; printable ASCII without '%' or '&' is
// returned as it is, without a copy. Each step is one pass, linear in the length of text.
func Normalize(text []byte) (out []byte, changed bool) {
	ascii, escapes := true, false
	for _, c := range text {
		if c < 0x20 || c > 0x7e {
			ascii = false
		} else if c == '%' || c == '&' {
			escapes = true
		}
	}
	if ascii && !escapes {
		return text, false
	}
	n := text
	if escapes {
		n = unescape(n)
		ascii = true
		for _, c := range n {
			if c < 0x20 || c > 0x7e {
				ascii = false
				break
			}
		}
	}
	if ascii {
		return n, !bytes.Equal(n, text)
	}
	n = norm.NFKC.Bytes(n)
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

// unescape decodes percent-escapes, then HTML character references, each in one pass.
func unescape(text []byte) []byte {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		if c := text[i]; c == '%' && i+2 < len(text) && isHex(text[i+1]) && isHex(text[i+2]) {
			out = append(out, hexValue(lower(text[i+1]))<<4|hexValue(lower(text[i+2])))
			i += 2
		} else {
			out = append(out, c)
		}
	}
	if bytes.IndexByte(out, '&') < 0 {
		return out
	}
	res := make([]byte, 0, len(out))
	for i := 0; i < len(out); {
		if out[i] != '&' {
			res = append(res, out[i])
			i++
			continue
		}
		r, n := entity(out[i:])
		if n == 0 {
			res = append(res, '&')
			i++
			continue
		}
		res = utf8.AppendRune(res, r)
		i += n
	}
	return res
}

// entity reads the HTML character reference at the start of s ("&#49;", "&#x31", "&nbsp;"):
// the character it stands for and its length, or 0 when there is none.
func entity(s []byte) (rune, int) {
	if len(s) < 3 {
		return 0, 0
	}
	if s[1] == '#' {
		i, base := 2, 10
		if s[2] == 'x' || s[2] == 'X' {
			i, base = 3, 16
		}
		j := i
		for j < len(s) && j-i < 8 && (base == 10 && isDigit(s[j]) || base == 16 && isHex(s[j])) {
			j++
		}
		if j == i {
			return 0, 0
		}
		v, err := strconv.ParseUint(string(s[i:j]), base, 32)
		if err != nil || v > unicode.MaxRune {
			return 0, 0
		}
		if j < len(s) && s[j] == ';' {
			j++
		}
		return rune(v), j
	}
	j := 1
	for j < len(s) && j < 10 && isAlnum(s[j]) {
		j++
	}
	if j == len(s) || s[j] != ';' {
		return 0, 0
	}
	r, ok := namedEntities[string(s[1:j])]
	if !ok {
		return 0, 0
	}
	return r, j + 1
}

// namedEntities are the named references that can stand between or for an ID's digits.
var namedEntities = map[string]rune{
	"nbsp": '\u00a0', "ensp": '\u2002', "emsp": '\u2003', "thinsp": '\u2009', "numsp": '\u2007', "puncsp": '\u2008',
	"shy": '\u00ad', "zwj": '\u200d', "zwnj": '\u200c', "lrm": '\u200e', "rlm": '\u200f', "NoBreak": '\u2060',
	"ZeroWidthSpace": '\u200b', "amp": '&', "AMP": '&', "comma": ',', "period": '.', "colon": ':', "sol": '/',
	"hyphen": '-', "dash": '-', "minus": '-', "lowbar": '_', "UnderBar": '_', "apos": '\'', "quot": '"',
	"num": '#', "percnt": '%', "plus": '+', "equals": '=', "lt": '<', "gt": '>', "Tab": '\t', "NewLine": '\n',
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
