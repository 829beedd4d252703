// Package extsort sorts more int64 values than fit in memory: an external merge sort whose memory
// is bounded whatever the input. Values are added into a buffer of Config.RunLen values (8 bytes
// each); a full buffer is sorted and written to a temporary file as a run (delta-encoded varints,
// so a run of IDs close in time takes 2–4 bytes a value instead of 8); Merge then merges the runs,
// at most Config.FanIn at a time, and hands each distinct value with how many times it was added,
// in ascending order. Memory is the buffer plus FanIn read buffers; temporary disk is about the
// input once, in varints, plus one intermediate level while more than FanIn runs are reduced.
//
// It is written for int64 keys rather than taken from a generic external-sort library: the delta
// varints quarter the disk of IDs, and the counts at the merge are what a duplicate check needs.
package extsort

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Config configures a Sorter. Zero values take the defaults in the comments.
type Config struct {
	// Dir is where the temporary folder of runs is made. Default: os.TempDir.
	Dir string
	// RunLen is how many values are held in memory and written as one sorted run; memory is
	// 8 bytes each. Default: 4 Mi (32 MiB); at least MinRunLen.
	RunLen int
	// FanIn is how many runs are merged at once (each has a read buffer of 64 KiB). Default: 64;
	// at least 2.
	FanIn int
}

// Defaults and bounds of Config.
const (
	DefaultRunLen = 4 << 20
	MinRunLen     = 1024
	DefaultFanIn  = 64
	readBufBytes  = 64 << 10
	writeBufBytes = 1 << 20
)

// ErrBadConfig is returned by New for a RunLen or FanIn below its minimum.
var ErrBadConfig = errors.New("extsort: bad config")

// Sorter sorts the values added to it. It is not safe for concurrent use.
type Sorter struct {
	cfg      Config
	dir      string
	buf      []int64
	runs     []string
	written  int // runs written so far (names are unique within dir)
	added    int64
	diskNow  int64
	diskPeak int64
	merged   bool
}

// New makes a Sorter and its temporary folder; Close removes the folder.
func New(cfg Config) (*Sorter, error) {
	if cfg.RunLen == 0 {
		cfg.RunLen = DefaultRunLen
	}
	if cfg.FanIn == 0 {
		cfg.FanIn = DefaultFanIn
	}
	if cfg.RunLen < MinRunLen {
		return nil, fmt.Errorf("%w: RunLen %d, want at least %d", ErrBadConfig, cfg.RunLen, MinRunLen)
	}
	if cfg.FanIn < 2 {
		return nil, fmt.Errorf("%w: FanIn %d, want at least 2", ErrBadConfig, cfg.FanIn)
	}
	dir, err := os.MkdirTemp(cfg.Dir, "extsort-")
	if err != nil {
		return nil, fmt.Errorf("extsort: temporary folder: %w", err)
	}
	return &Sorter{cfg: cfg, dir: dir, buf: make([]int64, 0, cfg.RunLen)}, nil
}

// Close removes the temporary folder and every run in it.
func (s *Sorter) Close() error { return os.RemoveAll(s.dir) }

// Add adds one value. A full buffer is sorted and written as a run first; ctx is checked then.
func (s *Sorter) Add(ctx context.Context, v int64) error {
	if s.merged {
		return errors.New("extsort: Add after Merge")
	}
	s.buf = append(s.buf, v)
	s.added++
	if len(s.buf) == cap(s.buf) {
		return s.flush(ctx)
	}
	return nil
}

// Added is how many values were added.
func (s *Sorter) Added() int64 { return s.added }

// Runs is how many runs were written to disk so far, intermediate ones included.
func (s *Sorter) Runs() int { return s.written }

// DiskPeak is the most temporary disk the runs took at once, in bytes.
func (s *Sorter) DiskPeak() int64 { return s.diskPeak }

// Merge calls fn with every distinct value added, in ascending order, and how many times it was
// added; an error from fn or ctx stops it and is returned. It is called once, after the last Add.
func (s *Sorter) Merge(ctx context.Context, fn func(v, n int64) error) error {
	if s.merged {
		return errors.New("extsort: Merge called twice")
	}
	s.merged = true
	if err := s.flush(ctx); err != nil {
		return err
	}
	s.buf = nil // the merge needs only its read buffers
	if err := s.reduce(ctx); err != nil {
		return err
	}
	return s.merge(ctx, s.runs, fn)
}

func (s *Sorter) newRun() (*runWriter, error) {
	s.written++
	name := filepath.Join(s.dir, fmt.Sprintf("run-%06d", s.written))
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("extsort: %w", err)
	}
	return &runWriter{f: f, name: name, w: bufio.NewWriterSize(f, writeBufBytes)}, nil
}

// flush sorts the buffer and writes it as a run.
func (s *Sorter) flush(ctx context.Context) error {
	if len(s.buf) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	slices.Sort(s.buf)
	w, err := s.newRun()
	if err != nil {
		return err
	}
	for _, v := range s.buf {
		w.put(v)
	}
	if err := s.closeRun(w); err != nil {
		return err
	}
	s.buf = s.buf[:0]
	return nil
}

func (s *Sorter) closeRun(w *runWriter) error {
	err := w.close()
	s.diskNow += w.n
	s.diskPeak = max(s.diskPeak, s.diskNow)
	if err != nil {
		return fmt.Errorf("extsort: writing a run: %w", err)
	}
	s.runs = append(s.runs, w.name)
	return nil
}

// reduce merges runs FanIn at a time into new runs until at most FanIn remain.
func (s *Sorter) reduce(ctx context.Context) error {
	for len(s.runs) > s.cfg.FanIn {
		group := s.runs[:s.cfg.FanIn]
		s.runs = slices.Clone(s.runs[s.cfg.FanIn:])
		w, err := s.newRun()
		if err != nil {
			return err
		}
		err = s.merge(ctx, group, func(v, n int64) error {
			for range n {
				w.put(v)
			}
			return w.err
		})
		if cerr := s.closeRun(w); err == nil {
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

// merge merges runs in ascending order and calls fn with every value and its count.
func (s *Sorter) merge(ctx context.Context, runs []string, fn func(v, n int64) error) error {
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
		if v := rr.cur; n == 0 || v != cur {
			if n > 0 {
				if err := fn(cur, n); err != nil {
					return err
				}
			}
			cur, n = v, 0
		}
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
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	if n > 0 {
		return fn(cur, n)
	}
	return nil
}

// runWriter writes sorted values as varint deltas.
type runWriter struct {
	f       *os.File
	name    string
	w       *bufio.Writer
	prev    int64
	n       int64 // bytes written
	scratch [binary.MaxVarintLen64]byte
	err     error
}

func (w *runWriter) put(v int64) {
	k := binary.PutUvarint(w.scratch[:], uint64(v-w.prev)) // ascending: the difference fits a uint64
	w.prev = v
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
		return nil, fmt.Errorf("extsort: %w", err)
	}
	rr := &runReader{f: f, r: bufio.NewReaderSize(f, readBufBytes)}
	return rr, rr.next()
}

func (rr *runReader) next() error {
	d, err := binary.ReadUvarint(rr.r)
	if err == io.EOF {
		rr.done = true
		return rr.f.Close()
	}
	if err != nil {
		return fmt.Errorf("extsort: reading a sorted run back: %w", err)
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
