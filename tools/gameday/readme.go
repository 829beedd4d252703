package gameday

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ResultsFile is the name of a run's results in its folder: what the README's block is printed
// from without running again (ReadmeBlock).
const ResultsFile = "results.json"

// SavedRun is a run's results as its folder's results.json holds them.
type SavedRun struct {
	Scenario string `json:"scenario"` // the scenario's name
	Result
}

// writeResults writes the run's results to dir/results.json.
func writeResults(dir string, sc *Scenario, res *Result) error {
	b, err := json.MarshalIndent(SavedRun{Scenario: sc.Name, Result: *res}, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ResultsFile), append(b, '\n'), 0o644)
}

// ReadResults reads the results.json of a run's folder.
func ReadResults(dir string) (*SavedRun, error) {
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, err
	}
	var s SavedRun
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ResultsFile), err)
	}
	if len(s.Phases) == 0 {
		return nil, fmt.Errorf("%s: no phases: not a game day's results", filepath.Join(dir, ResultsFile))
	}
	return &s, nil
}

// ReadmeBlock is the README's block for a saved run: a paragraph of its totals and verdict (and,
// for each region lost for good, its return), then the summary: a line per phase, and with
// customers the public-ID side's line per phase and its totals.
func ReadmeBlock(s *SavedRun) string {
	res := &s.Result
	var b strings.Builder
	var end, stall time.Duration
	for _, p := range res.Phases {
		end = max(end, p.End)
		stall = max(stall, p.MachineStall)
	}
	fmt.Fprintf(&b, "`make gameday GAMEDAY_SEED=%d`, scenario %q: %d phases in %s, %d IDs checked", res.Seed, s.Scenario, len(res.Phases), secs(end), res.IDs)
	if t := res.Customers; t != nil {
		fmt.Fprintf(&b, ", %d public IDs acknowledged in %s", t.Acked, strings.Join(t.Regions, ", "))
	}
	switch {
	case res.Inconclusive:
		fmt.Fprintf(&b, "; inconclusive: %d checks failed, each in a phase where this machine stalled %v or more", len(res.Failures), MachineStallBound)
	case len(res.Failures) > 0:
		fmt.Fprintf(&b, "; %d checks failed, the first: %s", len(res.Failures), res.Failures[0])
	default:
		b.WriteString("; every check passed")
	}
	fmt.Fprintf(&b, "; the longest this machine stood still in a phase: %s.", ms(stall))
	for _, p := range res.Phases {
		if cp := p.Customers; cp != nil && p.Fault == string(PublicIDLost) {
			fmt.Fprintf(&b, " %s, lost for good in %q, came back empty: region_filling seen %s after the restore, filled %s, taking customers %s, then answered %d of %d acknowledged public IDs.",
				p.Region, p.Name, opt(cp.FillingSeen), opt(cp.Filled), opt(cp.Ready), cp.BackChecked-cp.BackMissing, cp.BackChecked)
		}
	}
	b.WriteString("\n\n")
	b.WriteString(summary(res))
	return b.String()
}

// summary is the run's summary: renderSummary, then with customers renderCustomerSummary.
func summary(res *Result) string {
	s := renderSummary(res)
	if res.Customers != nil {
		s += "\n" + renderCustomerSummary(res)
	}
	return s
}
