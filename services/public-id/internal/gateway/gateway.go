package gateway

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/rs/cors"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/sync/semaphore"
)

// Options configure a Gateway. Every zero value means the default in its comment.
type Options struct {
	// Probe is what /healthz asks of the store (nil when it answers; mapping.ErrFilling while
	// the region's store is being filled). Default: a lookup of internal ID 0.
	Probe func(context.Context) error
	// RatePerClient is each client's request rate (per second); 0 for none. Burst 2×. A route's
	// rate_per_client limits each client on that route besides.
	RatePerClient float64
	// APIKeyHeader names the request header that holds a customer's API key (X-Api-Key). When it
	// is set, a request that carries a key and comes through one of TrustedProxies is rate limited
	// by its key, not its address (both the gateway's rate and the routes'); one without a key, or
	// from any other peer, is limited by its address. The gateway does not check keys: the edge in
	// front of it (a trusted proxy) must. Default none: clients are their addresses.
	APIKeyHeader string
	// RateRedis, when set, keeps the per-client rates (RatePerClient and every route's
	// rate_per_client) in that Redis, shared by every gateway that uses it: a region's gateways
	// behind one load balancer then allow a client the rate once, not once each. A check that
	// fails or outlasts RateRedisTimeout is counted (idgen_gateway_rate_store_errors_total),
	// logged at most every 10 s, and made by this process's own limiter instead, at the same rate:
	// a client whose requests all come to one gateway is never refused for the store's failure,
	// and one spread over N gateways gets at most N times the rate while the store fails, as
	// without a store. The bounds of requests at once (MaxInFlight, max_in_flight, the rewrite
	// slots, the body budget) are the process's own either way. Default none: in-process.
	RateRedis redis.UniversalClient
	// RateRedisTimeout bounds each check in RateRedis. Default 50 ms.
	RateRedisTimeout time.Duration
	// RateTableSize bounds the rate limiter's table of clients (the gateway's, and each route's
	// with rate_per_client). Default 65,536 (about 20 MiB a table, full).
	RateTableSize int
	// TrustedProxies are the proxies (the edge load balancer) whose X-Forwarded-For names the
	// client, whose RequestIDHeader the gateway takes (requestid.go), whose API keys count
	// (APIKeyHeader), and whose X-Amzn-Trace-Id the access log shows as trace_id. Default none:
	// the connection's peer is the client, and every request ID is the gateway's own.
	TrustedProxies []netip.Prefix
	// RequestIDHeader is the header in which a trusted proxy sets the request ID, taken in place
	// of the gateway's own (the upstream and the customer get it as X-Request-Id). The proxy must
	// set it itself, overwriting any a customer sent (nginx and envoy can); one that passes a
	// customer's on (an AWS ALB does, with X-Request-Id) would let customers choose the ID the
	// upstream and the log get: behind such a proxy, NoRequestIDHeader ("-"), and find the ALB's
	// X-Amzn-Trace-Id in the access log as trace_id. Default X-Request-Id.
	RequestIDHeader string
	// UpstreamTimeout is a route's timeout when its route file sets none: the bound of the whole
	// upstream exchange (connect, headers and body), past which the customer gets 504. Default 5 s.
	UpstreamTimeout time.Duration
	// MaxBody caps an upstream body; larger answers are a 502. Default 1 MiB.
	MaxBody int64
	// MaxDepth bounds JSON nesting in upstream bodies. Default 64.
	MaxDepth int
	// MaxIDs bounds the IDs one response may carry; MaxNewIDs how many of them may be published
	// by that response (IDs that have no public ID yet). Defaults 1,000 and 100.
	MaxIDs, MaxNewIDs int
	// MaxInFlight bounds the requests served at once (more get 503); MaxRewrites the upstream
	// bodies rebuilt at once (parsed, published and filled in; the rest wait). Each route has
	// bounds of its own too (max_in_flight and max_rewrites in the route file; by default half of
	// these, at least 1), so no route can take them all. Defaults 1,024 and 8.
	MaxInFlight, MaxRewrites int
	// BodyBudget bounds the bytes of the upstream bodies being read or waiting for their rewrite,
	// across routes; one route may hold half of it. A body takes budget as it grows (a trickling
	// upstream holds about what it has sent, never a rewrite slot), and a body that cannot grow
	// within the budget gets 503 at once. With MaxRewrites it bounds the memory responses take to
	// about BodyBudget + MaxRewrites × 4 × MaxBody. Default 16 × MaxBody.
	BodyBudget int64
	// RewriteWait bounds the wait for a rewrite slot; past it the customer gets 503. Default 1 s.
	RewriteWait time.Duration
	// IDsSince starts the window in which a number is taken for an internal ID. Default
	// DefaultSince.
	IDsSince time.Time
	// Now is the clock: the rate limiter's, the detector's window, the latency metrics and the
	// health answer's age. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// AccessLog gets the access log: a line a request at info level (/healthz at debug level),
	// accesslog.go. Default Logger.
	AccessLog *slog.Logger
	// CORSOrigins are the exact origins (https://app.example.com) whose pages may call the
	// routes (cors.go). Default none: no CORS header is sent, and a preflight gets 405.
	CORSOrigins []string
	// CompressMinSize is the smallest body sent gzip to a customer who accepts it; negative for no
	// compression. Default 1,024 bytes.
	CompressMinSize int
	// CacheControl is the Cache-Control of a 200 (or 203, and its 304) whose route and upstream give
	// none; other successes (redirects, 204s) get no-store.
	// Default "private, no-cache".
	CacheControl string
	// MemoryLimit is a fixed Go memory limit for the gateway's process; negative for none. Default:
	// one that follows what the gateway holds (LiveMemoryLimit), which its binary sets every
	// second unless GOMEMLIMIT is set.
	MemoryLimit int64
}

