package regions

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's series. The region a call went to is store_region, not region: every
// idgen_* series carries the process's own region as region (serve.RegionLabeled, and the scrape's
// target labels), so a rule can group calls by the calling and the called region.
type metrics struct {
	calls     *prometheus.CounterVec
	fanouts   *prometheus.CounterVec
	publishes *prometheus.CounterVec
	filled    prometheus.Counter
	repairs   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, s *Store) metrics {
	m := metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_publicid_region_calls_total",
			Help: "Calls to each region's mapping store (store_region: the local one and the others; the process's own region is its region label), by operation and result: ok, not_found, unavailable (no answer within --store-timeout, or refused), error, canceled (not needed any more: another region answered first)."},
			[]string{"store_region", "op", "result"}),
		fanouts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_publicid_fanouts_total",
			Help: "Resolves the local region's store did not answer with a mapping, by outcome: found (in another region), found_local (the local store answered after the others were asked), not_found (no region has it), unavailable (too many regions did not answer to say), refused (too many fan-outs in flight), negative_cache (known unknown, asked of no region)."},
			[]string{"result"}),
		publishes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_publicid_region_publishes_total",
			Help: "Publishes through the cross-region store, by outcome: ok (held by as many regions as copies), short (too few regions answered: not acknowledged), filling (the local region is being filled: not acknowledged), chosen_away_from_owner (the owner region did not answer and another chose the public id), two_public_ids (a region held another public id for the internal id: both resolve)."},
			[]string{"result"}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_publicid_repairs_total",
			Help: "Copies owed to a region a mapping belongs to (its owner or the owner's peer) that did not answer at the publish (another region stood in), by outcome: queued, copied (later), dropped (the queue was full), failed."},
			[]string{"result"}),
		filled: prometheus.NewCounter(prometheus.CounterOpts{Name: "idgen_publicid_fill_mappings_total",
			Help: "Mappings copied into the local region's store by its fill, each read back."}),
	}
	if reg == nil {
		return m
	}
	reg.MustRegister(m.calls, m.fanouts, m.publishes, m.filled, m.repairs,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_publicid_repairs_pending",
			Help: "Copies still owed to the regions their mappings belong to, tried again every 5 s while this process runs (a process that ends drops them: the mapping is still in two regions)."},
			func() float64 { return float64(s.Repairs()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_publicid_copies_required",
			Help: "How many regions must hold a mapping before a publish is acknowledged (the regions file's copies): 2, or 1 when an operator said so, and then one lost region can lose acknowledged mappings."},
			func() float64 { return float64(s.Copies()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_publicid_region_filled",
			Help: "1 when the local region's mapping store is filled (holds every mapping it should), 0 while it is being filled from the other regions: it then takes no customers and acknowledges no publish."},
			func() float64 {
				if s.local.filled.Load() {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_publicid_negative_cache_entries",
			Help: "Public IDs remembered as unknown to every region (for the negative cache's TTL)."},
			func() float64 { return float64(s.neg.len()) }))
	for _, r := range s.all {
		for _, op := range []string{"resolve", "lookup", "publish", "copy"} {
			for _, res := range []string{"ok", "not_found", "unavailable"} {
				m.calls.WithLabelValues(r.name, op, res)
			}
		}
	}
	for _, res := range []string{"found", "found_local", "not_found", "unavailable", "refused", "negative_cache"} {
		m.fanouts.WithLabelValues(res)
	}
	for _, res := range []string{"queued", "copied", "dropped", "failed"} {
		m.repairs.WithLabelValues(res)
	}
	for _, res := range []string{"ok", "short", "filling", "chosen_away_from_owner", "two_public_ids"} {
		m.publishes.WithLabelValues(res)
	}
	return m
}
