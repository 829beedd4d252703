// Package clocktest provides a controllable clock and clock-health source for tests of idcore
// and of the packages built on it. Nothing here sleeps for real.
package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// Clock is a fake idcore.Clock. Step moves the wall clock alone, as a clock step does; Advance
// moves wall and monotonic time together, as time passing does. What Sleep does depends on the
// constructor: NewClock's Sleep advances the clock by the duration asked for, at once (for code
// that waits for the clock to catch up); NewManualClock's Sleep blocks until Advance has moved
// the monotonic clock to its end (for loops and timers, whose test decides when time passes).
type Clock struct {
	mu      sync.Mutex
	wall    time.Time
	mono    time.Duration
	sleeps  int
	manual  bool
	waiters []*waiter // blocked Sleeps of a manual clock
}

type waiter struct {
	until time.Duration // monotonic
	wake  chan struct{}
}

var _ idcore.Clock = (*Clock)(nil)

// NewClock returns a fake clock reading start whose Sleep advances it at once.
func NewClock(start time.Time) *Clock { return &Clock{wall: start} }

// NewManualClock returns a fake clock reading start whose Sleep blocks until Advance has moved
// the monotonic clock by the duration asked for, or its context ends.
func NewManualClock(start time.Time) *Clock { return &Clock{wall: start, manual: true} }

// Now returns the fake wall time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

// Monotonic returns the fake monotonic time.
func (c *Clock) Monotonic() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// Sleep waits for d of the clock's monotonic time, unless ctx is done first (then it returns
// ctx.Err()). A clock from NewClock advances by d at once; one from NewManualClock blocks until
// Advance has moved it by d.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps++
	if !c.manual {
		c.mu.Unlock()
		c.Advance(d)
		return nil
	}
	if d <= 0 {
		c.mu.Unlock()
		return nil
	}
	w := &waiter{until: c.mono + d, wake: make(chan struct{})}
	c.waiters = append(c.waiters, w)
	c.mu.Unlock()
	select {
	case <-w.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		c.waiters = slices.DeleteFunc(c.waiters, func(o *waiter) bool { return o == w })
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Sleeps returns how many times Sleep was called.
func (c *Clock) Sleeps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sleeps
}

// Sleeping returns the time left on each Sleep blocked on a manual clock, soonest first (none
// for a clock from NewClock). A Sleep that Advance ends is no longer listed when Advance returns.
func (c *Clock) Sleeping() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Duration, len(c.waiters))
	for i, w := range c.waiters {
		out[i] = w.until - c.mono
	}
	slices.Sort(out)
	return out
}

// Advance moves wall and monotonic time forward by d and ends every Sleep that time reaches.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
	c.mono += d
	c.waiters = slices.DeleteFunc(c.waiters, func(w *waiter) bool {
		if w.until <= c.mono {
			close(w.wake)
			return true
		}
		return false
	})
}

// Step moves the wall clock alone by d (negative: backwards), as a clock step does. It ends no
// Sleep: sleeps run on the monotonic clock.
func (c *Clock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

// Set sets the wall clock alone to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = t
}

// Health is a fake idcore.HealthSource whose reading the test sets.
type Health struct {
	mu  sync.Mutex
	kc  idcore.KernelClock
	err error
}

var _ idcore.HealthSource = (*Health)(nil)

// Synced returns a source reporting a synchronized clock with 1 ms estimated error.
func Synced() *Health {
	return &Health{kc: idcore.KernelClock{Synchronized: true, EstimatedError: time.Millisecond}}
}

// Set changes what the source reports.
func (h *Health) Set(kc idcore.KernelClock, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kc, h.err = kc, err
}

// ReadClock returns the reading last set.
func (h *Health) ReadClock() (idcore.KernelClock, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.kc, h.err
}
