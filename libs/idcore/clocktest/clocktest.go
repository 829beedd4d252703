// Package clocktest provides a controllable clock and clock-health source for tests of idcore
// and of the packages built on it. Nothing here sleeps for real.
package clocktest

import (
	"context"
	"sync"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// Clock is a fake idcore.Clock. Sleep advances both its wall and monotonic time by the duration
// asked for, at once; Step moves the wall clock alone, as a clock step does.
type Clock struct {
	mu     sync.Mutex
	wall   time.Time
	mono   time.Duration
	sleeps int
}

var _ idcore.Clock = (*Clock)(nil)

// NewClock returns a fake clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{wall: start} }

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

// Sleep advances the clock by d at once, unless ctx is already done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	c.mu.Lock()
	c.sleeps++
	c.mu.Unlock()
	return nil
}

// Sleeps returns how many times Sleep was called.
func (c *Clock) Sleeps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sleeps
}

// Advance moves wall and monotonic time forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
	c.mono += d
}

// Step moves the wall clock alone by d (negative: backwards), as a clock step does.
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
