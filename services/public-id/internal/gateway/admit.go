package gateway

import "github.com/idgen/idgen/libs/svc/quota"

// admit takes one of the gateway's slots for requests in flight (none free: busy, on route "")
// and a token of the client's rate (none: rate_limited, with the wait in Retry-After). The slot
// is the request's until its reply is written.
func (g *Gateway) admit(q *request) *failure {
	select {
	case g.inFlight <- struct{}{}:
		q.inFlight = true
	default:
		return fail(outcomeBusy, nil)
	}
	if g.limits.rate <= 0 {
		return nil // no rate per client: no client to find
	}
	if ok, wait := g.limits.take(g.clients.key(q.r), g.now()); !ok {
		return &failure{outcome: outcomeRateLimited, retryAfter: quota.RetryAfterSeconds(wait)}
	}
	return nil
}

// admitRoute takes one of the matched route's slots for requests in flight (none free: busy, on
// the route), so a slow or hostile upstream stalls its own route only.
func (g *Gateway) admitRoute(q *request) *failure {
	lim := q.lim
	select {
	case lim.inFlight <- struct{}{}:
		q.routeSlots = lim
		return nil
	default:
		return fail(outcomeBusy, nil)
	}
}
