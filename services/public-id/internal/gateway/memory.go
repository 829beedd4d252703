package gateway

import "cmp"

// memoryAllowance is what the gateway's heap holds besides response bodies, its rate tables and
// the mapping cache: the runtime, the route table, connections and their buffers, goroutine
// stacks.
const memoryAllowance = 12 << 20

// rateEntryBytes is what one client's bucket in a rate table holds when the table is full
// (65,536 of them took 20 MiB).
const rateEntryBytes = 320

// MemoryLimit is the most a gateway's heap can hold with options o, rateTables full rate tables
// of RateTableSize clients (the gateway's and each route's with rate_per_client) and cacheBytes
// of mapping cache: o.MemoryLimit when set (negative: none, -1), else, with o's defaults filled in
// as New fills them, BodyBudget + 2 × MaxRewrites × MaxBody (the bodies being read, each
// rewrite's parse and output), the tables, the cache and a 12 MiB allowance (64 MiB with the
// defaults, one table and no cache; 96 MiB with the binary's default 32 MiB cache). The gateway's
// binary does not run at it: it follows what the gateway holds now (LiveMemoryLimit), so that a
// gateway whose cache and tables are still small is held near its bodies' budget too.
func MemoryLimit(o Options, rateTables int, cacheBytes uint64) int64 {
	if o.MemoryLimit < 0 {
		return -1
	}
	if o.MemoryLimit > 0 {
		return o.MemoryLimit
	}
	maxBody := cmp.Or(o.MaxBody, 1<<20)
	tables := int64(rateTables) * int64(cmp.Or(o.RateTableSize, 1<<16)) * rateEntryBytes
	return cmp.Or(o.BodyBudget, 16*maxBody) + 2*int64(cmp.Or(o.MaxRewrites, 8))*maxBody + tables + int64(cacheBytes) + memoryAllowance
}

// memoryHeadroom is what LiveMemoryLimit leaves for the cache and the rate tables to grow by
// before its next reading.
const memoryHeadroom = 2 << 20

// LiveMemoryLimit is the Go memory limit that holds the gateway's process to what it holds now:
// the bodies' bounds (as MemoryLimit), the rate tables as full as they are, cacheBytes of mapping
// cache (its weight now) and the allowance, with 2 MiB of headroom for the tables and the cache to
// grow by until the next reading; o.MemoryLimit when set (negative: none, -1). The gateway's
// binary sets it every second: below it the services' GC target (GOGC 400) governs, as in every
// service, and near it the collector runs as often as it must rather than let the garbage of
// bodies already answered grow the heap to five times what is live; since the limit follows
// the live bounds, a full cache or table never leaves the collector running all the time.
func (g *Gateway) LiveMemoryLimit(cacheBytes uint64) int64 {
	if g.o.MemoryLimit != 0 {
		return MemoryLimit(g.o, 0, 0)
	}
	clients := g.limits.len()
	for _, l := range g.perRoute {
		if l.rate != nil {
			clients += l.rate.len()
		}
	}
	return MemoryLimit(g.o, 0, cacheBytes) + int64(clients)*rateEntryBytes + memoryHeadroom
}
