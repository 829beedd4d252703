package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idgen/idgen/libs/svc/quota"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
)

// Options configure a Gateway. Every zero value means the default in its comment.
type Options struct {
	// RatePerClient is each client's request rate (per second); 0 for none. Burst 2×.
	RatePerClient float64
	// RateTableSize bounds the rate limiter's table of clients. Default 65,536 (about 15 MB).
	RateTableSize int
	// TrustedProxies are the proxies (the edge load balancer) whose X-Forwarded-For names the
	// client. Default none: the connection's peer is the client.
	TrustedProxies []netip.Prefix
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
	Logger   *slog.Logger
}

// Gateway is the customer-facing handler.
type Gateway struct {
	routes   []*Route
	maker    *publicid.Maker
	store    mapping.Store
	client   *http.Client
	limits   *clientLimiter
	clients  *clientAddr
	detect   Detector
	o        Options
	inFlight chan struct{}
	rewrites chan struct{}
	bodies   *semaphore.Weighted // BodyBudget
	perRoute map[*Route]*routeLimits
	healthMu sync.Mutex
	healthAt time.Time
	healthOK bool
	log      *slog.Logger
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	upstream *prometheus.HistogramVec
	held     *prometheus.GaugeVec // body budget in use, by route
}

// New builds the gateway.
func New(c *Config, maker *publicid.Maker, store mapping.Store, reg prometheus.Registerer, o Options) (*Gateway, error) {
	o.UpstreamTimeout = cmp(o.UpstreamTimeout, 5*time.Second)
	o.MaxBody = cmp(o.MaxBody, 1<<20)
	o.MaxDepth = cmp(o.MaxDepth, 64)
	o.MaxIDs = cmp(o.MaxIDs, 1000)
	o.MaxNewIDs = cmp(o.MaxNewIDs, 100)
	o.MaxInFlight = cmp(o.MaxInFlight, 1024)
	o.MaxRewrites = cmp(o.MaxRewrites, 8)
	o.RewriteWait = cmp(o.RewriteWait, time.Second)
	o.RateTableSize = cmp(o.RateTableSize, 1<<16)
	o.BodyBudget = cmp(o.BodyBudget, 16*o.MaxBody)
	if o.BodyBudget/2 < o.MaxBody+1 {
		return nil, fmt.Errorf("gateway: a body budget of %d bytes is too small: each route gets half, and needs room for one body of MaxBody (%d) bytes", o.BodyBudget, o.MaxBody)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for _, r := range c.Routes {
		if r.prefix == "/healthz" || strings.HasPrefix(r.Public, "/healthz/") {
			return nil, fmt.Errorf("gateway: route %q: /healthz is the gateway's own", r.Name)
		}
	}
	for _, res := range c.Resources() {
		if !maker.Known(res) {
			return nil, fmt.Errorf("gateway: resource %q is not one the public-ID maker knows", res)
		}
	}
	perRoute := make(map[*Route]*routeLimits, len(c.Routes))
	for _, r := range c.Routes {
		if r.MaxInFlight > o.MaxInFlight {
			return nil, fmt.Errorf("gateway: route %q: max_in_flight %d is above the gateway's %d", r.Name, r.MaxInFlight, o.MaxInFlight)
		}
		if r.MaxRewrites > o.MaxRewrites {
			return nil, fmt.Errorf("gateway: route %q: max_rewrites %d is above the gateway's %d", r.Name, r.MaxRewrites, o.MaxRewrites)
		}
		perRoute[r] = &routeLimits{
			timeout:  cmp(r.timeout, o.UpstreamTimeout),
			inFlight: make(chan struct{}, cmp(r.MaxInFlight, max(o.MaxInFlight/2, 1))),
			rewrites: make(chan struct{}, cmp(r.MaxRewrites, max(o.MaxRewrites/2, 1))),
			bodies:   semaphore.NewWeighted(o.BodyBudget / 2),
		}
	}
	clients, err := newClientAddr(o.TrustedProxies)
	if err != nil {
		return nil, err
	}
	g := &Gateway{routes: c.Routes, maker: maker, store: store, o: o, log: o.Logger, clients: clients,
		limits:   newClientLimiter(o.RatePerClient, max(int(2*o.RatePerClient), 1), o.RateTableSize),
		detect:   Detector{Since: o.IDsSince},
		inFlight: make(chan struct{}, o.MaxInFlight), rewrites: make(chan struct{}, o.MaxRewrites),
		bodies: semaphore.NewWeighted(o.BodyBudget), perRoute: perRoute,
		// No client timeout: each request carries its route's deadline, which bounds the whole
		// exchange (connect, headers and body).
		client: &http.Client{
			// Redirects are the gateway's to judge (a Location must map to a public path), never
			// followed: a redirect could lead anywhere, the internal API included.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport: &http.Transport{
				DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
				MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute, MaxResponseHeaderBytes: 64 << 10}},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_gateway_requests_total",
			Help: "Customer requests by route and outcome (ok, not_found, bad_request, method_not_allowed, rate_limited, busy, upstream_4xx, upstream_error, upstream_timeout, unsafe_response, store_unavailable, canceled)."},
			[]string{"route", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "idgen_gateway_request_duration_seconds",
			Help: "Customer request latency, upstream included, by route.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"route"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "idgen_gateway_upstream_duration_seconds",
			Help: "Upstream call latency (to the response headers), by route.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"route"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "idgen_gateway_body_bytes",
			Help: "Bytes of upstream bodies held (being read, or read and waiting for their rewrite), by route; a route holds at most half of the gateway's body budget."}, []string{"route"}),
	}
	// Every route's series exist from the first scrape, at zero.
	for _, r := range c.Routes {
		for _, outcome := range outcomes {
			g.requests.WithLabelValues(r.Name, outcome)
		}
		g.duration.WithLabelValues(r.Name)
		g.upstream.WithLabelValues(r.Name)
		g.perRoute[r].held = g.held.WithLabelValues(r.Name)
	}
	for _, outcome := range []string{"not_found", "rate_limited", "busy"} {
		g.requests.WithLabelValues("", outcome)
	}
	reg.MustRegister(g.requests, g.duration, g.upstream, g.held, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "idgen_gateway_rate_limit_clients", Help: "Clients in the rate limiter's table (bounded by its size)."},
		func() float64 { return float64(g.limits.len()) }))
	return g, nil
}

