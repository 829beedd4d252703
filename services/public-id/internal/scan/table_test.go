package scan_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/services/public-id/internal/scan"
)

// now is a fixed clock, so that the window does not move under the tests.
var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// window is the detector's window at now, as the gateway's Detector makes it by default: from
// 30 days after the epoch to a day after now.
func window() scan.Scanner {
	lo := (idcore.Epoch.Add(30*24*time.Hour).UnixMilli() - idcore.EpochUnixMs) << idcore.TimestampShift
	hi := (now.Add(24*time.Hour).UnixMilli()-idcore.EpochUnixMs)<<idcore.TimestampShift | (1<<idcore.TimestampShift - 1)
	return scan.New(lo, hi)
}

// idAt is an internal ID made at t (v2 layout: region 2, machine 170, sequence seq).
func idAt(t time.Time, seq int64) int64 {
	return (t.UnixMilli()-idcore.EpochUnixMs)<<22 | 2<<19 | 170<<10 | seq
}

// ids are IDs of several times and sequences, so that no spelling passes by the luck of one
// ID's digits.
func ids() []int64 {
	return []int64{
		idAt(now.Add(-time.Hour), 3), idAt(now.Add(-200*24*time.Hour), 1023), idAt(now.Add(-time.Minute), 517),
		idAt(now.Add(-300*24*time.Hour), 0), idAt(now.Add(-17*time.Second), 99), 120950460890916871,
	}
}

// TestTableSpellings: every encoder of every entry, alone and inside text, is found by the
// detector (unless its reader is the own-ID check's only, or the entry's rule does not admit this
// ID's spelling, which the README says it misses), and by Known as the response's own ID, inside
// text and glued inside a longer run where the entry's forms allow.
func TestTableSpellings(t *testing.T) {
	s := window()
	for _, e := range scan.Table {
		for _, enc := range e.Encoders {
			for _, id := range ids() {
				text := enc.Fn(id)
				var k scan.Known
				k.Add(id)
				for _, in := range []string{text, "see " + text + " today", "(" + text + ")", `{"next":"` + text + `"}`} {
					detect := e.Detects(enc, text)
					if got := s.Find([]byte(in)); detect && got == "" {
						t.Errorf("%s, %s: %d as %q not found by the detector", e.Name, enc.Name, id, in)
					}
					if !k.Contains([]byte(in)) {
						t.Errorf("%s, %s: %d as %q not found by Known", e.Name, enc.Name, id, in)
					}
				}
			}
		}
	}
}

// TestKnownInsideRuns: an own ID's forms are found glued inside longer runs, where the detector
// (which reads whole runs, or windows of an ID's length) cannot see them.
func TestKnownInsideRuns(t *testing.T) {
	for _, id := range ids() {
		var k scan.Known
		k.Add(id)
		for _, e := range scan.Table {
			if e.Reader() == "normal form" || e.Name == "float" || e.Name == "hex float" || e.Name == "base64 and page tokens" {
				continue
			}
			for _, enc := range e.Encoders {
				in := "ORDxq" + enc.Fn(id) + "Zq9"
				if strings.ContainsAny(in, " :-.,/") {
					in = "ref " + in
				}
				if !k.Contains([]byte(in)) {
					t.Errorf("%s, %s: %d glued in %q not found by Known", e.Name, enc.Name, id, in)
				}
			}
		}
	}
}

// TestNearMisses: what is close to an ID's spelling but is none passes the detector, and another
// ID's spellings are not taken for the own ID.
func TestNearMisses(t *testing.T) {
	s := window()
	for _, text := range []string{
		strings.Repeat("ab", 8),                 // 16 hex letters, no digit: a letters-charset string
		"aaaaaaaaaaaaaaaaaaaaaaaa",              // hex letters only
		"4111111111111101",                      // 16 digits, no hex letter: not little-endian hex
		"01:23:45:67:89:01:23:45",               // hex bytes without a letter
		"ab:cd:ef:ab:cd:ef:ab:cd",               // hex bytes without a digit
		"01:af:1c:78:32",                        // five bytes: too few
		"Washington", "Generation", "Something", // base 62 and 58 need a digit and both cases
		"DefaultMux", "GetRequest", "AppendUint", // Go identifiers
		"LOCALIZATION", "localization", // Crockford needs a digit
		"0x1.8p+1", "0x1p-2", // small hex floats
		"1.5e+3", "2.5e10", // small floats
		"cur:" + "AAAA", "v1.abc", // short tokens
		"%41%42%43", "&#65;&#66;", "&amp;&nbsp;", // escapes of letters
	} {
		if got, e := s.FindSpelling([]byte(text)); got != "" {
			t.Errorf("%q is taken for an internal ID (as %s)", text, e.Name)
		}
	}
	// Another ID of the same hour (not of the same millisecond: the float nearest both would be
	// one).
	a, b := idAt(now.Add(-time.Hour), 3), idAt(now.Add(-time.Hour+time.Second), 4)
	var k scan.Known
	k.Add(a)
	for _, e := range scan.Table {
		for _, enc := range e.Encoders {
			if in := "see " + enc.Fn(b) + " today"; k.Contains([]byte(in)) {
				t.Errorf("%s, %s: %d's %q is taken for %d", e.Name, enc.Name, b, in, a)
			}
		}
	}
}

// TestTableNames: names are unique, every entry has a doc, an encoder, and a reader or forms.
func TestTableNames(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range scan.Table {
		if seen[e.Name] || e.Doc == "" || len(e.Encoders) == 0 {
			t.Errorf("entry %q: duplicate, or no doc or encoder", e.Name)
		}
		seen[e.Name] = true
		for _, enc := range e.Encoders {
			if seen[e.Name+"/"+enc.Name] {
				t.Errorf("entry %q: encoder %q twice", e.Name, enc.Name)
			}
			seen[e.Name+"/"+enc.Name] = true
		}
	}
	if testing.Verbose() {
		for _, e := range scan.Table {
			fmt.Printf("%-40s %-14s %s\n", e.Name, e.Reader(), e.Encoders[0].Fn(120950460890916871))
		}
	}
}
