package main

import (
	"slices"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/embedded/nodeout"
)

// one is a batch of single IDs as runs.
func one(ids ...int64) []nodeout.Run {
	var out []nodeout.Run
	for _, id := range ids {
		out = append(out, nodeout.Run{First: idcore.ID(id), N: 1})
	}
	return out
}

// idAt is an ID made at t (v2, machine 0, sequence seq).
func idAt(t time.Time, seq int64) int64 {
	return (t.UnixMilli()-idcore.EpochUnixMs)<<idcore.TimestampShift | seq
}

func TestCheckFindsPlantedDuplicate(t *testing.T) {
	t0 := time.Now()
	a := &series{name: "dynamo/gen-1#1", slot: "dynamo/gen-1"}
	b := &series{name: "dynamo/node-2#3", slot: "dynamo/node-2"}
	for i := range 1000 {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		a.add(at, at, one(int64(2*i+1)), 0)
		b.add(at, at, one(int64(100_000+2*i)), 0)
	}
	windows := []window{{kind: "none", start: t0}, {kind: "kill9-restart", start: t0.Add(500 * time.Millisecond)}}

	clean := check([]*series{a, b}, windows, nil)
	if len(clean.dups) != 0 || len(clean.disorders) != 0 || clean.total != 2000 {
		t.Fatalf("clean run: %d duplicates, disorders %v, %d ids", len(clean.dups), clean.disorders, clean.total)
	}

	// A third process returns two IDs a already returned (5 and 777), in increasing order, so
	// only uniqueness is broken.
	c := &series{name: "sqlite/gen-3#1", slot: "sqlite/gen-3"}
	at := t0.Add(900 * time.Millisecond)
	c.add(at, at, one(5, 777), 0)
	rep := check([]*series{a, b, c}, windows, nil)
	if len(rep.dups) != 2 || rep.dupIDs != 2 {
		t.Fatalf("found %d duplicates (%d IDs), want 2 (ids 5 and 777)", len(rep.dups), rep.dupIDs)
	}
	d := rep.dups[0]
	if d.id != 5 || !((d.a == a.name && d.b == c.name) || (d.a == c.name && d.b == a.name)) {
		t.Fatalf("first duplicate %d from %s and %s, want 5 from %s and %s", d.id, d.a, d.b, a.name, c.name)
	}
	var inWindow int
	for _, r := range rep.rows {
		if r.kind == "kill9-restart" {
			inWindow = r.dups
		}
	}
	if inWindow != 2 {
		t.Fatalf("kill9-restart row shows %d duplicates, want 2", inWindow)
	}
}

// TestCheckRuns: runs of consecutive IDs are checked as the IDs they stand for.
func TestCheckRuns(t *testing.T) {
	t0 := time.Now()
	a := &series{name: "a#1", slot: "a"}
	b := &series{name: "b#1", slot: "b"}
	a.add(t0, t0, []nodeout.Run{{First: 1000, N: 500}, {First: 2000, N: 500}}, 0) // 1000-1499, 2000-2499
	a.add(t0, t0, []nodeout.Run{{First: 2500, N: 100}}, 0)                        // continues the run: 2000-2599
	b.add(t0, t0, []nodeout.Run{{First: 1500, N: 500}, {First: 2600, N: 10}}, 0)  // fits in the gaps
	if rep := check([]*series{a, b}, nil, nil); len(rep.dups) != 0 || rep.total != 1610 || len(rep.disorders) != 0 {
		t.Fatalf("clean: %d duplicates, %d IDs, disorders %v", len(rep.dups), rep.total, rep.disorders)
	}
	if len(a.runs) != 2 {
		t.Fatalf("a has %d runs, want 2 (consecutive batches merge)", len(a.runs))
	}
	c := &series{name: "c#1", slot: "c"}
	c.add(t0, t0, []nodeout.Run{{First: 2590, N: 20}}, 0) // 2590-2609: 10 IDs of a, 10 of b
	rep := check([]*series{a, b, c}, nil, nil)
	if len(rep.dups) != 2 || rep.dups[0].id != 2590 || rep.dupIDs != 20 {
		t.Fatalf("duplicates %+v (%d IDs), want two overlaps from 2590, 20 IDs", rep.dups, rep.dupIDs)
	}
}

func TestCheckFindsDisorder(t *testing.T) {
	s := &series{name: "sqlite/node-1#1", slot: "sqlite/node-1"}
	now := time.Now()
	s.add(now, now, one(10, 20, 20), 0)
	if rep := check([]*series{s}, nil, nil); len(rep.disorders) != 1 || !rep.failed() {
		t.Fatalf("disorders %v: want one", rep.disorders)
	}
}

func TestCheckFence(t *testing.T) {
	now := time.Now()
	id := idAt(now, 0)
	s := &series{name: "n#1", slot: "n"}
	s.add(now, now, one(id), now.UnixMilli()+1)
	if rep := check([]*series{s}, nil, nil); len(rep.fences) != 0 {
		t.Fatalf("below the fence: %v", rep.fences)
	}
	s.add(now, now, one(id+1), now.UnixMilli())
	if rep := check([]*series{s}, nil, nil); len(rep.fences) != 1 || !rep.failed() {
		t.Fatalf("at the fence: %v", rep.fences)
	}
}

// TestCheckClock: an ID whose timestamp lies outside the time it was asked for and received is
// from a clock beyond the bound; it fails the run unless the slot's clock was stepped unseen.
func TestCheckClock(t *testing.T) {
	now := time.Now()
	windows := []window{{kind: "none", start: now.Add(-time.Hour)}}
	s := &series{name: "g#1", slot: "g"}
	s.add(now, now.Add(time.Millisecond), one(idAt(now, 0), idAt(now.Add(time.Millisecond), 0)), 0)
	if rep := check([]*series{s}, windows, nil); rep.failed() {
		t.Fatalf("on time: %v", rep.offClock)
	}
	ahead := now.Add(time.Second)
	s.add(now, now.Add(2*time.Millisecond), one(idAt(ahead, 0)), 0)
	rep := check([]*series{s}, windows, nil)
	if len(rep.offClock) != 1 || !rep.failed() || rep.rows[0].offClock != 1 {
		t.Fatalf("a second ahead: %v, rows %+v", rep.offClock, rep.rows[0])
	}
	hidden := []hiddenStep{{slot: "g", start: now, end: now.Add(time.Second)}}
	rep = check([]*series{s}, windows, hidden)
	if rep.failed() || rep.rows[0].hidden != 1 {
		t.Fatalf("a second ahead, stepped unseen: failed %v, rows %+v", rep.failed(), rep.rows[0])
	}
}

func TestParseIDs(t *testing.T) {
	runs, ok := parseIDs([]byte(`{"ids":["5","6","7","10","11"]}`+"\n"), nil)
	if !ok || !slices.Equal(runs, []nodeout.Run{{First: 5, N: 3}, {First: 10, N: 2}}) {
		t.Fatalf("parseIDs = %v, %v", runs, ok)
	}
	for _, bad := range []string{`{"ids":["5",`, `{"error":"x"}`, `{"ids":["x"]}`} {
		if _, ok := parseIDs([]byte(bad), nil); ok {
			t.Errorf("parseIDs(%s) accepted", bad)
		}
	}
}
