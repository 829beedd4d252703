package scan_test

import (
	"encoding/base64"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/services/public-id/internal/scan"
)

// TestLinear: the detector and Known take about eight times as long on eight times the text,
// for texts made to stress each reader (long runs of digits, hex, hex bytes, hex floats, base64
// nested three deep, escapes), not the square. The bound is loose (a quadratic pass would take
// 64 times as long, a linear one 8) because the machine is shared; each time is the least of
// five runs, each after a collection.
func TestLinear(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing: not in -short or -race")
	}
	nested := func(n int) string {
		s := strings.Repeat("x", n*3/64)
		for range 3 {
			s = base64.StdEncoding.EncodeToString([]byte(s + " 12:34 " + s))
		}
		return s
	}
	patterns := map[string]func(n int) string{
		"digits":       func(n int) string { return strings.Repeat("1", n) },
		"digit groups": func(n int) string { return strings.Repeat("12 - ", n/5) },
		"hex":          func(n int) string { return strings.Repeat("a1", n/2) },
		"hex bytes":    func(n int) string { return strings.Repeat("a1:", n/3) },
		"hex floats":   func(n int) string { return strings.Repeat("0x1.a", n/5) },
		"0x":           func(n int) string { return strings.Repeat("0x", n/2) },
		"base64":       func(n int) string { return strings.Repeat("Ab9_", n/4) },
		"nested":       nested,
		"entities":     func(n int) string { return strings.Repeat("&#49;%31", n/8) },
		"floats":       func(n int) string { return strings.Repeat("1.5e", n/4) },
	}
	s := window()
	var k scan.Known
	k.Add(120950460890916871)
	timeOf := func(text []byte) time.Duration {
		best := time.Duration(1 << 62)
		for range 5 {
			runtime.GC()
			t0 := time.Now()
			s.Find(text)
			k.Contains(text)
			best = min(best, time.Since(t0))
		}
		return best
	}
	for name, p := range patterns {
		small, large := []byte(p(64<<10)), []byte(p(512<<10))
		ts, tl := timeOf(small), timeOf(large)
		ratio := float64(tl) / float64(max(ts, time.Microsecond))
		t.Logf("%-12s %7d bytes %10v, %7d bytes %10v: ×%.1f", name, len(small), ts, len(large), tl, ratio)
		if ratio > 40 {
			t.Errorf("%s: %v for %d bytes, %v for %d: not linear", name, ts, len(small), tl, len(large))
		}
	}
}
