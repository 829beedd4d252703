package scan_test

import (
	"testing"

	"github.com/idgen/idgen/services/public-id/internal/scan"
)

// TestNormalizeEscapes: percent-escapes, then HTML character references, are resolved once each
// before the rest of the normal form; text without any is returned as it is.
func TestNormalizeEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"%31%32%33":              "123",
		"%e2%80%8b1%E2%80%8B2":   "12",  // zero-width spaces, percent-encoded, then removed
		"%EF%BC%91":              "1",   // a full-width 1
		"&#49;&#x32;&#51":        "123", // the last without its ';'
		"1&nbsp;2&comma;3&shy;4": "1 2,34",
		"&amp;#49;":              "&#49;", // resolved once
		"%26%2349%3B":            "1",     // percent first, then the reference it spelt
		"&#x200b;":               "",
	} {
		got, changed := scan.Normalize([]byte(in))
		if string(got) != want || !changed {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, changed, want)
		}
	}
	for _, in := range []string{"AT&T", "100%", "50 %zz", "&unknown;", "&#;", "a & b"} {
		if got, changed := scan.Normalize([]byte(in)); changed || string(got) != in {
			t.Errorf("Normalize(%q) = %q, %v; want it unchanged", in, got, changed)
		}
	}
}
