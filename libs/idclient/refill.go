package idclient

import (
	"context"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
)

// refillLoop starts refills (fetch) while the buffer holds fewer IDs than the low-water mark in
// force, each on its own goroutine, up to as many at once as there are batches in the mark
// (wantLocked). Next kicks it (c.wake) when its taking brings the buffer below the mark, and each
// refill's end brings it back to look again (with the mark its batch set, adaptLocked). After a
// refill that failed it waits (50 ms, doubling to 1 s) before it starts another.
func (c *Client) refillLoop() {
	defer c.done.Done()
	ended := make(chan error)
	backoff := 50 * time.Millisecond
	var pause <-chan time.Time // while set: no new refill until it fires
	for {
		if pause == nil {
			c.mu.Lock()
			n := 0
			for c.wantLocked() {
				c.refilling++
				n++
			}
			c.mu.Unlock()
			for range n {
				c.done.Go(func() {
					err := c.fetch()
					select {
					case ended <- err:
					case <-c.stop:
					}
				})
			}
		}
		select {
		case <-c.stop:
			return
		case <-c.wake:
		case <-pause:
			pause = nil
		case err := <-ended:
			c.mu.Lock()
			c.refilling--
			c.mu.Unlock()
			if err == nil {
				backoff = 50 * time.Millisecond
			} else if pause == nil {
				pause = time.After(backoff)
				backoff = min(2*backoff, time.Second)
			}
		}
	}
}

// call is one GenerateBatch in flight, to endpoint ep since start.
type call struct {
	ep    int
	start time.Time
}

// fetch gets one batch into the buffer. It asks the active endpoint, or the next one when a call
// to the active endpoint is already unanswered past HedgeAfter and nothing came from it since
// that call began (overdue); and while the buffer is empty, that call is still unanswered
// HedgeAfter after it began and nothing came from its endpoint for HedgeAfter, it asks the next
// endpoint too, if no other refill's hedge is in flight (mayHedge). It returns at the first
// batch, or once every call it made failed. A call still in flight when
// fetch returns goes on until its CallTimeout: its batch goes into the buffer as well, and its
// error counts against its endpoint (moveFrom) as any other.
func (c *Client) fetch() error {
	n := len(c.clients)
	hedging := c.cfg.HedgeAfter > 0 && n > 1
	i := int(c.active.Load())
	if hedging && c.overdue(i) {
		i = (i + 1) % n
	}
	answers := make(chan error, 2) // one per call; a call answering after fetch returned never blocks
	started := time.Now()
	c.launch(i, answers, false)
	pending, hedged := 1, !hedging
	var timer *time.Timer
	var fire <-chan time.Time
	var dry <-chan struct{} // closed when the buffer runs out while the timer is not armed
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// arm starts the hedge delay, counted from the later of the call's start and the last batch
	// from its endpoint, if the buffer is empty; else it watches for the buffer running out. A
	// buffer that runs dry while the call is already late, and its endpoint silent for
	// HedgeAfter, hedges at once. An endpoint whose batches keep coming is not frozen: in a
	// process whose goroutines keep the CPU busy answers are read late (the scheduler polls the
	// network only when idle or from sysmon), and with several calls in flight each looks
	// unanswered long after the generator answered it.
	arm := func() {
		if hedged || fire != nil {
			return
		}
		var empty bool
		var last time.Time
		c.mu.Lock()
		empty, dry, last = c.levelLocked() == 0, c.dry, c.answered[i]
		c.mu.Unlock()
		if !empty {
			return
		}
		dry = nil
		timer = time.NewTimer(max(0, c.cfg.HedgeAfter-time.Since(started), c.cfg.HedgeAfter-time.Since(last)))
		fire = timer.C
	}
	arm()
	var first error
	for pending > 0 {
		select {
		case err := <-answers:
			pending--
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		case <-dry:
			arm()
		case <-fire:
			fire = nil
			switch c.mayHedge(i) {
			case hedgeFilled, hedgeHeard:
				// Filled meanwhile (a late batch): hedge only if it runs dry again. Or a batch
				// came from i meanwhile: it is not frozen; arm counts from that batch.
				arm()
				continue
			case hedgeOther:
				// Another refill's hedge is in flight: its batch fills the buffer.
				timer.Reset(c.cfg.HedgeAfter)
				fire = timer.C
				continue
			}
			hedged = true
			next := (i + 1) % n
			c.hedges.Inc()
			c.log.Debug("idclient: no answer within the hedge delay with the buffer empty; asking the next endpoint too",
				"slow", c.cfg.Endpoints[i], "next", c.cfg.Endpoints[next], "after", time.Since(started))
			c.launch(next, answers, true)
			pending++
		case <-c.stop:
			return ErrClosed
		}
	}
	return first
}

