package server

import (
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/prometheus/client_golang/prometheus"
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
