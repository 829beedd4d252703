package gateway

// memoryAllowance is what the gateway's heap holds besides response bodies: the runtime, the
// route table, the rate limiters' tables while they are small, connections and their buffers,
// goroutine stacks.
const memoryAllowance = 12 << 20

// MemoryLimit is the Go memory limit (runtime/debug.SetMemoryLimit) that holds a gateway's
// process to its byte budget: o.MemoryLimit when set (negative: none, -1), else BodyBudget +
// 2 × MaxRewrites × MaxBody + 12 MiB, with o's defaults filled in as New fills them (44 MiB with
// the defaults). That is the bodies being read, each rewrite's parse and output (about twice a
// body; a body whose rebuild grows to its 4 × MaxBody bound takes more) and the fixed allowance.
//
// The limit is soft: below it the services' GC target (GOGC 400, serve.SetGC) governs, so an
// idle or lightly loaded gateway collects as rarely as the other services; near it the collector
// runs as often as it must (at most about half the CPU), rather than let garbage from bodies
// already answered grow the heap to five times what is live. The resident set is the limit plus
// what the Go runtime does not manage: the program's text and the SQLite store's own memory,
// about 14 MiB (the README has the measurement).
func MemoryLimit(o Options) int64 {
	if o.MemoryLimit < 0 {
		return -1
	}
	if o.MemoryLimit > 0 {
		return o.MemoryLimit
	}
	maxBody := cmp(o.MaxBody, 1<<20)
	return cmp(o.BodyBudget, 16*maxBody) + 2*int64(cmp(o.MaxRewrites, 8))*maxBody + memoryAllowance
}

// MemoryLimit is the Go memory limit the gateway's process should run with: MemoryLimit of its
// options. -1 for none: debug.SetMemoryLimit(-1) leaves the process's limit as it is.
func (g *Gateway) MemoryLimit() int64 { return MemoryLimit(g.o) }
