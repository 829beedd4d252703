package testenv_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
)

const page = `# TYPE idgen_requests_total counter
idgen_requests_total{code="ok",region="us-east-1",route="/a"} 3
idgen_requests_total{code="bad",region="us-east-1",route="/a"} 2
idgen_requests_total{code="ok",region="us-east-1",route="/b"} 1
# TYPE idgen_up gauge
idgen_up 1
# TYPE idgen_duration_seconds histogram
idgen_duration_seconds_bucket{route="/a",le="+Inf"} 4
idgen_duration_seconds_sum{route="/a"} 0.5
idgen_duration_seconds_count{route="/a"} 4
`

// TestScrape: a page is read by some of each series' labels: the first series that has them,
// the sum of all that have them, how many have them, a histogram's count; a page that does not
// answer 200 is an error.
func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(page))
	}))
	defer srv.Close()
	m := testenv.Scrape(t, nil, srv.URL+"/metrics")
	if v, ok := m.Value("idgen_requests_total", testenv.Labels{"code": "bad"}); !ok || v != 2 {
		t.Errorf("code=bad: %v %v, want 2", v, ok)
	}
	if v, ok := m.Value("idgen_requests_total", testenv.Labels{"code": "ok", "route": "/c"}); ok {
		t.Errorf("route=/c: %v, want no series", v)
	}
	if s := m.Sum("idgen_requests_total", testenv.Labels{"code": "ok"}); s != 4 {
		t.Errorf("sum of code=ok: %v, want 4", s)
	}
	if n := m.Count("idgen_requests_total", testenv.Labels{"region": "us-east-1"}); n != 3 {
		t.Errorf("%d series of us-east-1, want 3", n)
	}
	if v := testenv.Metric(t, srv.URL+"/metrics", "idgen_up", nil); v != 1 {
		t.Errorf("idgen_up %v", v)
	}
	if v := m.Get(t, "idgen_duration_seconds", testenv.Labels{"route": "/a"}); v != 4 {
		t.Errorf("histogram count %v, want 4", v)
	}
	m.Expect(t, testenv.Series{Name: "idgen_requests_total", Labels: testenv.Labels{"route": "/b"}, Value: 1})
	if _, err := testenv.ScrapeErr(nil, srv.URL+"/nowhere"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a page that answers 404: %v", err)
	}
	if got := testenv.ParseMetrics(t, page).Sum("idgen_requests_total", nil); got != 6 {
		t.Errorf("parsed: sum %v, want 6", got)
	}
}