func cmp[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// outcomes are the values of idgen_gateway_requests_total's outcome label. canceled: the
// customer went away before the answer.
var outcomes = []string{"ok", "not_found", "bad_request", "method_not_allowed", "rate_limited", "busy", "upstream_4xx",
	"upstream_error", "upstream_timeout", "unsafe_response", "store_unavailable", "canceled"}

// routeLimits are one route's own bounds, beside the gateway's: what a slow or abusive upstream
// can hold is its own route's share, never the other routes'.
type routeLimits struct {
	timeout  time.Duration       // of the whole upstream exchange
	inFlight chan struct{}       // requests served at once
	rewrites chan struct{}       // bodies rebuilt at once
	bodies   *semaphore.Weighted // bytes of bodies being read or waiting for their rewrite
	held     prometheus.Gauge    // what bodies holds, for the metric
}

// The gateway's own answers: fixed bodies, never an upstream's.
const (
	bodyNotFound = `{"error":"not found"}`
	bodyBusy     = `{"error":"service busy, retry later"}`
)

// writeJSON answers with one of the gateway's own bodies. Content-Length is set, so a HEAD gets
// the headers a GET gets (the server drops a HEAD's body).
func writeJSON(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body+"\n")
}

// busy answers 503 for a limit reached (the gateway's, route "", or a route's).
func (g *Gateway) busy(w http.ResponseWriter, route string) {
	g.requests.WithLabelValues(route, "busy").Inc()
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, bodyBusy)
}

