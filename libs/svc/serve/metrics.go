package serve

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname nanotime

	"connectrpc.com/connect"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// RequestMetrics are the request metrics every service exports under the same names: requests
// by route, protocol and code (Connect code names for every protocol, REST statuses mapped by
// apierr.CodeOfStatus), their duration by route, and the requests in flight. Connect, gRPC and
// gRPC-Web requests are observed by Interceptor, REST requests by Echo, and InFlight wraps the
// whole handler.
type RequestMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	children LabelCache[childKey, *child]   // a request costs no label hashing
	routes   LabelCache[string, *restRoute] // REST series by echo route path
	restMu   sync.Mutex
	rest     map[*echo.Echo]*restRoutes // the routes of the echo instances REST built (restPath)
}

// restRoute is a REST route's series: its name as exported, its duration and its requests by
// status (each status's code resolved once).
type restRoute struct {
	name     string
	duration prometheus.Observer
	ok       atomic.Pointer[prometheus.Counter] // byStatus's 200, the usual answer, without a map lookup
	byStatus LabelCache[int, prometheus.Counter]
}

type childKey struct{ route, protocol, code string }

type child struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// NewRequestMetrics registers the metrics on reg.
func NewRequestMetrics(reg prometheus.Registerer) *RequestMetrics {
	m := &RequestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_server_requests_total",
			Help: "Requests served, by route, protocol and outcome code (Connect code names for every protocol: ok, invalid_argument, not_found, resource_exhausted, unavailable, deadline_exceeded, canceled, …)."},
			[]string{"route", "protocol", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "idgen_server_request_duration_seconds",
			Help:    "Time to serve a request, by route.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}}, []string{"route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "idgen_server_requests_in_flight",
			Help: "Requests being served now."}),
	}
	reg.MustRegister(m.requests, m.duration, m.inFlight)
	return m
}

// Zero exports a route's series at zero from the first scrape.
func (m *RequestMetrics) Zero(route, protocol string, codes ...string) {
	for _, c := range codes {
		m.requests.WithLabelValues(route, protocol, c)
	}
	m.duration.WithLabelValues(route)
}

func (m *RequestMetrics) observe(route, protocol, code string, d time.Duration) {
	ch := m.children.Get(childKey{route, protocol, code}, func() *child {
		return &child{requests: m.requests.WithLabelValues(route, protocol, code), duration: m.duration.WithLabelValues(route)}
	})
	ch.requests.Inc()
	ch.duration.Observe(d.Seconds())
}

// restRoute returns the series of the REST route at echo path p ("" when no route matched):
// the route as exported is the path with echo's escaped colons (`\:`) plain, or "unmatched".
func (m *RequestMetrics) restRoute(p string) *restRoute {
	return m.routes.Get(p, func() *restRoute {
		name := strings.ReplaceAll(p, `\:`, ":")
		if name == "" {
			name = "unmatched"
		}
		return &restRoute{name: name, duration: m.duration.WithLabelValues(name)}
	})
}

// observe counts a request of the route answered with status and its duration.
func (r *restRoute) observe(m *RequestMetrics, status int, d time.Duration) {
	if c := r.ok.Load(); c != nil && status == http.StatusOK {
		(*c).Inc()
	} else {
		c := r.byStatus.Get(status, func() prometheus.Counter {
			return m.requests.WithLabelValues(r.name, "rest", apierr.CodeOfStatus(status))
		})
		if status == http.StatusOK {
			r.ok.Store(&c)
		}
		c.Inc()
	}
	r.duration.Observe(d.Seconds())
}

// nanotime is the runtime's monotonic clock, the one time.Since reads: a request's duration
// needs no wall-clock reading (time.Now reads both clocks).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// LabelCache holds metric children by their labels: a map read without locks or allocation and
// copied on each (rare) addition, for labels that are few and never removed.
type LabelCache[K comparable, V any] struct {
	cur atomic.Pointer[map[K]V]
	mu  sync.Mutex // serializes additions
}

// Get returns k's child, making it with newV the first time.
func (c *LabelCache[K, V]) Get(k K, newV func() V) V {
	if cur := c.cur.Load(); cur != nil {
		if v, ok := (*cur)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := map[K]V{}
	if cur := c.cur.Load(); cur != nil {
		if v, ok := (*cur)[k]; ok {
			return v
		}
		for k2, v := range *cur {
			next[k2] = v
		}
	}
	v := newV()
	next[k] = v
	c.cur.Store(&next)
	return v
}

// Interceptor observes Connect, gRPC and gRPC-Web calls.
func (m *RequestMetrics) Interceptor() connect.HandlerOption {
	return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			start := nanotime()
			resp, err := next(ctx, req)
			code := "ok"
			if c := apierr.Code(ctx, err); c != 0 {
				code = c.String()
			}
			m.observe(req.Spec().Procedure, req.Peer().Protocol, code, time.Duration(nanotime()-start))
			return resp, err
		}
	}))
}

// Echo returns h observed as a request of the REST route at echo path p. check, when not nil,
// runs first, observed like the handler: its error is the request's answer and h is not called.
// An error is answered by answer (which returns the status it answered with, or would have on a
// response already committed), so the handler returned answers its own errors and returns nil.
// It is built once per route (REST): echo builds each request's middleware chain anew.
func (m *RequestMetrics) Echo(p string, check func(echo.Context) error, answer func(error, echo.Context) int, h echo.HandlerFunc) echo.HandlerFunc {
	rt := m.restRoute(p)
	return func(c echo.Context) error {
		start := nanotime()
		var err error
		if check != nil {
			err = check(c)
		}
		if err == nil {
			err = h(c)
		}
		code := c.Response().Status
		if err != nil {
			code = answer(err, c)
		}
		rt.observe(m, code, time.Duration(nanotime()-start))
		return nil
	}
}

// echoUnrouted answers and observes a REST request that no route's handler took (echo's own 404
// or 405, err), under the path echo matched or as unmatched; check runs as Echo runs it, and its
// error, if any, is the answer.
func (m *RequestMetrics) echoUnrouted(err error, c echo.Context, check func(echo.Context) error, answer func(error, echo.Context) int) {
	start := nanotime()
	if check != nil {
		if cerr := check(c); cerr != nil {
			c.Response().Header().Del(echo.HeaderAllow) // as when check ran before echo's 405 handler
			err = cerr
		}
	}
	code := answer(err, c)
	m.restRoute(c.Path()).observe(m, code, time.Duration(nanotime()-start))
}

// InFlight counts the requests h is serving.
func (m *RequestMetrics) InFlight(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		h.ServeHTTP(w, r)
	})
}
