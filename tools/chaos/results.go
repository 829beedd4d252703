package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// results is what a run found, as --results writes it (JSON) and --readme-block reads it back:
// the table's rows and the run's totals, enough to print the table and the README's block
// without running again.
type results struct {
	Seed     uint64   `json:"seed"`
	Duration duration `json:"duration"` // --duration
	Elapsed  duration `json:"elapsed"`  // from the first process's start to the last one's stop
	// IDs checked, from how many process incarnations, and of them from generators (HTTP
	// batches) and from embedded nodes.
	IDs            int `json:"ids"`
	Incarnations   int `json:"incarnations"`
	FromGenerators int `json:"from_generators"`
	FromNodes      int `json:"from_nodes"`
	FenceChecks    int `json:"fence_checks"` // batches checked against their holder's fence
	// Failures are the broken promises, each a line as the run printed it (a duplicate, IDs out
	// of order or past a fence, IDs from a clock beyond the bound); none when the run passed.
	Failures []string `json:"failures"`
	// Operator commands that failed: reported, not broken promises.
	OperatorFailures []string    `json:"operator_failures,omitempty"`
	Rows             []resultRow `json:"rows"`
	// UnavailableTotal is the rows' unavailable time summed before each is rounded for the table.
	UnavailableTotal duration `json:"unavailable_total"`
}

// resultRow is one fault kind's line of the table (the report's row).
type resultRow struct {
	Fault       string         `json:"fault"`
	Injected    int            `json:"injected"`
	IDs         int            `json:"ids"`
	Duplicates  int            `json:"duplicates"`
	Refusals    map[string]int `json:"refusals"`  // episodes by reason
	OffClock    int            `json:"off_clock"` // IDs from a clock beyond the bound its discipline reported
	Hidden      int            `json:"hidden"`    // IDs from a clock stepped beyond the bound unseen
	Unavailable duration       `json:"unavailable"`
	Longest     duration       `json:"longest"`
}

// duration is a time.Duration written in JSON as Go spells it ("2m14.9s").
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"1m2.5s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

// resultRows are the report's rows as results hold them, and their unavailable time summed.
func (rep report) resultRows() ([]resultRow, duration) {
	var sum duration
	out := make([]resultRow, 0, len(rep.rows))
	for _, r := range rep.rows {
		out = append(out, resultRow{Fault: r.kind, Injected: r.injected, IDs: r.ids, Duplicates: r.dups, Refusals: r.refusals,
			OffClock: r.offClock, Hidden: r.hidden, Unavailable: duration(r.unavailable), Longest: duration(r.longest)})
		sum += duration(r.unavailable)
	}
	return out, sum
}

// printTable writes the table by fault, in Markdown, its columns aligned; the total's
// unavailable time is unavailable, the rows' own sum.
func printTable(w io.Writer, rows []resultRow, unavailable duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| fault\t| injected\t| IDs checked\t| duplicates\t| refusals by reason\t| IDs from a clock beyond the bound\t| of them unseen by the clock check\t| unavailable (sum)\t| longest gap\t|")
	fmt.Fprintln(tw, "|---\t|---:\t|---:\t|---:\t|---\t|---:\t|---:\t|---:\t|---:\t|")
	var tot resultRow
	round := func(d duration) time.Duration { return time.Duration(d).Round(100 * time.Millisecond) }
	for _, r := range rows {
		fmt.Fprintf(tw, "| %s\t| %d\t| %d\t| %d\t| %s\t| %d\t| %d\t| %s\t| %s\t|\n", r.Fault, r.Injected, r.IDs, r.Duplicates, reasons(r.Refusals),
			r.OffClock+r.Hidden, r.Hidden, round(r.Unavailable), round(r.Longest))
		tot.Injected += r.Injected
		tot.IDs += r.IDs
		tot.Duplicates += r.Duplicates
		tot.OffClock += r.OffClock
		tot.Hidden += r.Hidden
		tot.Longest = max(tot.Longest, r.Longest)
	}
	fmt.Fprintf(tw, "| total\t| %d\t| %d\t| %d\t| \t| %d\t| %d\t| %s\t| %s\t|\n", tot.Injected, tot.IDs, tot.Duplicates, tot.OffClock+tot.Hidden, tot.Hidden,
		round(unavailable), round(tot.Longest))
	tw.Flush()
}

// readmeBlock writes the README's block for the run: a line of its totals and verdict, then the
// table by fault.
func (res *results) readmeBlock(w io.Writer) {
	var faults, hidden int
	for _, r := range res.Rows {
		faults += r.Injected
		hidden += r.Hidden
	}
	fmt.Fprintf(w, "`go run ./tools/chaos --duration %s --seed %d` (`make chaos`; the same seed replays the schedule): %d IDs from %d process incarnations in %s (%d from generators over HTTP, %d from embedded nodes), %d faults injected, %d batches checked against their holder's fence; ",
		time.Duration(res.Duration), res.Seed, res.IDs, res.Incarnations, time.Duration(res.Elapsed).Round(time.Second),
		res.FromGenerators, res.FromNodes, faults, res.FenceChecks)
	if len(res.Failures) == 0 {
		fmt.Fprintf(w, "no duplicate, none out of order, none past its holder's fence, none from a clock beyond the bound that its discipline reported (%d from clocks stepped unseen, counted apart).\n", hidden)
	} else {
		fmt.Fprintf(w, "%d checks failed, the first: %s.\n", len(res.Failures), strings.TrimPrefix(res.Failures[0], "chaos: "))
	}
	fmt.Fprintln(w)
	printTable(w, res.Rows, res.UnavailableTotal)
}

// writeResults writes res as JSON to path, making its folder.
func writeResults(path string, res *results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// readResults reads a results file --results wrote.
func readResults(path string) (*results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(res.Rows) == 0 {
		return nil, fmt.Errorf("%s: no rows: not a chaos results file", path)
	}
	return &res, nil
}