func errorBody(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return string(b)
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case g.inFlight <- struct{}{}:
		defer func() { <-g.inFlight }()
	default:
		g.busy(w, "")
		return
	}
	if ok, wait := g.limits.take(g.clients.key(r), time.Now()); !ok {
		g.requests.WithLabelValues("", "rate_limited").Inc()
		w.Header().Set("Retry-After", strconv.Itoa(quota.RetryAfterSeconds(wait)))
		writeJSON(w, http.StatusTooManyRequests, `{"error":"too many requests"}`)
		return
	}
	if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		g.health(w, r)
		return
	}
	route, pub := g.match(r.URL.Path)
	if route == nil {
		g.notFound(w, "")
		return
	}
	start := time.Now()
	defer func() { g.duration.WithLabelValues(route.Name).Observe(time.Since(start).Seconds()) }()
	if !slices.Contains(route.methods, r.Method) {
		g.requests.WithLabelValues(route.Name, "method_not_allowed").Inc()
		w.Header().Set("Allow", route.allow)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody("method "+r.Method+" is not allowed here; allowed: "+route.allow))
		return
	}
	lim := g.perRoute[route]
	select {
	case lim.inFlight <- struct{}{}:
		defer func() { <-lim.inFlight }()
	default:
		g.busy(w, route.Name)
		return
	}
	var known Known
	internal, ok := g.resolve(w, r.Context(), route, route.Resource, pub)
	if !ok {
		return
	}
	known.Add(internal)
	target, ok := g.target(w, r, route, internal, &known)
	if !ok {
		return
	}
	g.forward(w, r, route, target, &known)
}

// match finds the route of a public path and the public ID in it.
func (g *Gateway) match(path string) (*Route, string) {
	for _, rt := range g.routes {
		if rest, ok := strings.CutPrefix(path, rt.prefix); ok {
			if id, ok := strings.CutSuffix(rest, rt.suffix); ok && id != "" && !strings.Contains(id, "/") {
				return rt, id
			}
		}
	}
	return nil, ""
}

// resolve turns a customer's public ID of the given resource into its internal ID; unknown,
// malformed and other resources' IDs all get the one not-found answer.
func (g *Gateway) resolve(w http.ResponseWriter, ctx context.Context, route *Route, resource, pub string) (int64, bool) {
	if res, err := g.maker.Parse(pub); err != nil || res != resource {
		g.notFound(w, route.Name) // malformed or another resource's: the store is never touched
		return 0, false
	}
	internal, err := g.store.Resolve(ctx, pub)
	if errors.Is(err, mapping.ErrNotFound) {
		g.notFound(w, route.Name)
		return 0, false
	}
	if err != nil {
		g.fail(w, route.Name, http.StatusServiceUnavailable, "store_unavailable", err)
		return 0, false
	}
	return internal, true
}

// target builds the upstream URL: the route's template with the internal ID, then the declared
// query parameters, checked and translated. Anything else in the customer's query is dropped.
func (g *Gateway) target(w http.ResponseWriter, r *http.Request, route *Route, internal int64, known *Known) (string, bool) {
	target := strings.Replace(route.Upstream, "{internal_id}", strconv.FormatInt(internal, 10), 1)
	if len(route.Query) == 0 || r.URL.RawQuery == "" {
		return target, true
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		g.badRequest(w, route.Name, "malformed query string")
		return "", false
	}
	pass := url.Values{}
	for name, t := range route.Query {
		vs := q[name]
		switch {
		case len(vs) == 0:
			continue
		case len(vs) > 1:
			g.badRequest(w, route.Name, "query parameter "+name+" is given more than once")
			return "", false
		}
		v := vs[0]
		if t.Type == "id" {
			in, ok := g.resolve(w, r.Context(), route, t.Resource, v)
			if !ok {
				return "", false
			}
			known.Add(in)
			v = strconv.FormatInt(in, 10)
		} else if v, err = t.queryValue(name, v); err != nil {
			g.badRequest(w, route.Name, err.Error())
			return "", false
		}
		pass.Set(name, v)
	}
	if len(pass) == 0 {
		return target, true
	}
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
	}
	return target + sep + pass.Encode(), true
}

