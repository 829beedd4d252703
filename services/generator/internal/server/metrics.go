package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type metrics struct {
	*serve.RequestMetrics                                              // requests, duration, in flight: as every service
	served                serve.LabelCache[string, prometheus.Counter] // idsServed by caller
	idsServed             *prometheus.CounterVec
	quotaRejections       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		RequestMetrics: serve.NewRequestMetrics(reg),
		idsServed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idgen_server_ids_served_total", Help: "IDs handed to callers, by caller.",
		}, []string{"caller"}),
		quotaRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idgen_server_quota_rejections_total", Help: "Requests refused for being over the caller's quota.",
		}, []string{"caller"}),
	}
	reg.MustRegister(m.idsServed, m.quotaRejections)
	return m
}

// servedBy counts n IDs handed to caller.
func (m *metrics) servedBy(caller string, n int) {
	m.served.Get(caller, func() prometheus.Counter { return m.idsServed.WithLabelValues(caller) }).Add(float64(n))
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
