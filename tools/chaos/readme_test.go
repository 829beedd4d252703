package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
	"time"
)

const (
	blockStart = "<!-- chaos block: go run ./tools/chaos --readme-block tools/chaos/last-run/results.json -->\n"
	blockEnd   = "<!-- end of chaos block -->\n"
)

// readmeBlock is the chaos block of the repository's README, between its markers.
func readmeBlock(t *testing.T) string {
	return testenv.MarkedBlock(t, "../../README.md", blockStart, blockEnd)
}

// TestReadmeBlockIsLastRun: the README's block is what --readme-block prints for the recorded run.
func TestReadmeBlockIsLastRun(t *testing.T) {
	res, err := readResults("last-run/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	res.readmeBlock(&got)
	if want := readmeBlock(t); got.String() != want {
		t.Errorf("README.md's chaos block is not what go run ./tools/chaos --readme-block tools/chaos/last-run/results.json prints; paste its output over the block.\nit prints:\n%s\nthe README has:\n%s", got.String(), want)
	}
}

// figure is a number or a Go duration ("1796119898619219680", "45.2s", "2m14.9s").
var figure = regexp.MustCompile(`(?:\d+(?:\.\d+)?(?:ns|µs|ms|h|m|s)?)+`)

// shape is a block with its figures masked and, in table lines, each cell trimmed: the header
// line, the columns and the separator exactly, of a row its first cell (the fault kind) and how
// many cells it has. The figures, and which refusals a row has, differ per run.
func shape(block string) []string {
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if !strings.HasPrefix(line, "|") {
			out = append(out, figure.ReplaceAllString(line, "#"))
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if !strings.HasPrefix(cells[0], "---") && cells[1] != "injected" {
			for i := 1; i < len(cells); i++ {
				cells[i] = "…"
			}
		}
		out = append(out, strings.Join(cells, " | "))
	}
	return out
}

// TestReadmeBlockShape: a run's block, here from a small synthetic result, has the README's
// header line, columns and rows (one per fault kind, then the total).
func TestReadmeBlockShape(t *testing.T) {
	res := &results{Seed: 7, Duration: duration(time.Minute), Elapsed: duration(61 * time.Second), IDs: 0,
		Incarnations: 20, FenceChecks: 30, Failures: []string{}}
	for i, k := range faultKinds {
		r := resultRow{Fault: k, Injected: min(i, 2), IDs: 1000 * (i + 1), Refusals: map[string]int{}, Unavailable: duration(time.Duration(i) * time.Second)}
		if k == "clock-step-hidden" {
			r.Hidden = 2000
		}
		if i%2 == 0 {
			r.Refusals["no_lease"] = i
		}
		res.Rows = append(res.Rows, r)
		res.IDs += r.IDs
		res.UnavailableTotal += r.Unavailable
	}
	res.FromGenerators, res.FromNodes = res.IDs/2, res.IDs-res.IDs/2
	var got bytes.Buffer
	res.readmeBlock(&got)
	g, w := shape(got.String()), shape(readmeBlock(t))
	if len(g) != len(w) {
		t.Fatalf("a run's block has %d lines, README.md's %d:\n%s", len(g), len(w), got.String())
	}
	for i := range g {
		if g[i] != w[i] {
			t.Errorf("line %d: a run's block has\n  %s\nREADME.md's\n  %s", i+1, g[i], w[i])
		}
	}
}
