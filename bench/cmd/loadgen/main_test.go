package main

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// The recorders give the percentiles loadgen gave when it kept every latency as a time.Duration:
// both are in whole microseconds.
func TestRecordersKeepPercentiles(t *testing.T) {
	recs := make([]recorder, 4)
	var all []time.Duration
	for i := range 10000 {
		d := time.Duration(rand.Int64N(int64(50 * time.Millisecond)))
		all = append(all, d)
		recs[i%len(recs)].add(d)
	}
	slices.Sort(all)
	lat := merged(recs)
	if len(lat) != len(all) {
		t.Fatalf("%d latencies merged, want %d", len(lat), len(all))
	}
	for _, p := range []float64{0, 0.5, 0.99, 1} {
		i := int(p * float64(len(all)-1))
		if got, want := float64(lat[i])/1000, float64(all[i].Microseconds())/1000; got != want {
			t.Errorf("p%v: %v ms, want %v ms", p*100, got, want)
		}
	}
}

func TestRecorderClampsLongLatencies(t *testing.T) {
	var r recorder
	r.add(time.Hour)
	if r.us[0] != 1<<31-1 {
		t.Fatalf("an hour recorded as %d µs", r.us[0])
	}
}

func TestCPUWait(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("schedstat is Linux's")
	}
	if w := cpuWait(); w < 0 {
		t.Fatal("no CPU wait read from /proc/self/task/*/schedstat")
	}
}
