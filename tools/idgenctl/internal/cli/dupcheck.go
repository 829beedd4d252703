package cli

// dupcheck finds IDs that appear more than once in exported files, in memory bounded whatever the
// input size: the IDs go through an external sort (package extsort: sorted runs of --run-ids IDs
// on disk, merged at most 64 at a time), and the merge hands each ID with how many times it was
// read. Memory is one run (8 bytes an ID) plus the merge's read buffers; temporary disk is about
// the input's IDs once, in varints. The report is written as the merge finds the duplicates, so
// its memory is bounded too.
//
// Why not a partition by hash into temporary files each checked in a hash map: a partition's size
// depends on the input (one partition per 100 million IDs would still need a map of tens of
// millions of entries for a billion-ID export), so its memory bound holds only if the number of
// partitions is chosen from the input's size, which a stream on stdin does not tell. The sort's
// bound is fixed, and its merge yields duplicates in ID order, which is creation-time order.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/tools/idgenctl/internal/extsort"
	"github.com/spf13/cobra"
)

// dupcheckOpts are dupcheck's own flags.
type dupcheckOpts struct {
	*opts
	column, tmpDir string
	runIDs         int
}

func (o *opts) dupcheckCmd() *cobra.Command {
	d := &dupcheckOpts{opts: o}
	c := &cobra.Command{Use: "dupcheck FILE...", Short: "IDs seen more than once in exported files: exit 1 when any, 0 when none, 2 unreadable",
		Long: "Reads IDs, one a line (\"-\" for stdin; --column NAME for CSV files with a header), and reports every ID\n" +
			"seen more than once, decoded, grouped by region and machine number: where to look. Memory is bounded\n" +
			"whatever the input (an external sort in runs of --run-ids IDs, 8 bytes each).",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{"dupcheck FILE...: want at least one file (- for stdin)"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return d.dupcheck(cmd.Context(), args) }}
	c.Flags().StringVar(&d.column, "column", "", "CSV column holding the IDs")
	c.Flags().StringVar(&d.tmpDir, "tmp-dir", "", "folder for the sorted runs (default: the system's)")
	c.Flags().IntVar(&d.runIDs, "run-ids", extsort.DefaultRunLen, "IDs per sorted run (memory is 8 bytes each)")
	return c
}

// dupOut is one ID seen more than once.
type dupOut struct {
	ID        string `json:"id"`
	Times     int64  `json:"times"`
	CreatedAt string `json:"created_at"`
	Layout    string `json:"layout"`
	Region    string `json:"region"`
	RegionNum *int   `json:"region_number,omitempty"`
	Machine   int    `json:"machine"`
	Sequence  int    `json:"sequence"`
}

// dupGroup is where to look: one region and machine number, the times of its duplicates.
type dupGroup struct {
	Layout     string `json:"layout"`
	Region     string `json:"region"`
	RegionNum  *int   `json:"region_number,omitempty"`
	Machine    int    `json:"machine"`
	Duplicates int64  `json:"duplicate_ids"`
	First      string `json:"first_created_at"`
	Last       string `json:"last_created_at"`
	FirstID    string `json:"first_id"`
}

// dupSummary follows the duplicates.
type dupSummary struct {
	DuplicateIDs int64       `json:"duplicate_ids"`
	Files        []string    `json:"files"`
	IDsRead      int64       `json:"ids_read"`
	RegionSource string      `json:"region_source"`
	TempDiskPeak int64       `json:"temp_disk_peak_bytes"`
	WhereToLook  []*dupGroup `json:"where_to_look"`
}

// dupReport is dupcheck's output: the duplicates in ID order as the merge finds them, then the
// summary.
type dupReport struct {
	Duplicates jsonSeq[dupOut]       `json:"duplicates"`
	Summary    jsonLater[dupSummary] `json:"summary"`
}

