package serve_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/prometheus/client_golang/prometheus"
)

// TestRegionLabeled: every idgen_* series is served with the region, a series with its own region
// keeps it, and other families are left alone.
func TestRegionLabeled(t *testing.T) {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_server_requests_total", Help: "h"}, []string{"route", "code"})
	requests.WithLabelValues("/v1/ids", "ok").Add(3)
	own := prometheus.NewGauge(prometheus.GaugeOpts{Name: "idgen_lease_held", Help: "h", ConstLabels: prometheus.Labels{"region": "eu-west-1"}})
	other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "go_like_total", Help: "h"})
	reg.MustRegister(requests, own, other)
	rec := httptest.NewRecorder()
	serve.MetricsHandler(serve.RegionLabeled(reg, "us-east-1")).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`idgen_server_requests_total{code="ok",region="us-east-1",route="/v1/ids"} 3`,
		`idgen_lease_held{region="eu-west-1"} 0`,
		"go_like_total 0",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %s in\n%s", want, b)
		}
	}
}
