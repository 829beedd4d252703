package main

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestPlanReplaysSeed: a seed gives the schedule it gave before the faults were types of their
// own (the kinds, targets, durations and offsets of a run of seed 1796127255028335667, 1 min, 14
// processes in two groups), and the same schedule every time.
func TestPlanReplaysSeed(t *testing.T) {
	const seed = 1796127255028335667
	got := plan(seed, time.Minute, 14, 2)
	want := []string{
		"store-kill9 &{down:4301",                          // ns: 4.302 s
		"clock-within &{target:5 offset:-4192865 dur:4007", // dynamo/node-2
		"quarantine-lift &{group:1 pick:",                  // sqlite
		"restore-backup &{group:0}",
		"fence-restore &{group:0}",
		"other-rules &{group:1}",
		"clock-step-hidden &{beyond:{target:4 offset:-613006893 dur:3947", // dynamo/node-1
		"clock-beyond &{beyond:{target:5 offset:-604141337 dur:2803",
	}
	if len(got) != len(want) {
		t.Fatalf("%d faults, want %d: %v", len(got), len(want), describe(got))
	}
	for i, f := range describe(got) {
		if len(f) < len(want[i]) || f[:len(want[i])] != want[i] {
			t.Errorf("fault %d is %s, want %s…", i, f, want[i])
		}
	}
	if again := describe(plan(seed, time.Minute, 14, 2)); !slices.Equal(again, describe(got)) {
		t.Fatalf("the same seed planned %v, then %v", describe(got), again)
	}
	if other := describe(plan(seed+1, time.Minute, 14, 2)); slices.Equal(other, describe(got)) {
		t.Fatalf("seeds %d and %d planned the same schedule", seed, seed+1)
	}
}

func describe(s []scheduled) []string {
	out := make([]string, len(s))
	for i, f := range s {
		out[i] = fmt.Sprintf("%s %+v", f.Name(), f.Fault)
	}
	return out
}

// TestPlanBounds: a long schedule has every kind, in rounds; the durations stay within what
// each kind promises (a short store outage below the outage bound, a short freeze below the
// lease); restores take the groups in turn, dynalite's first; nothing runs into the last 5 s.
func TestPlanBounds(t *testing.T) {
	const duration = 10 * time.Minute
	s := plan(42, duration, 14, 2)
	count := map[string]int{}
	restores := 0
	for i, f := range s {
		count[f.Name()]++
		if i > 0 && f.at <= s[i-1].at {
			t.Fatalf("fault %d at %v, after %v", i, f.at, s[i-1].at)
		}
		switch f := f.Fault.(type) {
		case *storeStop:
			if !f.long && f.dur >= outageBound || f.long && f.dur <= leaseLen-margin {
				t.Errorf("%s for %v", f.Name(), f.dur)
			}
		case *sigstop:
			if !f.long && f.dur >= leaseLen || f.long && f.dur <= leaseLen {
				t.Errorf("%s for %v", f.Name(), f.dur)
			}
		case *clockWithin:
			if abs(f.offset) > clockBound {
				t.Errorf("clock-within by %v", f.offset)
			}
		case *restoreBackup:
			if f.group != restores%2 {
				t.Errorf("restore %d of group %d", restores, f.group)
			}
			restores++
		}
	}
	if last := s[len(s)-1].at; last > duration-5*time.Second {
		t.Errorf("the last fault starts at %v", last)
	}
	for _, k := range faultKinds[1:] {
		if count[k] < 5 {
			t.Errorf("%s planned %d times in %v", k, count[k], duration)
		}
	}
}
