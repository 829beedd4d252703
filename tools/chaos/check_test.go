package main

import (
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

func TestCheckFindsPlantedDuplicate(t *testing.T) {
	t0 := time.Now()
	a := &series{name: "dynamo/gen-1#1", slot: "dynamo/gen-1"}
	b := &series{name: "dynamo/idproc-2#3", slot: "dynamo/idproc-2"}
	for i := range 1000 {
		a.add(t0.Add(time.Duration(i)*time.Millisecond), []idcore.ID{idcore.ID(2*i + 1)})
		b.add(t0.Add(time.Duration(i)*time.Millisecond), []idcore.ID{idcore.ID(100_000 + 2*i)})
	}
	windows := []window{{kind: "none", start: t0}, {kind: "kill9-restart", start: t0.Add(500 * time.Millisecond)}}

	clean := check([]*series{a, b}, windows)
	if len(clean.dups) != 0 || len(clean.disorders) != 0 || clean.total != 2000 {
		t.Fatalf("clean run: %d duplicates, disorders %v, %d ids", len(clean.dups), clean.disorders, clean.total)
	}

	// A third process returns two IDs a already returned (5 and 777), in increasing order, so
	// only uniqueness is broken.
	c := &series{name: "sqlite/gen-3#1", slot: "sqlite/gen-3"}
	c.add(t0.Add(900*time.Millisecond), []idcore.ID{5, 777})
	rep := check([]*series{a, b, c}, windows)
	if len(rep.dups) != 2 {
		t.Fatalf("found %d duplicates, want 2 (ids 5 and 777)", len(rep.dups))
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

func TestCheckFindsDisorder(t *testing.T) {
	s := &series{name: "sqlite/idproc-1#1", slot: "sqlite/idproc-1"}
	s.add(time.Now(), []idcore.ID{10, 20, 20})
	if rep := check([]*series{s}, nil); len(rep.disorders) != 1 || len(rep.dups) != 1 {
		t.Fatalf("disorders %v, duplicates %d: want one of each", rep.disorders, len(rep.dups))
	}
}