// Gateway is the customer-facing handler.
type Gateway struct {
	routes   []*routes.Route
	maker    *publicid.Maker
	store    mapping.Store
	client   *http.Transport // upstream.go: the upstream transport
	limits   *clientLimiter
	clients  *clientAddr
	detect   Detector
	o        Options
	now      func() time.Time
	inFlight chan struct{}
	rewrites chan struct{}
	bodies   *semaphore.Weighted // BodyBudget
	perRoute map[*routes.Route]*routeLimits
	healthMu sync.Mutex
	healthAt time.Time
	healthIs healthz.Service
	log      *slog.Logger
	tokKey   atomic.Pointer[[]byte] // the key of token handles, once read from the store (token.go)

	// What customers get besides the body (serve.go).
	access          *slog.Logger                 // AccessLog
	cors            map[*routes.Route]*cors.Cors // nil without CORSOrigins
	apiKey          string                       // APIKeyHeader, canonical; "" for none
	requestIDHeader string                       // RequestIDHeader, canonical; "" for NoRequestIDHeader
	cacheDefault    []string                     // CacheControl

	metrics
}

// routeLimits are one route's own bounds, beside the gateway's: what a slow or abusive upstream
// can hold is its own route's share, never the other routes'.
type routeLimits struct {
	timeout  time.Duration       // of the whole upstream exchange
	inFlight chan struct{}       // requests served at once
	rewrites chan struct{}       // bodies rebuilt at once
	bodies   *semaphore.Weighted // bytes of bodies being read or waiting for their rewrite
	held     prometheus.Gauge    // what bodies holds, for the metric
	rate     *clientLimiter      // rate_per_client; nil for none

	// The route's series, found once (register) rather than by their labels at every request.
	requests [len(outcomes)]prometheus.Counter // idgen_gateway_requests_total, by outcome
	duration prometheus.Observer               // idgen_gateway_request_duration_seconds
	upstream prometheus.Observer               // idgen_gateway_upstream_duration_seconds
}

