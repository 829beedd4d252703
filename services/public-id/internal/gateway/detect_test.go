package gateway_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/internal/leakcheck"
	"github.com/idgen/idgen/services/public-id/internal/scan"
)

// TestDetectorSpellings: each spelling of the scanner's table, of an ID alone and inside a
// sentence, is found by the detector (an unknown ID, where the table says the detector reads
// it) and by Known (the response's own ID), and the judge of the tests (leakcheck) sees it
// too, so that the attack tests' scan covers every spelling refused here.
func TestDetectorSpellings(t *testing.T) {
	// Several IDs, so that no spelling passes by the luck of one ID's digits.
	for _, id := range []int64{idAt(now.Add(-time.Hour), 3), idAt(now.Add(-200*24*time.Hour), 1023), idAt(now.Add(-time.Minute), 517)} {
		for _, sp := range leakcheck.Spellings {
			text := sp.Fn(id)
			for _, in := range []string{text, "see " + text + " today", "(" + text + ")"} {
				if sp.Detected(id) {
					if gateway.DetectorFind(detector(), in) == "" {
						t.Errorf("%d as %s: %q not found by the detector", id, sp.Name, in)
					}
					if _, ok := leakcheck.Text(in, []int64{id}); !ok {
						t.Errorf("%d as %s: %q not seen by leakcheck", id, sp.Name, in)
					}
				}
				var k gateway.Known
				k.Add(id)
				if !gateway.KnownContains(&k, in) {
					t.Errorf("%d as %s: %q not found by Known", id, sp.Name, in)
				}
				if _, ok := leakcheck.Own(in, []int64{id}); !ok {
					t.Errorf("%d as %s: %q not seen by leakcheck as an own ID", id, sp.Name, in)
				}
			}
		}
	}
}

// TestDetectorOrdinaryText: what a response ordinarily holds still passes.
func TestDetectorOrdinaryText(t *testing.T) {
	for _, text := range []string{
		"4111 1111 1111 1111", "+44 20 7946 0958", "2026-11-30T12:00:00Z", "total 4200, paid 2026-11-30",
		"programming internationalization", "Thanks for your order!", "ＡＢＣ１２３", "٣ كتب", "deadbeefcafe",
		"v3", `W/"abc-123"`, "private, max-age=60", "SKU-2026-0042",
		strings.Repeat("ab", 8), "aaaabbbbaaaabbbb", // a letters charset: hex letters without a digit are no hex reading
	} {
		if gateway.DetectorFind(detector(), text) != "" {
			t.Errorf("%q is taken for an internal ID", text)
		}
	}
}

// TestDigitRanges: every range of Unicode decimal digits in Go's tables is whole sets of ten
// with stride 1, which digitValue relies on; and the normal form maps each digit to the ASCII
// digit NFKC gives it where NFKC gives one.
func TestDigitRanges(t *testing.T) {
	n := 0
	for _, rg := range unicode.Nd.R16 {
		if rg.Stride != 1 || (rg.Hi-rg.Lo+1)%10 != 0 {
			t.Errorf("Nd range %U–%U stride %d", rg.Lo, rg.Hi, rg.Stride)
		}
		n += int(rg.Hi-rg.Lo+1) / 10
	}
	for _, rg := range unicode.Nd.R32 {
		if rg.Stride != 1 || (rg.Hi-rg.Lo+1)%10 != 0 {
			t.Errorf("Nd range %U–%U stride %d", rg.Lo, rg.Hi, rg.Stride)
		}
		n += int(rg.Hi-rg.Lo+1) / 10
	}
	for _, zero := range []rune{'0', '٠', '۰', '०', '০', '๐', '０', '𝟎', '𝟘', '𝟶'} {
		got, _ := scan.Normalize([]byte(leakcheck.DigitsIn("0123456789", zero)))
		if string(got) != "0123456789" {
			t.Errorf("digits of zero %U normalize to %q", zero, got)
		}
	}
	t.Logf("%d sets of decimal digits", n)
}

