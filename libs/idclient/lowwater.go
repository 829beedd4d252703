package idclient

import (
	"math"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// The low-water mark in force (Client.mark) is LowWater plus the IDs the application takes in
// the time a batch spends between its issue and the buffer, up to MaxLowWater. That time is what
// the caller's own process adds to every refill on top of the call: a batch's answer is read only
// when the Go scheduler polls the network, which it does not do while goroutines are runnable
// (sysmon polls about every 10 ms), and the goroutines that read it then wait their turn behind
// the application's. An application that keeps its cores busy while taking IDs fast would run
// the buffer dry behind each refill with a mark set for the network's round trip alone.
//
// The delay is measured from the timestamp of the batch's last ID (when the generator issued it)
// to the batch's arrival in the buffer, not from the refill's start: the start would also count
// the time the call waited at a generator at its limit, which grows with the calls in flight, so
// a mark raised by it would raise itself (and queue the calls at the generator towards
// HedgeAfter). A clock ahead of the generator's raises the mark by as much, at most to
// MaxLowWater; one behind it leaves the mark at LowWater, as without adapting.
const (
	rateWindow    = 50 * time.Millisecond // the take rate is sampled over at least this long
	delayHalfLife = time.Second           // the delay's peak decays by half in this long
)

// adapt is the state behind the mark, under Client.mu.
type adapt struct {
	put      int64     // IDs put into the buffer so far (taken = put - level)
	winStart time.Time // the rate window's start and the IDs taken by then
	winTaken int64
	rate     float64       // IDs taken per second, smoothed over the windows
	delay    time.Duration // the peak delay from a batch's issue to the buffer, decaying
	delayAt  time.Time     // when delay was last raised or decayed (zero: no delay seen yet)
}

// adaptLocked takes a batch just put into the buffer (the last of its IDs, ids non-empty) into
// the mark's estimate and sets the mark.
func (c *Client) adaptLocked(now time.Time, last int64) {
	a := &c.adapt
	taken := a.put - int64(c.levelLocked())
	switch {
	case a.winStart.IsZero():
		a.winStart, a.winTaken = now, taken
	case now.Sub(a.winStart) >= rateWindow:
		sample := float64(taken-a.winTaken) / now.Sub(a.winStart).Seconds()
		a.rate += (sample - a.rate) / 2
		a.winStart, a.winTaken = now, taken
	}
	if d, ok := issueDelay(idcore.ID(last), now, c.cfg.CallTimeout); ok {
		if !a.delayAt.IsZero() {
			a.delay = time.Duration(float64(a.delay) * math.Exp2(-now.Sub(a.delayAt).Seconds()/delayHalfLife.Seconds()))
		}
		a.delay, a.delayAt = max(a.delay, d), now
	}
	extra := math.Ceil(a.rate * a.delay.Seconds())
	c.mark = c.cfg.LowWater + int(min(extra, float64(c.cfg.MaxLowWater-c.cfg.LowWater)))
}

// issueDelay is how long ago, at now, the generator issued id (by its timestamp, to the
// millisecond); ok is false for an ID older than a call may take (not one just issued: a test's
// counter, a generator's clock far behind).
func issueDelay(id idcore.ID, now time.Time, most time.Duration) (time.Duration, bool) {
	ago := max(0, now.Sub(id.Time())) // zero: a client clock behind the generator's
	return ago, ago <= most
}
