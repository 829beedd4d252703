package regions

import (
	"sync"
	"time"
)

// negCache remembers public IDs that no region has, for ttl, at most max of them.
type negCache struct {
	ttl time.Duration
	max int
	now func() time.Time
	mu  sync.Mutex
	m   map[string]time.Time // public ID → when it is forgotten
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

// add remembers public as unknown; when the cache is full of entries not yet expired, it is not
// remembered (a probe of many random IDs fills it with IDs nobody asks again).
func (c *negCache) add(public string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.m) >= c.max {
		for k, until := range c.m {
			if now.After(until) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= c.max {
			return
		}
	}
	c.m[public] = now.Add(c.ttl)
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
