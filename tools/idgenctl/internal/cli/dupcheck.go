package cli

// dupcheck finds IDs that appear more than once in exported files, in memory bounded whatever the
// input size: an external sort. IDs are read into a buffer of --run-ids IDs (8 bytes each); a full
// buffer is sorted and written to a temporary file as a run (delta-encoded varints, so a run of
// IDs close in time takes 2–4 bytes an ID instead of 8); at the end the runs are merged, at most
// maxFanIn at a time, and equal neighbours counted. Memory is the buffer plus maxFanIn read
// buffers, whatever the input; temporary disk is about the input's IDs once, in varints.
//
// Why not a partition by hash into temporary files each checked in a hash map: a partition's size
// depends on the input (one partition per 100 million IDs would still need a map of tens of
// millions of entries for a billion-ID export), so its memory bound holds only if the number of
// partitions is chosen from the input's size, which a stream on stdin does not tell. The sort's
// bound is fixed, and its merge yields duplicates in ID order, which is creation-time order.

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/spf13/cobra"
)

const (
	defaultRunIDs = 4 << 20 // 32 MiB of IDs per sorted run
	maxFanIn      = 64      // runs merged at once
	runBufBytes   = 64 << 10
)

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
	firstMs    int64
	lastMs     int64
}

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

// sorter holds the current run in memory and the runs written so far.
type sorter struct {
	ctx      context.Context
	dir      string
	buf      []int64
	runs     []string
	diskNow  int64
	diskPeak int64
	nRuns    int
}

func (s *sorter) add(id int64) error {
	s.buf = append(s.buf, id)
	if len(s.buf) == cap(s.buf) {
		return s.flush()
	}
	return nil
}

func (s *sorter) newRun() (*os.File, string, error) {
	s.nRuns++
	name := filepath.Join(s.dir, fmt.Sprintf("run-%06d", s.nRuns))
	f, err := os.Create(name)
	return f, name, err
}

func (s *sorter) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	if err := s.ctx.Err(); err != nil {
		return err
	}
	slices.Sort(s.buf)
	f, name, err := s.newRun()
	if err != nil {
		return err
	}
	w := newRunWriter(f)
	for _, id := range s.buf {
		w.put(id)
	}
	if err := s.closeRun(w, name); err != nil {
		return err
	}
	s.buf = s.buf[:0]
	return nil
}

func (s *sorter) closeRun(w *runWriter, name string) error {
	err := w.close()
	s.diskNow += w.n
	s.diskPeak = max(s.diskPeak, s.diskNow)
	if err == nil {
		s.runs = append(s.runs, name)
	}
	return err
}

// runWriter writes sorted IDs as varint deltas.
type runWriter struct {
	f       *os.File
	w       *bufio.Writer
	prev    int64
	n       int64
	scratch [binary.MaxVarintLen64]byte
	err     error
}

func newRunWriter(f *os.File) *runWriter {
	return &runWriter{f: f, w: bufio.NewWriterSize(f, 1<<20)}
}

func (w *runWriter) put(id int64) {
	k := binary.PutUvarint(w.scratch[:], uint64(id-w.prev))
	w.prev = id
	w.n += int64(k)
	if _, err := w.w.Write(w.scratch[:k]); err != nil && w.err == nil {
		w.err = err
	}
}

