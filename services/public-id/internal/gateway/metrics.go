package gateway

import (
	"strings"

	"github.com/idgen/idgen/libs/routes"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's series, registered on the registerer New is given.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	upstream *prometheus.HistogramVec
	held     *prometheus.GaugeVec // body budget in use, by route
	tokens   *prometheus.CounterVec
	// rateErrors counts the rate store's failed checks (ratestore.go).
	rateErrors prometheus.Counter
}

func newMetrics() metrics {
	labels := make([]string, len(outcomes))
	for o := range outcomes {
		labels[o] = outcome(o).String()
	}
	return metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_gateway_requests_total",
			Help: "Customer requests by route and outcome (" + strings.Join(labels, ", ") + ")."},
			[]string{"route", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "idgen_gateway_request_duration_seconds",
			Help: "Customer request latency, upstream included, by route.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"route"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "idgen_gateway_upstream_duration_seconds",
			Help: "Upstream call latency (to the response headers), by route.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"route"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "idgen_gateway_body_bytes",
			Help: "Bytes of upstream bodies held (being read, or read and waiting for their rewrite), by route; a route holds at most half of the gateway's body budget."}, []string{"route"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_gateway_tokens_total",
			Help: "Token handles by route and op: issued (kept in the store for a response), redeemed (swapped back for a query), refused (unknown, expired, malformed or another route's)."},
			[]string{"route", "op"}),
		rateErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "idgen_gateway_rate_store_errors_total",
			Help: "Rate limit checks the rate limits' Redis (--rate-redis) failed or did not answer within --rate-redis-timeout; each was made by the gateway's own in-process limiter instead. 0 without --rate-redis."}),
	}
}

// register registers the gateway's series on reg. Every route's series exist from the first
// scrape, at zero, and so do route ""'s (requests no route took: not_found, rate_limited, busy).
func (g *Gateway) register(reg prometheus.Registerer, routes []*routes.Route) {
	for _, r := range routes {
		lim := g.perRoute[r]
		for o := range outcomes {
			lim.requests[o] = g.requests.WithLabelValues(r.Name, outcome(o).String())
		}
		lim.duration = g.duration.WithLabelValues(r.Name)
		lim.upstream = g.upstream.WithLabelValues(r.Name)
		lim.held = g.held.WithLabelValues(r.Name)
		if r.Response.HasToken() {
			for _, op := range []string{"issued", "redeemed", "refused"} {
				g.tokens.WithLabelValues(r.Name, op)
			}
		}
	}
	for _, o := range []outcome{outcomeNotFound, outcomeRateLimited, outcomeBusy} {
		g.requests.WithLabelValues("", o.String())
	}
	reg.MustRegister(g.requests, g.duration, g.upstream, g.held, g.tokens, g.rateErrors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "idgen_gateway_rate_limit_clients", Help: "Clients in the rate limiter's table (bounded by its size); with --rate-redis, only those whose checks the Redis failed."},
		func() float64 { return float64(g.limits.len()) }))
}
