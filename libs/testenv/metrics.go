package testenv

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Labels picks series by some of their labels: a series matches when it has each of them with
// that value, whatever others it has (such as the region label every series of a service gets).
type Labels map[string]string

// Metrics are the metric families of one scrape or one gathering, by name.
type Metrics map[string]*dto.MetricFamily

// Gatherer is what a registry of the Prometheus client is (prometheus.Gatherer).
type Gatherer interface {
	Gather() ([]*dto.MetricFamily, error)
}

// Scrape reads the Prometheus text page at url with c (http.DefaultClient when nil), failing t
// when it cannot be read or parsed.
func Scrape(t testing.TB, c *http.Client, url string) Metrics {
	t.Helper()
	m, err := ScrapeErr(c, url)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ScrapeErr is Scrape returning its error, for a caller that is not a test's goroutine or waits
// for a page that may not answer yet.
func ScrapeErr(c *http.Client, url string) (Metrics, error) {
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return mfs, nil
}

// ParseMetrics parses a Prometheus text page already read, failing t when it is not one.
func ParseMetrics(t testing.TB, text string) Metrics {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("a metrics page: %v", err)
	}
	return mfs
}

// Gather gathers g, failing t when it cannot.
func Gather(t testing.TB, g Gatherer) Metrics {
	t.Helper()
	m, err := GatherErr(g)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// GatherErr is Gather returning its error.
func GatherErr(g Gatherer) (Metrics, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	m := Metrics{}
	for _, mf := range mfs {
		m[mf.GetName()] = mf
	}
	return m, nil
}

// Metric scrapes the page at url with http.DefaultClient and returns the value of the series of
// name that has labels, failing t when there is none.
func Metric(t testing.TB, url, name string, labels Labels) float64 {
	t.Helper()
	return Scrape(t, nil, url).Get(t, name, labels)
}

// GatheredMetric gathers g and returns the value of the series of name that has labels, failing
// t when there is none.
func GatheredMetric(t testing.TB, g Gatherer, name string, labels Labels) float64 {
	t.Helper()
	return Gather(t, g).Get(t, name, labels)
}

// Value returns the value of the first series of name that has labels (a counter's, a gauge's or
// an untyped one's; a histogram's or summary's count), and whether there is one.
func (m Metrics) Value(name string, labels Labels) (float64, bool) {
	if s := m.series(name, labels); len(s) > 0 {
		return value(s[0]), true
	}
	return 0, false
}

// Get is Value failing t when there is no such series.
func (m Metrics) Get(t testing.TB, name string, labels Labels) float64 {
	t.Helper()
	v, ok := m.Value(name, labels)
	if !ok {
		t.Fatalf("no series %s%s", name, labels)
	}
	return v
}

// Sum is the sum of the values of every series of name that has labels: 0 when there is none.
func (m Metrics) Sum(name string, labels Labels) float64 {
	var sum float64
	for _, s := range m.series(name, labels) {
		sum += value(s)
	}
	return sum
}

// Series is one series a test expects, by its name and some of its labels, with its value.
type Series struct {
	Name   string
	Labels Labels
	Value  float64
}

// Expect marks t failed, and goes on, for each series of want that m lacks or holds with
// another value.
func (m Metrics) Expect(t testing.TB, want ...Series) {
	t.Helper()
	for _, w := range want {
		if got, ok := m.Value(w.Name, w.Labels); !ok {
			t.Errorf("no series %s%s", w.Name, w.Labels)
		} else if got != w.Value {
			t.Errorf("%s%s = %v, want %v", w.Name, w.Labels, got, w.Value)
		}
	}
}

// Count is how many series of name have labels.
func (m Metrics) Count(name string, labels Labels) int { return len(m.series(name, labels)) }

func (m Metrics) series(name string, labels Labels) []*dto.Metric {
	var out []*dto.Metric
	mf := m[name]
	if mf == nil {
		return nil
	}
	for _, s := range mf.GetMetric() {
		if labels.match(s) {
			out = append(out, s)
		}
	}
	return out
}

func (l Labels) match(s *dto.Metric) bool {
	have := map[string]string{}
	for _, p := range s.GetLabel() {
		have[p.GetName()] = p.GetValue()
	}
	for k, v := range l {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// String writes the labels as a selector, {a="x",b="y"}, sorted by name.
func (l Labels) String() string {
	if len(l) == 0 {
		return ""
	}
	var ps []string
	for k, v := range l {
		ps = append(ps, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(ps)
	return "{" + strings.Join(ps, ",") + "}"
}

func value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	case s.Untyped != nil:
		return s.GetUntyped().GetValue()
	case s.Histogram != nil:
		return float64(s.GetHistogram().GetSampleCount())
	case s.Summary != nil:
		return float64(s.GetSummary().GetSampleCount())
	}
	return 0
}
