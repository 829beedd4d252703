package auth

// WithoutWatch leaves g's files to the periodic re-read and SIGHUP (tests of the fallback); call
// it before Run.
func WithoutWatch(g *Gate) { g.w.opt.noWatch = true }

// TransportsHeld is how many of the transports c made it still moves at a reload.
func TransportsHeld(c *ClientTLS) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transports = c.live()
	return len(c.transports)
}