// TestNormalize: invisible characters go, spaces become one kind, ASCII is untouched.
func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"a\u200bb\u200cc\u200dd\ufeffe": "abcde",
		"1\x002\x7f3\t4\n5":             "12345",
		"x\u3164y\u115fz":               "xyz",
		"a\u00a0b\u2028c\u3000d":        "a b c d",
		"ﬁne ①":                         "fine 1",
		"1\xff2":                        "12",
	} {
		got, changed := scan.Normalize([]byte(in))
		if string(got) != want || !changed {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, changed, want)
		}
	}
	if got, changed := scan.Normalize([]byte("plain ASCII 123")); changed || string(got) != "plain ASCII 123" {
		t.Errorf("ASCII changed: %q", got)
	}
}

// TestRewriteSpreadOverFields: the ID times ten in an int or a number is refused.
func TestRewriteSpreadOverFields(t *testing.T) {
	a := idAt(now.Add(-time.Minute), 9)
	for _, body := range []string{
		fmt.Sprintf(`{"total_cents":%d0}`, a),
		fmt.Sprintf(`{"total_cents":%d}`, a*10),
		fmt.Sprintf(`{"weight":%d0}`, a),
		fmt.Sprintf(`{"weight":%d.5}`, a),
	} {
		if _, err := rewrite(t, body); err == nil {
			t.Errorf("%s passed", body)
		}
	}
}

// TestRewriteNormalizedKnown: the response's own ID split by an invisible character that JSON
// escapes is found in the normal form, though no scan of the written body would join it.
func TestRewriteNormalizedKnown(t *testing.T) {
	old := idAt(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), 1) // before the window: only Known finds it
	body := fmt.Sprintf(`{"id":"%d","note":"%s"}`, old, strings.ReplaceAll(leakcheck.Interleave(strconv.FormatInt(old, 10), "\x00"), "\x00", `\u0000`))
	_, err := rewrite(t, body)
	var ue *gateway.UnsafeError
	if !asUnsafe(err, &ue) || ue.Field != "note" {
		t.Fatalf("err %v, want unsafe in note", err)
	}
}

// TestKnownMany: Known finds every spelling of each of many IDs (past the forms it keeps in a
// list, in its set), added in any order and more than once, and nothing else.
func TestKnownMany(t *testing.T) {
	var ids []int64
	for i := range 60 {
		ids = append(ids, idAt(now.Add(-time.Duration(i)*time.Hour), int64(i)))
	}
	var k gateway.Known
	for _, id := range ids {
		k.Add(id)
		k.Add(ids[0])
	}
	for _, id := range ids {
		for _, sp := range leakcheck.Spellings {
			if in := "see " + sp.Fn(id) + " today"; !gateway.KnownContains(&k, in) {
				t.Errorf("%d as %s: %q not found by Known", id, sp.Name, in)
			}
		}
	}
	other := idAt(now.Add(-1000*time.Hour), 999)
	if gateway.KnownContains(&k, fmt.Sprint(other)) {
		t.Errorf("%d, not added, is found by Known", other)
	}
}

// TestAppendQuoted: the quoting of a public ID is strconv.Quote's, for every byte.
func TestAppendQuoted(t *testing.T) {
	cases := []string{"", "ord_CB5M3EE71KF8eCoiYzXAgxtJ", `a"b`, `a\b`, "tab\there", "é", "\xff"}
	for c := range 256 {
		cases = append(cases, "x"+string(rune(c))+"y", "x"+string([]byte{byte(c)})+"y")
	}
	for _, s := range cases {
		if got, want := string(gateway.AppendQuoted([]byte("<"), s)), "<"+strconv.Quote(s); got != want {
			t.Errorf("AppendQuoted(%q) = %s, want %s", s, got, want)
		}
	}
}