// launch calls endpoint ep on its own goroutine, which Close waits for; answers gets the result.
// A hedge counts in c.hedging until it ends (mayHedge allowed it).
func (c *Client) launch(ep int, answers chan<- error, hedge bool) {
	k := &call{ep: ep, start: time.Now()}
	c.mu.Lock()
	c.inflight[k] = struct{}{}
	c.mu.Unlock()
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		err := c.get(ep)
		c.mu.Lock()
		delete(c.inflight, k)
		if hedge {
			c.hedging--
		}
		c.mu.Unlock()
		answers <- err
	}()
}

// get asks endpoint i for one batch and puts it into the buffer. On an error that says the
// endpoint cannot serve (unreachable, reset, unavailable, timed out) it moves from i, if i is
// active.
func (c *Client) get(i int) error {
	ctx, cancel := context.WithTimeout(c.life, c.cfg.CallTimeout)
	defer cancel()
	req := func() (*connect.Response[idgenv1.GenerateBatchResponse], error) {
		return c.clients[i].GenerateBatch(ctx, connect.NewRequest(&idgenv1.GenerateBatchRequest{Count: int32(c.cfg.Batch)}))
	}
	resp, err := req()
	if err != nil && connect.CodeOf(err) == connect.CodeUnavailable && c.life.Err() == nil && ctx.Err() == nil {
		// A 503 is one generator's (no lease yet, fenced, draining), on the connection the client
		// holds to it: a load balancer passes each connection to one target for its life, and
		// another target of the region may serve. Once more, on a new connection, before moving.
		c.cfg.HTTPClient.CloseIdleConnections()
		resp, err = req()
	}
	if err != nil {
		if c.life.Err() != nil {
			return ErrClosed // Close ended the call: no fault of the endpoint
		}
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		switch connect.CodeOf(err) {
		// Canceled, with the client not closing, is the transport's: connect-go reports a
		// connection reset (a load balancer whose target just died) as canceled.
		case connect.CodeUnavailable, connect.CodeDeadlineExceeded, connect.CodeUnknown, connect.CodeInternal, connect.CodeCanceled:
			c.moveFrom(i, err)
		}
		return err
	}
	ids := resp.Msg.GetIds()
	now := time.Now()
	c.mu.Lock()
	if c.putLocked(ids) {
		c.adaptLocked(now, ids[len(ids)-1])
	}
	c.answered[i] = now
	c.lastErr = nil
	c.mu.Unlock()
	c.fetched.Add(float64(len(ids)))
	return nil
}

// overdue reports whether a call to endpoint i has been unanswered for HedgeAfter or longer with
// no batch from i since it began. An endpoint whose batches keep coming is not frozen: in a
// process whose goroutines keep the CPU busy, answers are read late (the scheduler polls the
// network only when idle or from sysmon), and a call looks unanswered long after its batch came.
func (c *Client) overdue(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.inflight {
		if k.ep == i && time.Since(k.start) >= c.cfg.HedgeAfter && c.answered[i].Before(k.start) {
			return true
		}
	}
	return false
}

// What mayHedge found.
const (
	hedgeNow    = iota // the buffer is empty and i silent: hedge (counted in c.hedging)
	hedgeFilled        // the buffer holds IDs
	hedgeHeard         // a batch came from i within HedgeAfter
	hedgeOther         // another refill's hedge is in flight
)

// mayHedge says whether a refill whose call to endpoint i is late may hedge now. One hedge is in
// flight at a time: with several refills in flight, the buffer running dry would otherwise make
// each of them hedge at once, and one batch from the next endpoint fills the buffer.
func (c *Client) mayHedge(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.levelLocked() > 0:
		return hedgeFilled
	case time.Since(c.answered[i]) < c.cfg.HedgeAfter:
		return hedgeHeard
	case c.hedging > 0:
		return hedgeOther
	}
	c.hedging++
	return hedgeNow
}