func (w *runWriter) close() error {
	if err := w.w.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

// runReader reads one run back.
type runReader struct {
	f    *os.File
	r    *bufio.Reader
	cur  int64
	done bool
}

func openRun(name string) (*runReader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	rr := &runReader{f: f, r: bufio.NewReaderSize(f, runBufBytes)}
	return rr, rr.next()
}

func (rr *runReader) next() error {
	d, err := binary.ReadUvarint(rr.r)
	if err == io.EOF {
		rr.done = true
		return rr.f.Close()
	}
	if err != nil {
		return fmt.Errorf("dupcheck: reading a sorted run back: %w", err)
	}
	rr.cur += int64(d)
	return nil
}

type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return h[i].cur < h[j].cur }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// merge merges runs in ID order and calls each with every ID and how many times it appears.
func (s *sorter) merge(runs []string, each func(id, n int64) error) error {
	h := make(runHeap, 0, len(runs))
	defer func() {
		for _, rr := range h {
			rr.f.Close()
		}
	}()
	for _, name := range runs {
		rr, err := openRun(name)
		if err != nil {
			return err
		}
		if !rr.done {
			h = append(h, rr)
		}
	}
	heap.Init(&h)
	var cur, n int64
	count := 0
	for h.Len() > 0 {
		rr := h[0]
		id := rr.cur
		if n > 0 && id != cur {
			if err := each(cur, n); err != nil {
				return err
			}
			n = 0
		}
		cur = id
		n++
		if err := rr.next(); err != nil {
			return err
		}
		if rr.done {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
		if count++; count&(1<<20-1) == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
	}
	if n > 0 {
		return each(cur, n)
	}
	return nil
}

// reduce merges runs maxFanIn at a time until at most maxFanIn remain.
func (s *sorter) reduce() error {
	for len(s.runs) > maxFanIn {
		group := s.runs[:maxFanIn]
		rest := slices.Clone(s.runs[maxFanIn:])
		f, name, err := s.newRun()
		if err != nil {
			return err
		}
		w := newRunWriter(f)
		err = s.merge(group, func(id, n int64) error {
			for range n {
				w.put(id)
			}
			return w.err
		})
		s.runs = rest
		if cerr := s.closeRun(w, name); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		for _, g := range group {
			if fi, err := os.Stat(g); err == nil {
				s.diskNow -= fi.Size()
			}
			_ = os.Remove(g)
		}
	}
	return nil
}

// inputError is unreadable input: exit 2, naming the file and line.
func inputError(format string, a ...any) error {
	return exitError{code: 2, msg: "dupcheck: " + fmt.Sprintf(format, a...)}
}

// parseID parses a decimal ID from bytes without allocating: digits only, at most 2^63−1.
func parseID(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

func quoteShort(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%q…", b[:40])
	}
	return fmt.Sprintf("%q", b)
}

// readLines feeds one ID per line (blank lines skipped) to add.
func readLines(r io.Reader, file string, add func(int64) error) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var line, n int64
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return n, inputError("%s:%d: line longer than 1 MiB: not one ID per line (CSV needs --column NAME)", file, line+1)
		}
		if len(b) > 0 {
			line++
			t := trimSpace(b)
			if len(t) > 0 {
				id, ok := parseID(t)
				if !ok {
					hint := ""
					if strings.Contains(string(t), ",") {
						hint = " (CSV needs --column NAME)"
					}
					return n, inputError("%s:%d: not an ID: %s%s", file, line, quoteShort(t), hint)
				}
				if err := add(id); err != nil {
					return n, err
				}
				n++
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, inputError("%s:%d: %v", file, line+1, err)
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// readCSV feeds the IDs of column to add; the first record is the header.
func readCSV(r io.Reader, file, column string, add func(int64) error) (int64, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return 0, inputError("%s:1: empty file: no header naming column %q", file, column)
	}
	if err != nil {
		return 0, inputError("%s: %v", file, err)
	}
	col := -1
	var names []string
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		names = append(names, h)
		if h == column {
			col = i
		}
	}
	if col < 0 {
		return 0, inputError("%s:1: no column %q in the header (columns: %s)", file, column, strings.Join(names, ", "))
	}
	var n int64
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return n, nil
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return n, inputError("%s:%d: column %d: %v", file, pe.Line, pe.Column, pe.Err)
		}
		if err != nil {
			return n, inputError("%s: %v", file, err)
		}
		line, _ := cr.FieldPos(0)
		if col >= len(rec) {
			return n, inputError("%s:%d: %d fields, no column %q", file, line, len(rec), column)
		}
		v := strings.TrimSpace(rec[col])
		id, ok := parseID([]byte(v))
		if !ok {
			line, _ = cr.FieldPos(col)
			return n, inputError("%s:%d: column %q is not an ID: %s", file, line, column, quoteShort([]byte(v)))
		}
		if err := add(id); err != nil {
			return n, err
		}
		n++
	}
}

func (o *opts) dupcheckCmd() *cobra.Command {
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
		RunE: func(cmd *cobra.Command, args []string) error { return o.dupcheck(cmd.Context(), args) }}
	c.Flags().StringVar(&o.column, "column", "", "CSV column holding the IDs")
	c.Flags().StringVar(&o.tmpDir, "tmp-dir", "", "folder for the sorted runs (default: the system's)")
	c.Flags().IntVar(&o.runIDs, "run-ids", defaultRunIDs, "IDs per sorted run (memory is 8 bytes each)")
	return c
}

