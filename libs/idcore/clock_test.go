package idcore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

func TestSystemClockTracksWallClock(t *testing.T) {
	c := idcore.SystemClock()
	for range 2000 {
		before := time.Now()
		got := c.Now()
		after := time.Now()
		// Now may lag a step by up to WallRefresh; without steps it lies between the two reads.
		if got.Before(before.Add(-idcore.WallRefresh)) || got.After(after.Add(time.Millisecond)) {
			t.Fatalf("Now = %v, outside [%v, %v]", got, before, after)
		}
	}
}

func TestSystemClockSleep(t *testing.T) {
	c := idcore.SystemClock()
	for _, d := range []time.Duration{50 * time.Microsecond, 200 * time.Microsecond, 900 * time.Microsecond, 5 * time.Millisecond} {
		t0 := time.Now()
		if err := c.Sleep(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(t0); got < d {
			t.Errorf("Sleep(%v) returned after %v", d, got)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Sleep = %v", err)
	}
}

func TestKernelHealthReads(t *testing.T) {
	kc, err := idcore.KernelHealth().ReadClock()
	if err != nil {
		t.Fatalf("adjtimex: %v", err)
	}
	t.Logf("kernel clock: synchronized=%v estimated_error=%v max_error=%v", kc.Synchronized, kc.EstimatedError, kc.MaxError)
	if kc.MaxError < 0 || kc.EstimatedError < 0 {
		t.Fatalf("negative error bounds: %+v", kc)
	}
}

func TestParseClockCheck(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want idcore.ClockCheck
		ok   bool
	}{{"strict", idcore.ClockStrict, true}, {"warn", idcore.ClockWarn, true}, {"off", 0, false}, {"", 0, false}} {
		got, err := idcore.ParseClockCheck(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseClockCheck(%q) = %v, %v", tt.in, got, err)
		}
	}
}