func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, route *Route, target string, known *Known) {
	lim := g.perRoute[route]
	// The route's timeout bounds the whole exchange with the upstream: connect, headers, body.
	ctx, cancel := context.WithTimeout(r.Context(), lim.timeout)
	defer cancel()
	// HEAD is GET without the body: the upstream's GET answer, rebuilt and checked as for a GET,
	// gives the same status and headers (an upstream's HEAD has no body to rebuild or check).
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		g.fail(w, route.Name, http.StatusBadGateway, "upstream_error", err)
		return
	}
	req.Header.Set("Accept", "application/json")
	t0 := time.Now()
	resp, err := g.client.Do(req)
	g.upstream.WithLabelValues(route.Name).Observe(time.Since(t0).Seconds())
	if err != nil {
		g.upstreamFailed(w, r, route.Name, err)
		return
	}
	defer resp.Body.Close()
	code := resp.StatusCode
	switch {
	case code == http.StatusNotFound || code == http.StatusGone:
		g.notFound(w, route.Name)
		return
	case code >= 400 && code < 500:
		g.upstream4xx(w, route.Name, code)
		return
	case code >= 300 && code < 400:
		g.redirect(w, r, route, resp, known)
		return
	case code < 200 || code >= 300:
		g.fail(w, route.Name, http.StatusBadGateway, "upstream_error", fmt.Errorf("upstream answered %d", code))
		return
	}
	code, headers, out, err := g.rebuild(r, route, lim, resp, known)
	if err != nil {
		g.refuse(w, r, route.Name, err)
		return
	}
	// The rewrite slot and the body budget are free again before the customer reads: a slow
	// reader holds only its own connection.
	g.reply(w, r, route.Name, code, headers, out)
}

// upstreamFailed answers an exchange with the upstream that broke off: 504 when the route's
// timeout ran out (or the network's), 502 otherwise; a customer who went away is no upstream's
// fault.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, route string, err error) {
	var ne net.Error
	switch {
	case r.Context().Err() != nil:
		g.canceled(w, route, err)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		g.fail(w, route, http.StatusGatewayTimeout, "upstream_timeout", err)
	default:
		g.fail(w, route, http.StatusBadGateway, "upstream_error", err)
	}
}

// errBusy: a rewrite slot stayed taken for RewriteWait, or a body found no room in the budget.
var errBusy = errors.New("gateway: busy")

// firstChunk is the budget a body takes first; it doubles as the body grows, up to maxChunk at
// a time, so a trickling upstream holds about what it has sent.
const (
	firstChunk = 4 << 10
	maxChunk   = 64 << 10
)

// rebuild reads a 2xx upstream response and rebuilds it from the route's declarations: the body
// from its type, with public IDs, and the declared headers, checked against every internal ID
// of the response. The body is read within the body budget (no rewrite slot is held while an
// upstream sends), then rebuilt in a rewrite slot of the gateway and of the route, so the memory
// responses take is bounded whatever the upstreams send and however many customers ask, and a
// slow upstream holds nothing another route needs.
func (g *Gateway) rebuild(r *http.Request, route *Route, lim *routeLimits, resp *http.Response, known *Known) (int, http.Header, []byte, error) {
	if resp.ContentLength > g.o.MaxBody {
		return 0, nil, nil, fmt.Errorf("%w: body larger than %d bytes", errUpstream, g.o.MaxBody)
	}
	raw, held, err := g.readBody(lim, resp.Body)
	defer func() { g.giveBody(lim, held) }()
	if err != nil {
		return 0, nil, nil, err
	}
	code := resp.StatusCode
	var out []byte
	if len(bytes.TrimSpace(raw)) > 0 && code != http.StatusNoContent {
		if ct := resp.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
			return 0, nil, nil, unsafe("", "the upstream's body is not JSON")
		}
		release, err := g.rewriteSlot(r.Context(), lim)
		if err != nil {
			return 0, nil, nil, err
		}
		rw, err := Rewrite(raw, route.Response, g.detect, Limits{MaxDepth: g.o.MaxDepth, MaxIDs: 10 * g.o.MaxIDs, MaxOut: 4 * int(g.o.MaxBody)})
		g.giveBody(lim, held) // the rebuilt body is apart from the upstream's, which goes now
		held = 0
		if err == nil {
			var pubs map[int64]string
			if pubs, err = g.publish(r.Context(), rw.ids, known); err == nil {
				out, err = rw.Fill(pubs, known)
			}
		}
		release()
		if err != nil {
			return 0, nil, nil, err
		}
	}
	// Headers last: every internal ID of the response is known by now.
	headers, err := g.headers(r.Context(), route, resp.Header, known)
	if err != nil {
		return 0, nil, nil, err
	}
	return code, headers, out, nil
}