func (o *opts) dupcheck(ctx context.Context, files []string) error {
	if o.runIDs < 1024 {
		return usageError{"--run-ids must be at least 1024"}
	}
	sc, err := o.sched()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(o.tmpDir, "idgenctl-dupcheck-")
	if err != nil {
		return fmt.Errorf("dupcheck: temporary folder: %w", err)
	}
	defer os.RemoveAll(dir)
	s := &sorter{ctx: ctx, dir: dir, buf: make([]int64, 0, o.runIDs)}
	var total int64
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
		var n int64
		if o.column != "" {
			n, err = readCSV(r, label, o.column, s.add)
		} else {
			n, err = readLines(r, label, s.add)
		}
		total += n
		if err != nil {
			return err
		}
	}
	if err := s.flush(); err != nil {
		return err
	}
	s.buf = nil // the merge needs only its read buffers
	if err := s.reduce(); err != nil {
		return err
	}

	rn := o.names(ctx)
	groups := map[[3]int]*dupGroup{}
	var order [][3]int
	var dups int64
	asJSON := o.output == "json"
	w := bufio.NewWriter(o.stdout)
	if asJSON {
		fmt.Fprint(w, "{\n  \"duplicates\": [")
	} else {
		fmt.Fprintf(w, "%-19s  %5s  %-24s  %-14s  %7s  %8s\n", "ID", "TIMES", "CREATED AT", "REGION", "MACHINE", "SEQUENCE")
	}
	err = s.merge(s.runs, func(id, n int64) error {
		if n < 2 {
			return nil
		}
		dups++
		d, err := sc.Decode(idcore.ID(id))
		if err != nil {
			return err
		}
		out := dupOut{ID: d.ID.String(), Times: n, CreatedAt: d.Time.Format("2006-01-02T15:04:05.000Z"), Layout: d.Layout,
			Region: "-", Machine: d.Machine, Sequence: d.Sequence}
		key := [3]int{0, -1, d.Machine}
		if d.HasRegion {
			r := d.Region
			out.Region, out.RegionNum, key = rn.name(r), &r, [3]int{1, r, d.Machine}
		}
		g := groups[key]
		if g == nil {
			g = &dupGroup{Layout: d.Layout, Region: out.Region, RegionNum: out.RegionNum, Machine: d.Machine,
				First: out.CreatedAt, FirstID: out.ID, firstMs: d.Timestamp}
			groups[key] = g
			order = append(order, key)
		}
		g.Duplicates++
		g.Last, g.lastMs = out.CreatedAt, d.Timestamp
		if asJSON {
			b, _ := json.Marshal(out)
			sep := ","
			if dups == 1 {
				sep = ""
			}
			fmt.Fprintf(w, "%s\n    %s", sep, b)
		} else {
			fmt.Fprintf(w, "%-19s  %5d  %-24s  %-14s  %7d  %8d\n", out.ID, n, out.CreatedAt, out.Region, out.Machine, out.Sequence)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Groups are few (at most 8 regions × 512 machines + 1,024 v1 machines): sorted by region, machine.
	slices.SortFunc(order, func(a, b [3]int) int { return slices.Compare(a[:], b[:]) })
	gs := []*dupGroup{}
	for _, k := range order {
		gs = append(gs, groups[k])
	}
	if asJSON {
		b, _ := json.Marshal(map[string]any{"ids_read": total, "duplicate_ids": dups, "files": files,
			"region_source": rn.sourceWord(), "where_to_look": gs, "temp_disk_peak_bytes": s.diskPeak})
		fmt.Fprintf(w, "\n  ],\n  \"summary\": %s\n}\n", b)
	} else {
		if dups == 0 {
			fmt.Fprintln(w, "(none)")
		}
		fmt.Fprintf(w, "\n%d IDs read, %d seen more than once (region names: %s)\n", total, dups, rn.source)
		if len(gs) > 0 {
			fmt.Fprintln(w, "\nwhere to look, by region and machine number:")
			fmt.Fprintf(w, "%-14s  %7s  %10s  %-24s  %-24s  %s\n", "REGION", "MACHINE", "DUPLICATES", "FROM", "TO", "NEXT")
			for _, g := range gs {
				fmt.Fprintf(w, "%-14s  %7d  %10d  %-24s  %-24s  idgenctl incident %s\n", g.Region, g.Machine, g.Duplicates, g.First, g.Last, g.FirstID)
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if dups > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("dupcheck: %d IDs seen more than once", dups)}
	}
	return nil
}
