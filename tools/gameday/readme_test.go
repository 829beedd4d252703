package gameday

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
	"time"
)

const (
	blockStart = "<!-- gameday block: go run ./tools/gameday/cmd/gameday --readme-block tools/gameday/last-run -->\n"
	blockEnd   = "<!-- end of gameday block -->\n"
)

// readmeBlock is the game day block of the repository's README, between its markers.
func readmeBlock(t *testing.T) string {
	return testenv.MarkedBlock(t, "../../README.md", blockStart, blockEnd)
}

// TestReadmeBlockIsLastRun: the README's block is what --readme-block prints for the recorded run
// (tools/gameday/last-run), and that run's results.json gives the summary its table.txt begins
// with.
func TestReadmeBlockIsLastRun(t *testing.T) {
	saved, err := ReadResults("last-run")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ReadmeBlock(saved), readmeBlock(t); got != want {
		t.Errorf("README.md's game day block is not what go run ./tools/gameday/cmd/gameday --readme-block tools/gameday/last-run prints; paste its output over the block.\nit prints:\n%s\nthe README has:\n%s", got, want)
	}
	table, err := os.ReadFile(filepath.Join("last-run", "table.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := summary(&saved.Result); !strings.HasPrefix(string(table), sum+"\n") {
		t.Errorf("last-run/table.txt does not begin with the summary of last-run/results.json (copy both from one run):\n%s", sum)
	}
}

var (
	// figure is a number or a Go duration ("42", "3.514s", "3m9.6s"); regionName a region's name.
	figure     = regexp.MustCompile(`(?:\d+(?:\.\d+)?(?:ns|µs|ms|h|m|s)?)+`)
	regionName = regexp.MustCompile(`\b[a-z]{2}-[a-z]+-\d\b`)
)

// shape is a block with its figures and region names masked and, in table lines, each cell
// trimmed: the header line, the columns and the separators exactly, of a row its phase, its
// fault and how many cells it has. The figures and the regions drawn differ per run.
func shape(block string) []string {
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if !strings.HasPrefix(line, "|") {
			out = append(out, figure.ReplaceAllString(regionName.ReplaceAllString(line, "R"), "#"))
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] != "phase" && !strings.HasPrefix(cells[0], "---") {
			for i := 2; i < len(cells); i++ {
				cells[i] = "…"
			}
		}
		out = append(out, strings.Join(cells, " | "))
	}
	return out
}

// synthetic is a small made-up run of the scenario: every phase, a caller per customer region
// and an embedded node, the customers, and a lost region's return.
func synthetic(t *testing.T, sc *Scenario) *SavedRun {
	t.Helper()
	s := &SavedRun{Scenario: sc.Name, Result: Result{Seed: 3, IDs: 1000,
		Customers: &CustomerTotals{Regions: sc.Customers.Regions, Acked: 10, Resolves: 30, EndAsked: 30}}}
	for i, ph := range sc.Phases {
		p := &PhaseResult{Name: ph.Name, Fault: string(ph.Fault), Start: time.Duration(i) * 10 * time.Second, End: time.Duration(i+1) * 10 * time.Second,
			Customers: &CustomerPhase{Requests: 40, Bound: "none outside a public-ID fault", FillingSeen: -1, Filled: -1, Ready: -1}}
		if ph.Fault != Steady {
			p.Region = sc.Customers.Regions[i%len(sc.Customers.Regions)]
		}
		for _, r := range sc.Customers.Regions {
			row := Row{Who: "caller-" + r, IDs: 100, ByNumber: map[int]int64{0: 100}, Stall: 3 * time.Millisecond, ToPeer: -1, BackHome: -1, Check: "ok"}
			if r == p.Region && ph.Fault.lost() {
				row.ToPeer, row.BackHome = 300*time.Millisecond, 500*time.Millisecond
			}
			p.Rows = append(p.Rows, row, Row{Who: "node-" + r, IDs: 100, ByNumber: map[int]int64{0: 100}, Stall: 110 * time.Millisecond, ToPeer: -1, BackHome: -1, Check: "ok"})
			p.Customers.Rows = append(p.Customers.Rows, CustomerRow{Who: "customer-" + r, Acked: 2, ResolvesOwn: 2, ResolvesOther: 4, Check: "ok"})
		}
		if ph.Fault == PublicIDLost {
			cp := p.Customers
			cp.FillingSeen, cp.Filled, cp.Ready, cp.BackChecked = 300*time.Millisecond, 3*time.Second, 3500*time.Millisecond, 8
		}
		s.Phases = append(s.Phases, p)
	}
	return s
}

// TestReadmeBlockShape: a run's block, here of a small synthetic run of the default scenario, has
// the README's header line, columns and rows (its phases, in order, with their faults).
func TestReadmeBlockShape(t *testing.T) {
	sc, err := LoadScenario(filepath.Join("scenarios", "default.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := ReadmeBlock(synthetic(t, sc))
	g, w := shape(got), shape(readmeBlock(t))
	if len(g) != len(w) {
		t.Fatalf("a run's block has %d lines, README.md's %d:\n%s", len(g), len(w), got)
	}
	for i := range g {
		if g[i] != w[i] {
			t.Errorf("line %d: a run's block has\n  %s\nREADME.md's\n  %s", i+1, g[i], w[i])
		}
	}
}

// TestResultsRoundTrip: what a run writes to results.json reads back to the same block.
func TestResultsRoundTrip(t *testing.T) {
	sc, err := LoadScenario(filepath.Join("scenarios", "default.json"))
	if err != nil {
		t.Fatal(err)
	}
	run := synthetic(t, sc)
	run.Failures = []string{"region killed: caller-us-east-1 took 5 IDs from region number 3"}
	dir := t.TempDir()
	if err := writeResults(dir, sc, &run.Result); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ReadmeBlock(back), ReadmeBlock(run); got != want {
		t.Errorf("read back:\n%s\nwritten:\n%s", got, want)
	}
	if !strings.Contains(ReadmeBlock(back), fmt.Sprintf("1 checks failed, the first: %s", run.Failures[0])) {
		t.Errorf("a failed run's block does not name its first failure:\n%s", ReadmeBlock(back))
	}
	if _, err := ReadResults(t.TempDir()); err == nil {
		t.Error("ReadResults of a folder without results.json: no error")
	}
}