func (o *dupcheckOpts) dupcheck(ctx context.Context, files []string) error {
	if o.runIDs < extsort.MinRunLen {
		return usagef("--run-ids must be at least %d", extsort.MinRunLen)
	}
	sc, err := o.sched()
	if err != nil {
		return err
	}
	s, err := extsort.New(extsort.Config{Dir: o.tmpDir, RunLen: o.runIDs})
	if err != nil {
		return fmt.Errorf("dupcheck: %w", err)
	}
	defer s.Close()
	add := func(id int64) error { return s.Add(ctx, id) }
	stdinUsed := false
	for _, name := range files {
		var r io.Reader
		label := name
		if name == "-" {
			if stdinUsed {
				return usageError{"dupcheck: - (stdin) given twice"}
			}
			stdinUsed, r, label = true, os.Stdin, "stdin"
		} else {
			f, err := os.Open(name)
			if err != nil {
				return inputError("%s: %v", name, errors.Unwrap(err))
			}
			defer f.Close()
			r = f
		}
		if o.column != "" {
			_, err = readCSV(r, label, o.column, add)
		} else {
			_, err = readLines(r, label, add)
		}
		if err != nil {
			return err
		}
	}

	scan := &dupScan{sorter: s, sc: sc, rn: o.names(ctx), groups: map[[3]int]*dupGroup{}}
	report := dupReport{Duplicates: jsonSeq[dupOut](scan.duplicates(ctx)), Summary: func() dupSummary { return scan.summary(files) }}
	err = o.emit(report, func(w io.Writer) {
		fmt.Fprintf(w, "%-19s  %5s  %-24s  %-14s  %7s  %8s\n", "ID", "TIMES", "CREATED AT", "REGION", "MACHINE", "SEQUENCE")
		for d, err := range scan.duplicates(ctx) {
			if err != nil {
				return
			}
			fmt.Fprintf(w, "%-19s  %5d  %-24s  %-14s  %7d  %8d\n", d.ID, d.Times, d.CreatedAt, d.Region, d.Machine, d.Sequence)
		}
		sum := scan.summary(files)
		if sum.DuplicateIDs == 0 {
			fmt.Fprintln(w, "(none)")
		}
		fmt.Fprintf(w, "\n%d IDs read, %d seen more than once (region names: %s)\n", sum.IDsRead, sum.DuplicateIDs, scan.rn.source)
		if len(sum.WhereToLook) > 0 {
			fmt.Fprintln(w, "\nwhere to look, by region and machine number:")
			fmt.Fprintf(w, "%-14s  %7s  %10s  %-24s  %-24s  %s\n", "REGION", "MACHINE", "DUPLICATES", "FROM", "TO", "NEXT")
			for _, g := range sum.WhereToLook {
				fmt.Fprintf(w, "%-14s  %7d  %10d  %-24s  %-24s  idgenctl incident %s\n", g.Region, g.Machine, g.Duplicates, g.First, g.Last, g.FirstID)
			}
		}
	})
	// The merge's own error first: the output's would only say the report was cut short.
	if scan.err != nil {
		return scan.err
	}
	if err != nil {
		return err
	}
	if scan.dups > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("dupcheck: %d IDs seen more than once", scan.dups)}
	}
	return nil
}

// dupScan decodes the IDs the merge finds more than once and groups them by region and machine.
type dupScan struct {
	sorter *extsort.Sorter
	sc     idcore.Schedule
	rn     regionNames
	groups map[[3]int]*dupGroup // by (has region, region, machine)
	dups   int64
	err    error // the merge's error, if it stopped
}

// duplicates yields every ID read more than once, in ID order, as the merge finds it. It runs the
// merge, so it is ranged over once.
func (s *dupScan) duplicates(ctx context.Context) iter.Seq2[dupOut, error] {
	return func(yield func(dupOut, error) bool) {
		stop := errors.New("stop")
		err := s.sorter.Merge(ctx, func(id, n int64) error {
			if n < 2 {
				return nil
			}
			out, err := s.add(id, n)
			if err != nil {
				return err
			}
			if !yield(out, nil) {
				return stop
			}
			return nil
		})
		if err != nil && err != stop {
			s.err = err
			yield(dupOut{}, err)
		}
	}
}

func (s *dupScan) add(id, n int64) (dupOut, error) {
	d, err := s.sc.Decode(idcore.ID(id))
	if err != nil {
		return dupOut{}, err
	}
	s.dups++
	out := dupOut{ID: d.ID.String(), Times: n, CreatedAt: d.Time.Format("2006-01-02T15:04:05.000Z"), Layout: d.Layout,
		Region: "-", Machine: d.Machine, Sequence: d.Sequence}
	key := [3]int{0, -1, d.Machine}
	if d.HasRegion {
		r := d.Region
		out.Region, out.RegionNum, key = s.rn.name(r), &r, [3]int{1, r, d.Machine}
	}
	g := s.groups[key]
	if g == nil {
		g = &dupGroup{Layout: d.Layout, Region: out.Region, RegionNum: out.RegionNum, Machine: d.Machine, First: out.CreatedAt, FirstID: out.ID}
		s.groups[key] = g
	}
	g.Duplicates++
	g.Last = out.CreatedAt // IDs come in ID order, which is time order within a machine number
	return out, nil
}

// summary is the totals and the groups, sorted by region and machine; groups are few (at most 8
// regions × 512 machines + 1,024 v1 machines).
func (s *dupScan) summary(files []string) dupSummary {
	keys := slices.SortedFunc(func(yield func([3]int) bool) {
		for k := range s.groups {
			if !yield(k) {
				return
			}
		}
	}, func(a, b [3]int) int { return slices.Compare(a[:], b[:]) })
	gs := []*dupGroup{}
	for _, k := range keys {
		gs = append(gs, s.groups[k])
	}
	return dupSummary{DuplicateIDs: s.dups, Files: files, IDsRead: s.sorter.Added(), RegionSource: s.rn.sourceWord(),
		TempDiskPeak: s.sorter.DiskPeak(), WhereToLook: gs}
}
