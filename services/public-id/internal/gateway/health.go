package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/services/public-id/mapping"
)

// health is the gateway's /healthz answer, a healthz.Service as every service's: 200 ok when the
// mapping store answers (Options.Probe), else 503 unavailable (reason store_unavailable; the
// store's error goes to the log, not to the caller), or region_filling while the region's store
// is being filled from the other regions. The answer is kept for a second, so health checks cost the
// store one lookup a second however many come. From the start of a shutdown the server answers
// 503 draining before the gateway sees the request (serve.HealthzWhileDraining).
func (g *Gateway) health(ctx context.Context) *answer {
	g.healthMu.Lock()
	defer g.healthMu.Unlock()
	if g.healthIs.Status == "" || g.now().Sub(g.healthAt) > time.Second {
		// The lookup is the gateway's, not the caller's: a checker that hangs up early must not
		// turn into a store outage that every caller, the load balancer included, is shown for
		// the next second.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		err := g.probe(lctx)
		cancel()
		g.healthIs, g.healthAt = healthz.OK, g.now()
		if errors.Is(err, mapping.ErrFilling) {
			g.healthIs = healthz.Unavailable("region_filling", "this region's mapping store is being filled from the other regions")
		} else if err != nil && !errors.Is(err, mapping.ErrNotFound) {
			g.log.Warn("gateway health: mapping store unavailable", "error", err.Error())
			g.healthIs = healthz.Unavailable("store_unavailable", "the mapping store does not answer")
		}
	}
	status := http.StatusOK
	if g.healthIs.Status != healthz.OK.Status {
		status = http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(g.healthIs)
	return &answer{status: status, headers: http.Header{"Cache-Control": {"no-store"}}, body: body}
}

// probe asks the store whether it answers.
func (g *Gateway) probe(ctx context.Context) error {
	if g.o.Probe != nil {
		return g.o.Probe(ctx)
	}
	_, err := g.store.Lookup(ctx, 0)
	return err
}