// New builds the gateway. It takes the mapping store through its interface, so a decorator of
// the store (a cache, say) serves the gateway as the store itself does.
func New(c *routes.Config, maker *publicid.Maker, store mapping.Store, reg prometheus.Registerer, o Options) (*Gateway, error) {
	o.UpstreamTimeout = cmp.Or(o.UpstreamTimeout, 5*time.Second)
	o.MaxBody = cmp.Or(o.MaxBody, 1<<20)
	o.MaxDepth = cmp.Or(o.MaxDepth, 64)
	o.MaxIDs = cmp.Or(o.MaxIDs, 1000)
	o.MaxNewIDs = cmp.Or(o.MaxNewIDs, 100)
	o.MaxInFlight = cmp.Or(o.MaxInFlight, 1024)
	o.MaxRewrites = cmp.Or(o.MaxRewrites, 8)
	o.RewriteWait = cmp.Or(o.RewriteWait, time.Second)
	o.RateTableSize = cmp.Or(o.RateTableSize, 1<<16)
	o.RateRedisTimeout = cmp.Or(o.RateRedisTimeout, 50*time.Millisecond)
	o.BodyBudget = cmp.Or(o.BodyBudget, 16*o.MaxBody)
	if o.BodyBudget/2 < o.MaxBody+1 {
		return nil, fmt.Errorf("gateway: a body budget of %d bytes is too small: each route gets half, and needs room for one body of MaxBody (%d) bytes", o.BodyBudget, o.MaxBody)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.AccessLog == nil {
		o.AccessLog = o.Logger
	}
	if o.CompressMinSize == 0 {
		o.CompressMinSize = 1024
	}
	if o.CacheControl == "" {
		o.CacheControl = "private, no-cache"
	}
	if !httpguts.ValidHeaderFieldValue(o.CacheControl) {
		return nil, fmt.Errorf("gateway: Cache-Control %q is not a valid header value", o.CacheControl)
	}
	if o.APIKeyHeader != "" {
		if !httpguts.ValidHeaderFieldName(o.APIKeyHeader) {
			return nil, fmt.Errorf("gateway: API key header %q is not a valid header name", o.APIKeyHeader)
		}
		o.APIKeyHeader = http.CanonicalHeaderKey(o.APIKeyHeader)
	}
	switch o.RequestIDHeader {
	case "":
		o.RequestIDHeader = "X-Request-Id"
	case NoRequestIDHeader:
	default:
		if !httpguts.ValidHeaderFieldName(o.RequestIDHeader) {
			return nil, fmt.Errorf("gateway: request ID header %q is not a valid header name", o.RequestIDHeader)
		}
		o.RequestIDHeader = http.CanonicalHeaderKey(o.RequestIDHeader)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	for _, r := range c.Routes {
		if pre, _ := r.PublicPath(); pre == "/healthz" || strings.HasPrefix(r.Public, "/healthz/") {
			return nil, fmt.Errorf("gateway: route %q: /healthz is the gateway's own", r.Name)
		}
	}
	for _, res := range c.Resources() {
		if !maker.Known(res) {
			return nil, fmt.Errorf("gateway: resource %q is not one the public-ID maker knows", res)
		}
	}
	m := newMetrics()
	var rates *rateStore
	if o.RateRedis != nil {
		rates = newRateStore(o.RateRedis, o.RateRedisTimeout, m.rateErrors, o.Logger)
	}
	perRoute := make(map[*routes.Route]*routeLimits, len(c.Routes))
	for _, r := range c.Routes {
		if r.MaxInFlight > o.MaxInFlight {
			return nil, fmt.Errorf("gateway: route %q: max_in_flight %d is above the gateway's %d", r.Name, r.MaxInFlight, o.MaxInFlight)
		}
		if r.MaxRewrites > o.MaxRewrites {
			return nil, fmt.Errorf("gateway: route %q: max_rewrites %d is above the gateway's %d", r.Name, r.MaxRewrites, o.MaxRewrites)
		}
		perRoute[r] = &routeLimits{
			timeout:  cmp.Or(r.TimeoutDuration(), o.UpstreamTimeout),
			inFlight: make(chan struct{}, cmp.Or(r.MaxInFlight, max(o.MaxInFlight/2, 1))),
			rewrites: make(chan struct{}, cmp.Or(r.MaxRewrites, max(o.MaxRewrites/2, 1))),
			bodies:   semaphore.NewWeighted(o.BodyBudget / 2),
		}
		if r.RatePerClient > 0 {
			perRoute[r].rate = newClientLimiter(r.RatePerClient, max(int(2*r.RatePerClient), 1), o.RateTableSize).shared(rates, "route:"+r.Name)
		}
	}
	corsOf, err := newCORS(o.CORSOrigins, o.APIKeyHeader, c.Routes)
	if err != nil {
		return nil, err
	}
	clients, err := newClientAddr(o.TrustedProxies)
	if err != nil {
		return nil, err
	}
	g := &Gateway{routes: c.Routes, maker: maker, store: store, o: o, now: o.Now, log: o.Logger, clients: clients,
		client:   newUpstreamTransport(),
		limits:   newClientLimiter(o.RatePerClient, max(int(2*o.RatePerClient), 1), o.RateTableSize).shared(rates, "gw"),
		detect:   Detector{Since: o.IDsSince, Now: o.Now},
		inFlight: make(chan struct{}, o.MaxInFlight), rewrites: make(chan struct{}, o.MaxRewrites),
		bodies: semaphore.NewWeighted(o.BodyBudget), perRoute: perRoute,
		metrics: m,
		access:  o.AccessLog, cors: corsOf, apiKey: o.APIKeyHeader, cacheDefault: []string{o.CacheControl},
	}
	if o.RequestIDHeader != NoRequestIDHeader {
		g.requestIDHeader = o.RequestIDHeader
	}
	g.register(reg, c.Routes)
	return g, nil
}
