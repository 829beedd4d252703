package scan_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestFalsePositives measures how often the detector takes ordinary text for an internal ID (a
// false positive refuses a legitimate response with a 502), per category of the corpus
// (corpus_test.go), and names the spelling each refusal was read in. It fails when a category
// of ordinary text passes its bound: a new spelling, or a looser rule, that refuses much more
// ordinary text shows here. The figures are in the README; `go test -run TestFalsePositives -v`
// in this package prints them.
func TestFalsePositives(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("reads Go's source tree and measures: not in -short or -race")
	}
	// The most a category may be refused, in percent: digests and UUIDs are refused by design
	// (the README's price of the scan).
	bounds := map[string]float64{
		"words": 1.1, "words, letters only": 0.2, "prose (Go comments)": 1, "prose (licences)": 0.1,
		"product codes": 0.05, "public IDs": 0.05, "dates and numbers": 0,
	}
	s := window()
	for _, c := range corpus(t) {
		n := 0
		by := map[string]int{}
		examples := map[string]string{}
		for _, v := range c.values {
			if run, e := s.FindSpelling([]byte(v)); run != "" {
				n++
				by[e.Name]++
				if _, ok := examples[e.Name]; !ok {
					examples[e.Name] = v
				}
			}
		}
		rate := 100 * float64(n) / float64(len(c.values))
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(by)) {
			parts = append(parts, fmt.Sprintf("%s %d (%.40q)", name, by[name], examples[name]))
		}
		t.Logf("%-20s %7d values, %6d refused: %7.3f %%  %s", c.name, len(c.values), n, rate, strings.Join(parts, ", "))
		if b, ok := bounds[c.name]; ok && rate > b {
			t.Errorf("%s: %.3f %% refused, over the bound of %.2f %%", c.name, rate, b)
		}
	}
}
