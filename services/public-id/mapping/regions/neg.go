package regions

import (
	"sync"
	"time"
)

// negCache remembers public IDs that no region has, for ttl, at most max of them: the oldest is
// forgotten first, so that adding one costs the same however full the cache is.
type negCache struct {
	ttl time.Duration
	max int
	now func() time.Time
	mu  sync.Mutex
	m   map[string]time.Time // public ID → when it is forgotten
	q   []string             // the IDs in the order they were added (a ring once full)
	at  int                  // the oldest entry of q once it is full
}

func (c *negCache) has(public string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.m[public]
	if ok && c.now().After(until) {
		delete(c.m, public)
		return false
	}
	return ok
}

// add remembers public as unknown, forgetting the oldest entry when the cache is full.
func (c *negCache) add(public string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[public]; ok {
		c.m[public] = c.now().Add(c.ttl)
		return
	}
	if len(c.q) < c.max {
		c.q = append(c.q, public)
	} else {
		delete(c.m, c.q[c.at]) // the oldest (gone already if it was removed or expired and read)
		c.q[c.at] = public
		c.at = (c.at + 1) % c.max
	}
	c.m[public] = c.now().Add(c.ttl)
}

func (c *negCache) remove(public string) {
	c.mu.Lock()
	delete(c.m, public)
	c.mu.Unlock()
}

func (c *negCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
