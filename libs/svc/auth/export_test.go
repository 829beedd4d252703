package auth

// WithoutWatch leaves g's files to the periodic re-read and SIGHUP (tests of the fallback); call
// it before Run.
func WithoutWatch(g *Gate) { g.w.opt.noWatch = true }
