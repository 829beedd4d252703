package nodeout_test

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/embedded/nodeout"
)

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	w := nodeout.NewWriter(&b)
	ids := []idcore.ID{5, 6, 7, 10, 12, 13}
	for _, err := range []error{w.Holder("host/1/node-0"), w.Batch(1234, ids), w.Refused("fence"), w.Released()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := "holder host/1/node-0\nids 1234 5+3 10+1 12+2\nrefused fence\nreleased\n"; b.String() != want {
		t.Fatalf("wrote %q, want %q", b.String(), want)
	}
	var kinds []nodeout.Kind
	var got []idcore.ID
	var texts []string
	started := time.Now()
	if err := nodeout.Scan(&b, started, func(l *nodeout.Line) {
		kinds = append(kinds, l.Kind)
		texts = append(texts, l.Text)
		if l.Kind == nodeout.Batch {
			if l.FenceUnixMs != 1234 || len(l.Runs) != 3 || l.Runs[0].Last() != 7 {
				t.Errorf("batch fence %d, runs %v", l.FenceUnixMs, l.Runs)
			}
			got = l.IDs(got)
		}
		if l.Asked.Before(started) || l.Received.Before(l.Asked) {
			t.Errorf("%v: asked %v, received %v, started %v", l.Kind, l.Asked, l.Received, started)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kinds, []nodeout.Kind{nodeout.Holder, nodeout.Batch, nodeout.Refused, nodeout.Released}) {
		t.Fatalf("kinds %v", kinds)
	}
	if !slices.Equal(got, ids) || texts[0] != "host/1/node-0" || texts[2] != "fence" {
		t.Fatalf("ids %v, texts %q", got, texts)
	}
}

// TestScanDropsCutLines: a process killed while writing leaves a line without its newline, or a
// line whose runs are broken; neither is delivered.
func TestScanDropsCutLines(t *testing.T) {
	for _, in := range []string{
		"ids 9 100+5\nids 9 200+1", // no newline: "200+1" may be the start of "200+17"
		"ids 9 100+5\nids 9 200+\n",
		"ids 9 100+5\nids 9\n",
		"ids 9 100+5\nids x 200+1\n",
		"ids 9 100+5\nbogus\n",
	} {
		var n int
		if err := nodeout.Scan(strings.NewReader(in), time.Now(), func(l *nodeout.Line) {
			n += len(l.IDs(nil))
		}); err != nil {
			t.Fatal(err)
		}
		if n != 5 {
			t.Errorf("%q: %d IDs delivered, want the first line's 5", in, n)
		}
	}
}

// TestScanTimes: a batch counts as asked for at the read before the one that brought the line
// before it, and as received at the read that brought its own line.
func TestScanTimes(t *testing.T) {
	r, w := io.Pipe()
	started := time.Now()
	type seen struct{ asked, received time.Time }
	var lines []seen
	done := make(chan struct{})
	go func() {
		defer close(done)
		nodeout.Scan(r, started, func(l *nodeout.Line) { lines = append(lines, seen{l.Asked, l.Received}) })
	}()
	var writes []time.Time
	for _, s := range []string{"ids 0 1+1\n", "ids 0 2+1\n", "ids 0 3+1\n"} {
		time.Sleep(20 * time.Millisecond)
		writes = append(writes, time.Now())
		io.WriteString(w, s)
	}
	w.Close()
	<-done
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	if !lines[0].asked.Equal(started) || !lines[1].asked.Equal(started) {
		t.Errorf("the first two batches asked at %v and %v, want the start %v", lines[0].asked, lines[1].asked, started)
	}
	if !lines[2].asked.Equal(lines[0].received) {
		t.Errorf("the third batch asked at %v, want the first line's read %v", lines[2].asked, lines[0].received)
	}
	for i, l := range lines {
		if l.received.Before(writes[i]) {
			t.Errorf("line %d received at %v, before it was written at %v", i, l.received, writes[i])
		}
	}
}

// FuzzScan: any input scans without a panic, every batch delivered has runs of at least one ID,
// and a batch written by Writer reads back as written, after whatever came before it.
func FuzzScan(f *testing.F) {
	f.Add([]byte("holder h\nids 5 1+3 9+1\nrefused fence\nreleased\n"), int64(7), int64(100))
	f.Add([]byte("ids 9 100+5\nids 9 200+"), int64(0), int64(1))
	f.Fuzz(func(t *testing.T, prefix []byte, fence, first int64) {
		var b bytes.Buffer
		b.Write(prefix)
		b.WriteByte('\n')
		ids := []idcore.ID{idcore.ID(first), idcore.ID(first) + 1, idcore.ID(first) + 5}
		if err := nodeout.NewWriter(&b).Batch(fence, ids); err != nil {
			t.Fatal(err)
		}
		var last []idcore.ID
		var lastFence int64
		if err := nodeout.Scan(&b, time.Now(), func(l *nodeout.Line) {
			if l.Kind != nodeout.Batch {
				return
			}
			for _, r := range l.Runs {
				if r.N < 1 {
					t.Fatalf("a run of %d IDs", r.N)
				}
			}
			last, lastFence = l.IDs(last[:0]), l.FenceUnixMs
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(last, ids) || lastFence != fence {
			t.Fatalf("read back %v (fence %d), wrote %v (fence %d)", last, lastFence, ids, fence)
		}
	})
}