// readBody reads an upstream body whole, taking the body budget of the route and of the gateway
// as it grows; the caller gives back held bytes (giveBody), whatever the error. A body that finds
// no room gets errBusy at once: waiting would let slow upstreams hold the budget longer still.
func (g *Gateway) readBody(lim *routeLimits, body io.Reader) (buf []byte, held int64, err error) {
	limit := g.o.MaxBody + 1 // a byte more than allowed tells a body too large
	for {
		if int64(len(buf)) == held {
			if held == limit {
				return buf, held, fmt.Errorf("%w: body larger than %d bytes", errUpstream, g.o.MaxBody)
			}
			grow := min(max(held, firstChunk), maxChunk, limit-held)
			if !lim.bodies.TryAcquire(grow) {
				return buf, held, errBusy
			}
			if !g.bodies.TryAcquire(grow) {
				lim.bodies.Release(grow)
				return buf, held, errBusy
			}
			lim.held.Add(float64(grow))
			next := make([]byte, len(buf), held+grow)
			copy(next, buf)
			buf, held = next, held+grow
		}
		n, err := body.Read(buf[len(buf):held])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, held, nil
		}
		if err != nil {
			return buf, held, fmt.Errorf("%w: %w", errUpstream, err)
		}
	}
}

// giveBody gives back a body's budget; the body must not be used after.
func (g *Gateway) giveBody(lim *routeLimits, held int64) {
	if held > 0 {
		g.bodies.Release(held)
		lim.bodies.Release(held)
		lim.held.Sub(float64(held))
	}
}

// rewriteSlot waits up to RewriteWait for a rewrite slot of the route, then of the gateway (so
// a route at its own limit holds none of the gateway's), and returns the function that frees
// both.
func (g *Gateway) rewriteSlot(ctx context.Context, lim *routeLimits) (func(), error) {
	wait := time.NewTimer(g.o.RewriteWait)
	defer wait.Stop()
	select {
	case lim.rewrites <- struct{}{}:
	case <-wait.C:
		return nil, errBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case g.rewrites <- struct{}{}:
	case <-wait.C:
		<-lim.rewrites
		return nil, errBusy
	case <-ctx.Done():
		<-lim.rewrites
		return nil, ctx.Err()
	}
	return func() { <-g.rewrites; <-lim.rewrites }, nil
}

// errUpstream: the upstream's body could not be read whole.
var errUpstream = errors.New("gateway: upstream body")

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// reply answers a rebuilt response; a HEAD gets the status and headers a GET gets, no body.
func (g *Gateway) reply(w http.ResponseWriter, r *http.Request, route string, code int, headers http.Header, body []byte) {
	g.requests.WithLabelValues(route, "ok").Inc()
	h := w.Header()
	for k, v := range headers {
		h[k] = v
	}
	switch {
	case body != nil:
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)+1))
	case code != http.StatusNoContent && code != http.StatusNotModified:
		h.Set("Content-Length", "0") // what the server adds to a GET's empty body, set for a HEAD too
	}
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	if body != nil && r.Method != http.MethodHead {
		_, _ = w.Write(body)
		_, _ = w.Write([]byte{'\n'})
	}
}

// headers returns the upstream headers the route declares, checked: a plain header that holds an
// internal ID (the response's own, or any that looks like one) makes the response unsafe, and a
// location is rewritten to a public path.
func (g *Gateway) headers(ctx context.Context, route *Route, in http.Header, known *Known) (http.Header, error) {
	out := http.Header{}
	scan := g.detect.scanner()
	for name, kind := range route.headers {
		vs := in.Values(name)
		if len(vs) == 0 {
			continue
		}
		if kind == "location" {
			if len(vs) > 1 {
				return nil, unsafe(name, "more than one location")
			}
			loc, err := g.location(ctx, route, vs[0])
			if err != nil {
				return nil, err
			}
			out.Set(name, loc)
			continue
		}
		for _, v := range vs {
			if scan.find([]byte(v)) != "" || known.contains([]byte(v)) {
				return nil, unsafe(name, "a header holds an internal ID")
			}
			out.Add(name, v)
		}
	}
	return out, nil
}

