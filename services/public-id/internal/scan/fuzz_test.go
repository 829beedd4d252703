package scan_test

import (
	"testing"

	"github.com/idgen/idgen/services/public-id/internal/scan"
)

// encoders are every encoder of the table, with its entry.
var encoders = func() (out []struct {
	e   *scan.Entry
	enc scan.Encoder
}) {
	for _, e := range scan.Table {
		for _, enc := range e.Encoders {
			out = append(out, struct {
				e   *scan.Entry
				enc scan.Encoder
			}{e, enc})
		}
	}
	return out
}()

// FuzzScan: every encoding of the table of an ID in the window, between any two texts (a space
// on either side, so that a whole-run spelling stays whole), is found by the detector where the
// table says the detector reads it, and by Known as the response's own ID always; and the scan
// of any text ends (each pass linear: the fuzzer's inputs are short, the time limit is the
// fuzzer's).
func FuzzScan(f *testing.F) {
	for i := range encoders {
		for _, around := range [][2]string{{"", ""}, {"ref", "ok"}, {"ORD-12", "34X"}, {"é\u200b", "\x00"}, {"ab:cd", "%"}, {"&amp;", "=="}, {"v1", "cur:"}} {
			f.Add(around[0], around[1], int64(i*7919), uint8(i))
		}
	}
	s := window()
	lo, hi := s.Window()
	f.Fuzz(func(t *testing.T, before, after string, embed int64, form uint8) {
		x := lo + int64(uint64(embed)%uint64(hi-lo+1))
		sp := encoders[int(form)%len(encoders)]
		spelled := sp.enc.Fn(x)
		in := []byte(before + " " + spelled + " " + after)
		if sp.e.Detects(sp.enc, spelled) && s.Find(in) == "" {
			t.Fatalf("%d as %s, %s: %q not found by the detector", x, sp.e.Name, sp.enc.Name, in)
		}
		var k scan.Known
		k.Add(x)
		if !k.Contains(in) {
			t.Fatalf("%d as %s, %s: %q not found by Known", x, sp.e.Name, sp.enc.Name, in)
		}
		// Any text at all: the scan ends, and what Values reads is in the window.
		for _, v := range s.Values([]byte(before + after)) {
			if !s.Plausible(v) {
				t.Fatalf("%d read in %q is outside the window", v, before+after)
			}
		}
	})
}
