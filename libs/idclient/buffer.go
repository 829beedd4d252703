package idclient

import (
	"sync/atomic"

	"github.com/idgen/idgen/libs/idcore"
)

// batch is one refill's IDs, handed out whole: Next takes them in turn by an atomic index, with
// no lock, and only the Next that finds a batch used up takes the client's mutex to begin the
// next one.
type batch struct {
	ids    []int64      // as the response decoded them: never copied, never appended to
	kickAt atomic.Int64 // the index whose taking brings the buffer below the low-water mark
	_      [40]byte     // next on a cache line of its own: every Next writes it
	next   atomic.Int64 // the index of the next ID to hand out; past len(ids) once used up
	_      [56]byte
}

// used is a batch with nothing left: the one a client begins with and ends with.
func used() *batch {
	b := &batch{}
	b.kickAt.Store(-1)
	return b
}

func newBatch(ids []int64) *batch {
	b := &batch{ids: ids}
	b.kickAt.Store(-1)
	return b
}

// left is how many IDs b has not handed out.
func (b *batch) left() int { return max(0, len(b.ids)-int(b.next.Load())) }

// take hands out b's next ID; ok is false when b is used up. kick says that this ID brings the
// buffer below the low-water mark (exactly one taker sees it).
func (b *batch) take() (id idcore.ID, kick, ok bool) {
	i := b.next.Add(1) - 1
	if i >= int64(len(b.ids)) {
		return 0, false, false
	}
	return idcore.ID(b.ids[i]), i == b.kickAt.Load(), true
}

// The buffer's state under Client.mu: cur is the batch Next takes from (read without the lock),
// ready the batches waiting behind it, highest first ID first (the next to begin is the last).

// levelLocked is how many IDs the buffer holds.
func (c *Client) levelLocked() int { return c.cur.Load().left() + c.queued }

// putLocked adds a batch behind the current one, before any waiting batch whose first ID is
// higher: batches from one generator are handed out in the order it issued them unless one came
// back after a later one was begun. It wakes every Next waiting for IDs, and reports whether it
// put the batch (not when closed, or ids empty).
func (c *Client) putLocked(ids []int64) bool {
	if c.closed.Load() || len(ids) == 0 {
		return false // dropped, as the buffer at Close
	}
	b := newBatch(ids)
	at := len(c.ready)
	for at > 0 && c.ready[at-1].ids[0] < ids[0] {
		at--
	}
	c.ready = append(c.ready, nil)
	copy(c.ready[at+1:], c.ready[at:])
	c.ready[at] = b
	c.queued += len(ids)
	c.adapt.put += int64(len(ids))
	close(c.filled)
	c.filled = make(chan struct{})
	if c.dryClosed {
		c.dry, c.dryClosed = make(chan struct{}), false
	}
	return true
}

// advanceLocked begins the next waiting batch if b, the current one, is used up; it reports
// whether there is one to take from.
func (c *Client) advanceLocked(b *batch) bool {
	if c.cur.Load() != b {
		return true // another Next began the next one
	}
	if len(c.ready) == 0 {
		return false
	}
	last := len(c.ready) - 1
	nb := c.ready[last]
	c.ready[last] = nil
	c.ready = c.ready[:last]
	c.queued -= len(nb.ids)
	c.cur.Store(nb)
	return true
}

// wantLocked reports whether another refill should start: the buffer holds fewer IDs than the
// low-water mark in force (c.mark: LowWater, raised by adaptLocked up to MaxLowWater) and fewer
// refills are under way than there are batches in the mark. Refills under way do not count
// towards the mark: at a generator's limit the buffer is near empty and every refill allowed is
// in flight, so the generator always has the next call waiting (a refill's answer may wait for
// the client's goroutines to be scheduled, and the generator must not sit idle meanwhile). It
// also sets the current batch's kickAt, the index whose taking brings the buffer below the mark:
// Next kicks the refill loop there, so a refill starts ahead of need without Next looking at
// anything but its batch.
func (c *Client) wantLocked() bool {
	if c.closed.Load() || c.refilling >= (c.mark+c.cfg.Batch-1)/c.cfg.Batch {
		return false // a refill's end looks again
	}
	if c.levelLocked() < c.mark {
		return true
	}
	// After taking index i, the level is len-i-1+queued: below the mark from
	// i = len+queued-mark.
	b := c.cur.Load()
	k := int64(len(b.ids) + c.queued - c.mark)
	b.kickAt.Store(k)
	// A Next that took index k before the store saw the old kickAt: the level is below the mark
	// already, so the caller goes on as if kicked.
	return b.next.Load() > k && k < int64(len(b.ids))
}

// markDryLocked says a Next found the buffer empty: c.dry is closed until a batch comes, which
// tells every refill in flight that it may hedge.
func (c *Client) markDryLocked() {
	if !c.dryClosed {
		close(c.dry)
		c.dryClosed = true
	}
}