// location rewrites an upstream URL to the public path of the route whose upstream it names,
// with its internal ID published under that route's resource. Any other location is unsafe.
func (g *Gateway) location(ctx context.Context, route *Route, loc string) (string, error) {
	u, err := route.up.Parse(loc)
	if err != nil {
		return "", unsafe("Location", "not a URL")
	}
	for _, rt := range g.routes {
		if rt.upPrefix == "" || u.Scheme != rt.up.Scheme || u.Host != rt.up.Host {
			continue
		}
		rest, ok := strings.CutPrefix(u.EscapedPath(), rt.upPrefix)
		if !ok {
			continue
		}
		digits, ok := strings.CutSuffix(rest, rt.upSuffix)
		if !ok {
			continue
		}
		id, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || id < 0 || strconv.FormatInt(id, 10) != digits {
			continue
		}
		pubs, err := g.publish(ctx, []pendingID{{id: id, resource: rt.Resource, field: "Location"}}, nil)
		if err != nil {
			return "", err
		}
		return rt.prefix + pubs[id] + rt.suffix, nil
	}
	return "", unsafe("Location", "names no route's upstream")
}

// publish finds the public ID of every internal ID of a response: the ones that have one are
// looked up (concurrently, so a Redis store pipelines them), and at most MaxNewIDs new ones are
// published. An ID declared as two resources, or whose public ID is another resource's, is a
// contradiction in the route or the upstream: unsafe, never a public ID with the wrong prefix.
func (g *Gateway) publish(ctx context.Context, where []pendingID, known *Known) (map[int64]string, error) {
	want := make(map[int64]int, len(where)) // id → index of its first occurrence
	var uniq []int64
	for i, p := range where {
		j, seen := want[p.id]
		if !seen {
			want[p.id] = i
			uniq = append(uniq, p.id)
			if known != nil {
				known.Add(p.id)
			}
			continue
		}
		if where[j].resource != p.resource {
			return nil, unsafe(p.field, "one id is declared as %s and as %s", where[j].resource, p.resource)
		}
	}
	if len(uniq) > g.o.MaxIDs {
		return nil, unsafe("", "%d ids in one response; at most %d", len(uniq), g.o.MaxIDs)
	}
	pubs := make([]string, len(uniq))
	found := make([]bool, len(uniq))
	grp, gctx := errgroup.WithContext(ctx)
	grp.SetLimit(32)
	for i, id := range uniq {
		grp.Go(func() error {
			pub, err := g.store.Lookup(gctx, id)
			if errors.Is(err, mapping.ErrNotFound) {
				return nil
			}
			pubs[i], found[i] = pub, err == nil
			return err
		})
	}
	if err := grp.Wait(); err != nil {
		return nil, err
	}
	var missing []int
	for i := range uniq {
		if !found[i] {
			missing = append(missing, i)
		}
	}
	if len(missing) > g.o.MaxNewIDs {
		return nil, unsafe("", "%d ids have no public id yet; one response may publish at most %d", len(missing), g.o.MaxNewIDs)
	}
	grp, gctx = errgroup.WithContext(ctx)
	grp.SetLimit(32)
	for _, i := range missing {
		res := where[want[uniq[i]]].resource
		grp.Go(func() error {
			pub, err := g.store.Publish(gctx, uniq[i], func() (string, error) { return g.maker.New(res) })
			pubs[i] = pub
			return err
		})
	}
	if err := grp.Wait(); err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(uniq))
	for i, id := range uniq {
		j := want[id]
		if res, err := g.maker.Parse(pubs[i]); err != nil || res != where[j].resource {
			return nil, unsafe(where[j].field, "declared as %s, but the id's public id is of another resource", where[j].resource)
		}
		out[id] = pubs[i]
	}
	return out, nil
}

// health answers the gateway's /healthz: 200 when the mapping store answers. The answer is
// kept for a second, so health checks cost the store one lookup a second however many come.
func (g *Gateway) health(w http.ResponseWriter, r *http.Request) {
	g.healthMu.Lock()
	defer g.healthMu.Unlock()
	if time.Since(g.healthAt) > time.Second {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		_, err := g.store.Lookup(ctx, 0)
		cancel()
		g.healthOK, g.healthAt = err == nil || errors.Is(err, mapping.ErrNotFound), time.Now()
		if !g.healthOK {
			g.log.Warn("gateway health: mapping store unavailable", "error", err.Error())
		}
	}
	if !g.healthOK {
		writeJSON(w, http.StatusServiceUnavailable, `{"status":"unavailable"}`)
		return
	}
	writeJSON(w, http.StatusOK, `{"status":"ok"}`)
}

