package gateway

import (
	"encoding/hex"

	"github.com/idgen/idgen/libs/svc/quota"
)

// maxAPIKey bounds an API key's length.
const maxAPIKey = 256

// identify finds who asks, once: the request ID (requestid.go), the client's address, and whom
// the rate limits count, the address (an IPv6 one by its /64) or, when the gateway reads an API
// key (APIKeyHeader), the request carries one and it comes through a trusted proxy (the edge,
// which authenticates keys), the key. A key from any other peer is not read: a client that made
// up a key a request would get a bucket of its own each time, and evict real customers' from
// the table. A key given twice, empty, longer than 256 bytes or outside printable ASCII is a 400
// that says so.
func (g *Gateway) identify(q *request) *failure {
	trusted := g.clients.peerTrusted(q.r)
	q.id = g.requestID(q.r, trusted)
	q.traceID = traceID(q.r, trusted)
	q.client = g.clients.addr(q.r)
	q.key = addrKey(q.client)
	if g.apiKey == "" || !trusted {
		return nil
	}
	switch vs := q.r.Header[g.apiKey]; {
	case len(vs) > 1:
		return badRequest(g.apiKey + " is given more than once")
	case len(vs) == 1:
		if !printableKey(vs[0]) {
			return badRequest(g.apiKey + ": want 1 to 256 printable ASCII characters")
		}
		q.key = apiKeyKey(vs[0])
		q.keyTag = hex.EncodeToString(q.key.apiKey[:6])
	}
	return nil
}

func printableKey(s string) bool {
	if len(s) == 0 || len(s) > maxAPIKey {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// admit takes one of the gateway's slots for requests in flight (none free: busy, on route "")
// and a token of the client's rate (none: rate_limited, with the wait in Retry-After). The slot
// is the request's until its reply is written. The slots are this process's own (a bound of its
// memory and its upstream connections); the rate is the region's when the gateway has a rate
// store, except /healthz's, which is counted here alone: a load balancer checks each gateway
// from the same addresses, and a health answer waits on no Redis.
func (g *Gateway) admit(q *request) *failure {
	select {
	case g.inFlight <- struct{}{}:
		q.inFlight = true
	default:
		return fail(outcomeBusy, nil)
	}
	take := g.limits.allow
	if q.r.URL.Path == "/healthz" {
		take = g.limits.take
	}
	if ok, wait := take(q.key, g.now()); !ok {
		return &failure{outcome: outcomeRateLimited, retryAfter: quota.RetryAfterSeconds(wait)}
	}
	return nil
}

// admitRoute takes a token of the client's rate on the matched route (rate_per_client; none:
// rate_limited on the route; the region's with a rate store, as the gateway's), then one of the
// route's slots for requests in flight (none free: busy, on the route), so a slow or hostile
// upstream stalls its own route only.
func (g *Gateway) admitRoute(q *request) *failure {
	lim := q.lim
	if lim.rate != nil {
		if ok, wait := lim.rate.allow(q.key, g.now()); !ok {
			return &failure{outcome: outcomeRateLimited, retryAfter: quota.RetryAfterSeconds(wait)}
		}
	}
	select {
	case lim.inFlight <- struct{}{}:
		q.routeSlots = lim
		return nil
	default:
		return fail(outcomeBusy, nil)
	}
}
