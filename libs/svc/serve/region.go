package serve

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// RegionLabeled returns g with a region label on every idgen_* series that has none, so that
// every rule grouped by region names it, whichever scrape configuration collects the series
// (series that carry a region already, such as the lease keeper's, keep theirs). An empty
// region adds nothing.
func RegionLabeled(g prometheus.Gatherer, region string) prometheus.Gatherer {
	if region == "" {
		return g // no region to name (tests that build a configuration by hand)
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		for _, mf := range mfs {
			if !strings.HasPrefix(mf.GetName(), "idgen_") {
				continue
			}
			for _, m := range mf.Metric {
				if slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == "region" }) {
					continue
				}
				m.Label = append(m.Label, &dto.LabelPair{Name: proto.String("region"), Value: proto.String(region)})
				slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
			}
		}
		return mfs, err
	})
}
