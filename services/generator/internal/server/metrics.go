package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type metrics struct {
	children        cache[childKey, *child]           // a request costs no label hashing
	served          cache[string, prometheus.Counter] // idsServed by caller
	requests        *prometheus.CounterVec
	latency         *prometheus.HistogramVec
	idsServed       *prometheus.CounterVec
	quotaRejections *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idgen_server_requests_total", Help: "Requests served, by route, protocol and outcome code (Connect code names for every protocol: ok, invalid_argument, resource_exhausted, unavailable, deadline_exceeded, canceled, …).",
		}, []string{"route", "protocol", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "idgen_server_request_duration_seconds", Help: "Time to serve a request, by route.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"route"}),
		idsServed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idgen_server_ids_served_total", Help: "IDs handed to callers, by caller.",
		}, []string{"caller"}),
		quotaRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idgen_server_quota_rejections_total", Help: "Requests refused for being over the caller's quota.",
		}, []string{"caller"}),
	}
	reg.MustRegister(m.requests, m.latency, m.idsServed, m.quotaRejections)
	return m
}

// childKey names a request's metric children: an HTTP status for REST, a Connect code otherwise.
type childKey struct {
	route, protocol string
	status          int
	code            connect.Code // 0: ok
}

type child struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// observe counts one request and its duration.
func (m *metrics) observe(key childKey, d time.Duration) {
	ch := m.children.get(key, func() *child {
		code := "ok"
		switch {
		case key.protocol == "rest":
			code = apierr.CodeOfStatus(key.status)
		case key.code != 0:
			code = key.code.String()
		}
		return &child{
			requests: m.requests.WithLabelValues(key.route, key.protocol, code),
			latency:  m.latency.WithLabelValues(key.route),
		}
	})
	ch.requests.Inc()
	ch.latency.Observe(d.Seconds())
}

// servedBy counts n IDs handed to caller.
func (m *metrics) servedBy(caller string, n int) {
	m.served.get(caller, func() prometheus.Counter { return m.idsServed.WithLabelValues(caller) }).Add(float64(n))
}

// cache is a map read without locks or allocation and copied on each (rare) addition: metric
// children by their labels, which are few and never removed.
type cache[K comparable, V any] struct {
	cur atomic.Pointer[map[K]V]
	mu  sync.Mutex // serializes additions
}

func (c *cache[K, V]) get(k K, newV func() V) V {
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

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorLog: nil})
}

type reqIDKey struct{}

var (
	reqPrefix = func() string { var b [4]byte; _, _ = rand.Read(b[:]); return hex.EncodeToString(b[:]) + "-" }()
	reqSeq    atomic.Uint64
)

// withContext builds each request's context once: its X-Request-Id (or a new one: a per-process
// prefix and a counter, echoed in the response) and its resolved caller.
func withContext(rv *auth.Resolver, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 128 {
			id = reqPrefix + strconv.FormatUint(reqSeq.Add(1), 10)
		}
		w.Header().Set("X-Request-Id", id)
		ctx := rv.Attach(context.WithValue(r.Context(), reqIDKey{}, id), r)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(reqIDKey{}).(string)
	return id
}
