// Package nodeout is the stdout protocol of the idnode command (libs/idcore/embedded/idnode), the
// embedded node that the embedded package's fault tests and the chaos runner start, freeze, kill
// and restart: Writer writes it, Scan reads it. One line each:
//
//	holder NAME              a node started under the holder name NAME
//	ids FENCE LO+N LO+N …    a batch: the IDs LO, LO+1, … LO+N-1 of each run, in the order issued;
//	                         FENCE is the Unix ms fence of the number the batch's IDs carry, read
//	                         right after the batch (0 when it is no longer held)
//	refused REASON           the node refused to issue (idcore.Reason), printed when the reason changes
//	released                 the node was closed and gave its number back
//
// A line cut short (the process killed in the middle of writing it) is dropped by Scan: the IDs
// in it were never delivered.
package nodeout

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// Run is the IDs First, First+1, … First+N-1.
type Run struct {
	First idcore.ID
	N     int
}

// Last is the run's last ID.
func (r Run) Last() idcore.ID { return r.First + idcore.ID(r.N-1) }

// Runs appends ids to dst as runs of consecutive IDs.
func Runs(dst []Run, ids []idcore.ID) []Run {
	for _, id := range ids {
		if n := len(dst); n > 0 && dst[n-1].First+idcore.ID(dst[n-1].N) == id {
			dst[n-1].N++
			continue
		}
		dst = append(dst, Run{First: id, N: 1})
	}
	return dst
}

// Writer writes the protocol, flushing after every line so that a reader sees each batch as soon
// as it is issued. It is not safe for concurrent use.
type Writer struct {
	w    *bufio.Writer
	line []byte
	runs []Run
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

// Holder writes "holder NAME".
func (w *Writer) Holder(name string) error { return w.text("holder", name) }

// Refused writes "refused REASON".
func (w *Writer) Refused(reason string) error { return w.text("refused", reason) }

// Released writes "released".
func (w *Writer) Released() error { return w.text("released", "") }

// Batch writes "ids FENCE LO+N …" for ids, in the order given.
func (w *Writer) Batch(fenceUnixMs int64, ids []idcore.ID) error {
	w.runs = Runs(w.runs[:0], ids)
	w.line = append(w.line[:0], "ids "...)
	w.line = strconv.AppendInt(w.line, fenceUnixMs, 10)
	for _, r := range w.runs {
		w.line = append(w.line, ' ')
		w.line = strconv.AppendInt(w.line, int64(r.First), 10)
		w.line = append(w.line, '+')
		w.line = strconv.AppendInt(w.line, int64(r.N), 10)
	}
	return w.flush()
}

func (w *Writer) text(kind, s string) error {
	w.line = append(w.line[:0], kind...)
	if s != "" {
		w.line = append(w.line, ' ')
		w.line = append(w.line, s...)
	}
	return w.flush()
}

func (w *Writer) flush() error {
	w.line = append(w.line, '\n')
	if _, err := w.w.Write(w.line); err != nil {
		return err
	}
	return w.w.Flush()
}

// Kind is what a line says.
type Kind uint8

// The kinds of line.
const (
	Holder Kind = iota + 1
	Batch
	Refused
	Released
)

// Line is one line read by Scan.
type Line struct {
	Kind Kind
	// Text is the holder name (Holder) or the reason (Refused).
	Text string
	// FenceUnixMs and Runs: a Batch's fence and IDs. Runs is reused for the next line: copy what
	// is kept.
	FenceUnixMs int64
	Runs        []Run
	// Asked is the latest moment the batch is known to have been asked for, and Received when its
	// line was read (for the other kinds, Asked is the moment before the line was written).
	Asked, Received time.Time
}

// IDs appends the IDs of a Batch line's runs to dst.
func (l *Line) IDs(dst []idcore.ID) []idcore.ID {
	for _, r := range l.Runs {
		for i := range r.N {
			dst = append(dst, r.First+idcore.ID(i))
		}
	}
	return dst
}

// Scan reads the protocol from r until it ends, calling fn for each whole line, and returns the
// read error (nil at the end of r). started is when the process was started.
//
// The node issues its next batch after writing a line, so a batch was asked for when the line
// before it was written. That moment is known only as lying between two reads of r: the line
// before was written after the read that preceded the read that brought it (a read takes every
// byte there is). A batch therefore counts as asked for at that earlier read, and as received at
// the read that brought its own line: a reader that falls behind (a busy machine) reads many
// lines at once without making their IDs look older than their batches.
func Scan(r io.Reader, started time.Time, fn func(*Line)) error {
	tr := &timedReader{r: r, start: started}
	sc := bufio.NewScanner(tr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sc.Split(wholeLines)
	var l Line
	var offset int64
	asked := started // the read before the one that brought the previous line
	for sc.Scan() {
		offset += int64(len(sc.Bytes())) + 1
		before, now := tr.at(offset)
		l = Line{Runs: l.Runs[:0], Asked: asked, Received: now}
		if parse(sc.Text(), &l) {
			fn(&l)
		}
		asked = before
	}
	return sc.Err()
}

// wholeLines splits at newlines and drops what follows the last one: a line cut short.
func wholeLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF {
		return len(data), nil, nil
	}
	return 0, nil, nil
}

// parse reads one line into l; it reports false for a line it does not know or one cut short.
func parse(text string, l *Line) bool {
	kind, rest, _ := strings.Cut(text, " ")
	switch kind {
	case "holder":
		l.Kind, l.Text = Holder, rest
		return rest != ""
	case "refused":
		l.Kind, l.Text = Refused, rest
		return rest != ""
	case "released":
		l.Kind = Released
		return true
	case "ids":
		l.Kind = Batch
		f := strings.Fields(rest)
		if len(f) < 2 {
			return false
		}
		fence, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return false
		}
		l.FenceUnixMs = fence
		for _, r := range f[1:] {
			lo, n, found := strings.Cut(r, "+")
			a, err1 := strconv.ParseInt(lo, 10, 64)
			b, err2 := strconv.Atoi(n)
			if !found || err1 != nil || err2 != nil || b < 1 {
				return false
			}
			l.Runs = append(l.Runs, Run{First: idcore.ID(a), N: b})
		}
		return true
	}
	return false
}

// timedReader notes when each read of the pipe returned and where its bytes end.
type timedReader struct {
	r     io.Reader
	start time.Time
	mu    sync.Mutex
	reads []timedRead
	total int64
}

type timedRead struct {
	end int64 // the offset just past the read's bytes
	at  time.Time
}

func (t *timedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.mu.Lock()
		t.total += int64(n)
		t.reads = append(t.reads, timedRead{t.total, time.Now()})
		t.mu.Unlock()
	}
	return n, err
}

// at returns when the read that brought the byte before offset returned, and when the read before
// it did (the start for the first), dropping the reads no later line can need.
func (t *timedReader) at(offset int64) (before, got time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := 0
	for i < len(t.reads)-1 && t.reads[i].end < offset {
		i++
	}
	got, before = t.reads[i].at, t.start
	if i > 0 {
		before = t.reads[i-1].at
		t.reads = t.reads[i-1:]
	}
	return before, got
}
