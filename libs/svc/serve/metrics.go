package serve

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	children LabelCache[childKey, *child] // a request costs no label hashing
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
			start := time.Now()
			resp, err := next(ctx, req)
			code := "ok"
			if c := apierr.Code(ctx, err); c != 0 {
				code = c.String()
			}
			m.observe(req.Spec().Procedure, req.Peer().Protocol, code, time.Since(start))
			return resp, err
		}
	}))
}

// Echo observes REST requests; status gives the status an error will be answered with. check,
// when not nil, runs first, observed like the handler: its error is the request's answer and the
// handler is not called. (One middleware for both: echo builds each request's chain anew, a
// closure per middleware.)
func (m *RequestMetrics) Echo(status func(error) int, check func(echo.Context) error) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			var err error
			if check != nil {
				err = check(c)
			}
			if err == nil {
				err = next(c)
			}
			code := c.Response().Status
			if err != nil {
				code = status(err)
			}
			route := c.Path()
			if strings.Contains(route, `\:`) {
				route = strings.ReplaceAll(route, `\:`, ":")
			}
			if route == "" {
				route = "unmatched"
			}
			m.observe(route, "rest", apierr.CodeOfStatus(code), time.Since(start))
			return err
		}
	}
}

// InFlight counts the requests h is serving.
func (m *RequestMetrics) InFlight(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		h.ServeHTTP(w, r)
	})
}
