package server

import (
	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/prometheus/client_golang/prometheus"
)

// reasonVolatile names a mapping store that can lose acknowledged mappings: the reason of a
// refused publish (503) and of /healthz's degraded answer.
const reasonVolatile = "store_volatile"

// watchVolatile exports idgen_publicid_store_volatile, which follows the Redis store's readings of
// its persistence (at start-up, then every --redis-durability-check), and logs a store accepted
// volatile at start-up. The store logs the changes while it runs.
func (s *Server) watchVolatile() {
	rs, _ := s.store.(*redismap.Store)
	s.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_publicid_store_volatile",
		Help: "1 while the mapping store's last reading of its persistence (at start-up, then every --redis-durability-check) " +
			"found it can lose acknowledged mappings (AOF off, or an fsync policy that loses or cannot confirm writes): publishes " +
			"are refused (store_volatile) unless --accept-volatile-store. Else 0."},
		func() float64 {
			if rs == nil {
				return 0
			}
			if v, _ := rs.Volatile(); v {
				return 1
			}
			return 0
		}))
	if rs == nil {
		return
	}
	if v, why := rs.Volatile(); v {
		s.log.Error("the mapping store is volatile: acknowledged mappings can be lost, and links customers hold would stop resolving; accepted by --accept-volatile-store",
			"reason", why)
	}
}

// storeHealth is /healthz's answer about the store: nil when it is durable (or not Redis), else
// a degraded body (served with 200: resolves still work, so the instance stays in rotation)
// that says whether publishes are refused.
func (s *Server) storeHealth() *healthz.Service {
	rs, ok := s.store.(*redismap.Store)
	if !ok {
		return nil
	}
	v, why := rs.Volatile()
	if !v {
		return nil
	}
	what := "publishes are refused until the store is durable again; resolves work: "
	if s.cfg.AcceptVolatileStore {
		what = "publishes go on (--accept-volatile-store), and a mapping acknowledged now can be lost: "
	}
	h := healthz.Degraded(reasonVolatile, "the mapping store is volatile: "+what+why)
	return &h
}