// notFound is the one answer for unknown and malformed public IDs, unknown paths and an
// upstream's 404 alike.
func (g *Gateway) notFound(w http.ResponseWriter, route string) {
	g.requests.WithLabelValues(route, "not_found").Inc()
	writeJSON(w, http.StatusNotFound, bodyNotFound)
}

func (g *Gateway) badRequest(w http.ResponseWriter, route, msg string) {
	g.requests.WithLabelValues(route, "bad_request").Inc()
	writeJSON(w, http.StatusBadRequest, errorBody(msg))
}

// upstream4xx answers an upstream's 4xx with the gateway's own body for that status.
func (g *Gateway) upstream4xx(w http.ResponseWriter, route string, code int) {
	g.requests.WithLabelValues(route, "upstream_4xx").Inc()
	if code == http.StatusUnauthorized || code == http.StatusProxyAuthRequired {
		code = http.StatusForbidden // the customer cannot authenticate to an upstream
	}
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	msg := strings.ToLower(http.StatusText(code))
	if msg == "" {
		code, msg = http.StatusBadRequest, "bad request"
	}
	writeJSON(w, code, errorBody(msg))
}

// redirect passes an upstream redirect only when the route declares Location and it names a
// route's upstream; the customer then gets that route's public path.
func (g *Gateway) redirect(w http.ResponseWriter, r *http.Request, route *Route, resp *http.Response, known *Known) {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		// The status code only: the reason phrase is the upstream's text.
		g.fail(w, route.Name, http.StatusBadGateway, "upstream_error", fmt.Errorf("upstream answered %d", resp.StatusCode))
		return
	}
	if route.headers["Location"] != "location" {
		g.refuse(w, r, route.Name, unsafe("Location", "an upstream redirect, and the route declares no location"))
		return
	}
	headers, err := g.headers(r.Context(), route, resp.Header, known)
	if err != nil {
		g.refuse(w, r, route.Name, err)
		return
	}
	if headers.Get("Location") == "" {
		g.refuse(w, r, route.Name, unsafe("Location", "an upstream redirect without a location"))
		return
	}
	g.reply(w, r, route.Name, resp.StatusCode, headers, nil)
}

// refuse answers 502 for an unsafe response, 503 when a limit was reached or the store failed on
// the way, 502 or 504 when the upstream's body broke off; the log names the route and field,
// never the value.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, route string, err error) {
	var ue *UnsafeError
	switch {
	case errors.As(err, &ue):
		g.requests.WithLabelValues(route, "unsafe_response").Inc()
		g.log.Warn("gateway refused an upstream response", "route", route, "field", ue.Field, "reason", ue.Reason)
		writeJSON(w, http.StatusBadGateway, `{"error":"bad gateway"}`)
	case r.Context().Err() != nil:
		g.canceled(w, route, err)
	case errors.Is(err, errBusy):
		g.busy(w, route)
	case errors.Is(err, errUpstream):
		g.upstreamFailed(w, r, route, err)
	default:
		g.fail(w, route, http.StatusServiceUnavailable, "store_unavailable", err)
	}
}

// fail answers without any upstream detail; the detail goes to the log, with every quoted string
// removed (an upstream's bytes in a transport error, the upstream URL with its internal ID).
func (g *Gateway) fail(w http.ResponseWriter, route string, code int, outcome string, err error) {
	g.requests.WithLabelValues(route, outcome).Inc()
	g.log.Warn("gateway request failed", "route", route, "outcome", outcome, "error", serve.Redact(err.Error()))
	msg := map[int]string{http.StatusBadGateway: "bad gateway", http.StatusGatewayTimeout: "gateway timeout",
		http.StatusServiceUnavailable: "service unavailable"}[code]
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, code, errorBody(msg))
}

// canceled counts a request whose customer went away before the answer; there is no one to tell,
// so the log says it at debug level only.
func (g *Gateway) canceled(w http.ResponseWriter, route string, err error) {
	g.requests.WithLabelValues(route, "canceled").Inc()
	g.log.Debug("gateway request canceled by the customer", "route", route, "error", serve.Redact(err.Error()))
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, errorBody("service unavailable"))
}
