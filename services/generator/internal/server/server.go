// Package server is the generator service: REST (echo) and Connect (Connect, gRPC, gRPC-Web over
// HTTP/1.1 and h2c or TLS) on one listener, with gRPC health and reflection, /healthz and /metrics.
// IDs come from an embedded.Node, the same path embedding applications use.
package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/embedded"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/leasestore"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/quota"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/generator/internal/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// MaxBatch is the largest batch one request may ask for.
const MaxBatch = 1000

// Server is one generator process.
type Server struct {
	cfg       config.Config
	log       *slog.Logger
	node      *embedded.Node
	sched     idcore.Schedule
	region    region.Region
	regions   []region.Region                 // as read at start-up: the generator's own region
	names     atomic.Pointer[[]region.Region] // the registry's current list, for decode's names
	regClient *http.Client
	regTLS    *auth.ClientTLS // the registry client's certificate (nil without TLS settings)
	regState  registryState   // a registry URL: reachable, when read, the copy (regcache.go)
	stores    []lease.Store
	gate      *auth.Gate // the edge: callers and, with mutual TLS, the certificates, reloaded
	resolver  *auth.Resolver
	quotas    *quota.Limiter
	tls       *tls.Config
	reg       *prometheus.Registry
	metrics   *metrics
	health    *serve.Health // NOT_SERVING until the node is ready, and from the start of a drain
	wasReady  atomic.Bool   // the node has been ready (watchReady)
	handler   http.Handler
}

// Option changes how New builds the server (tests inject a clock-health source).
type Option func(*embedded.Config)

// WithClockHealth replaces the kernel's clock-health source.
func WithClockHealth(h idcore.HealthSource) Option { return func(c *embedded.Config) { c.Health = h } }

// New builds the server: it reads the regions, opens the lease stores, starts claiming a machine
// number, and sets up the handlers. It listens on nothing yet.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, opts ...Option) (*Server, error) {
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry(), quotas: quota.New(nil)}
	var err error
	if s.sched, err = idcore.ScheduleByName(cfg.Schedule); err != nil {
		return nil, err
	}
	// The edge first: a server certificate that is expired or not yet valid stops the start
	// before anything is read or claimed.
	edge := cfg.Edge
	edge.Dev = auth.Caller{Name: "dev", IDsPerSecond: cfg.DevQuota, Burst: max(int(cfg.DevQuota), MaxBatch)}
	if s.gate, err = auth.Setup(edge, log, s.reg); err != nil {
		return nil, err
	}
	s.resolver, s.tls = s.gate.Resolver, s.gate.TLS
	if s.regClient, s.regTLS, err = registryClient(cfg.Edge, log); err != nil {
		return nil, err
	}
	if s.regions, err = s.startRegions(ctx); err != nil {
		return nil, err
	}
	s.names.Store(&s.regions)
	if s.region, err = region.ForGenerator(s.regions, cfg.Region); err != nil {
		return nil, s.startRefusal(err)
	}
	if cfg.RegionNum >= 0 && cfg.RegionNum != s.region.Number {
		return nil, s.startRefusal(fmt.Errorf("configured as region %s number %d, but the registry gives it number %d",
			s.region.Name, cfg.RegionNum, s.region.Number))
	}
	stores, err := openStores(ctx, cfg, s.sched)
	if err != nil {
		return nil, err
	}
	s.stores = stores.list
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = newMetrics(s.reg)
	s.reg.MustRegister(s.registryMetrics()...)
	// Every known caller's series exist from the first scrape, at zero: alerts and dashboards
	// see a rate, not an absent series.
	zero := func(names []string) {
		for _, name := range names {
			s.metrics.quotaRejections.WithLabelValues(name)
			s.metrics.servedBy(name, 0)
		}
	}
	zero(s.resolver.Names())
	s.gate.OnCallers(zero) // and a caller a reload of the callers file adds
	ecfg := embedded.Config{
		Region: s.region.Number, Schedule: s.sched, Stores: stores.byLayout, Range: cfg.Range,
		Lease: cfg.Lease, Renew: cfg.Renew, FenceMargin: cfg.FenceMargin, ClockCheck: cfg.ClockCheck,
		ClockEvery: 250 * time.Millisecond, Clock: cfg.Clock, Health: cfg.ClockHealth,
		Logger: log, Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"region": s.region.Name}, s.reg),
	}
	for _, o := range opts {
		o(&ecfg)
	}
	s.node, err = embedded.Start(ctx, ecfg)
	if err != nil {
		s.closeStores()
		return nil, err
	}
	s.health = serve.NewHealth(false, idgenv1connect.IdServiceName)
	s.handler = s.routes()
	log.Info("generator configured", "region", s.region.Name, "region_number", s.region.Number,
		"schedule", s.sched.Name(), "range", cfg.Range, "lease_store", cfg.LeaseStore, "clock_check", cfg.ClockCheck.String())
	return s, nil
}

type storeSet struct {
	byLayout map[string]lease.Store
	list     []lease.Store
}

// openStores opens the lease table of every layout of the schedule: the region's
// idgen-leases-v2 and, for v1-v2, the global idgen-leases.
func openStores(ctx context.Context, cfg config.Config, sched idcore.Schedule) (storeSet, error) {
	set := storeSet{byLayout: map[string]lease.Store{}}
	spec, err := cfg.LeaseStoreSpec()
	if err != nil {
		return set, err
	}
	if err := spec.MakeDir(); err != nil {
		return set, err
	}
	for _, p := range sched.Periods() {
		table := lease.TableV2
		if p.Layout.Name() == "v1" {
			table = lease.TableV1
		}
		st, err := leasestore.Open(ctx, string(spec.Kind), spec.Where, table)
		if err != nil {
			return set, err
		}
		set.byLayout[p.Layout.Name()] = st
		set.list = append(set.list, st)
	}
	return set, nil
}

func (s *Server) closeStores() {
	for _, st := range s.stores {
		st.Close()
	}
}

// Handler returns the server's HTTP handler (for in-process tests).
func (s *Server) Handler() http.Handler { return s.handler }

// Metrics returns the server's metrics registry (what /metrics serves).
func (s *Server) Metrics() *prometheus.Registry { return s.reg }

// Node returns the server's generator node.
func (s *Server) Node() *embedded.Node { return s.node }

// Region returns the region the server runs as.
func (s *Server) Region() region.Region { return s.region }

// Serve runs the generator until ctx ends, on the API listener listen opens and the health
// listener health (nil: none). When ctx ends: /healthz (both listeners) answers 503 draining and
// gRPC health NOT_SERVING while the API serves on for the deregistration delay, then the API
// listener closes and requests in flight drain (serve.Serve); then the health listener closes,
// and the generator stops issuing and releases its lease.
//
// Start-up: with a health listener (production's, which the NLB checks), that listener answers
// at once, /healthz 503 until the generator is ready (it holds a number and its clock has been
// checked), and the API address is listened on only then: until then the API refuses
// connections, as a load balancer expects of a target not yet healthy and as makes a client
// that reaches it directly try another generator at once. Without one, the API listener is the
// only place /healthz is answered, so it opens at once: /healthz 503 and API requests 503
// (no_lease, clock_unsynced, …) until ready, and a load balancer that checks /healthz never
// routes to it. Either way a generator stopped before it was ever ready waits for no delay.
//
// A generator started from its copy of the regions whose registry, once it answers, refuses that
// start (watchRegistry) shuts down the same way, and Serve returns why.
func (s *Server) Serve(ctx context.Context, listen func() (net.Listener, error), health net.Listener) (err error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	s.regState.stop = stop
	defer func() {
		if f := s.regState.fatal.Load(); f != nil {
			err = *f
		}
	}()
	go s.watchReady(ctx)
	go s.watchRegistry(ctx)
	go s.gate.Run(ctx)
	if s.regTLS != nil {
		go s.regTLS.Run(ctx)
	}
	hctx, stopHealth := context.WithCancel(context.WithoutCancel(ctx))
	hdone := make(chan struct{})
	if health != nil {
		go func() {
			defer close(hdone)
			// Its /healthz follows the drain of the API's shutdown; it closes after the API.
			if err := serve.Serve(hctx, health, s.HealthHandler(), nil, serve.Shutdown{Drain: s.cfg.Drain}, s.log.With("listener", "health")); err != nil {
				s.log.Error("health listener stopped", "error", err.Error())
			}
		}()
	} else {
		close(hdone)
	}
	defer func() {
		stopHealth()
		<-hdone
		s.shutdownNode()
	}()
	if health != nil && s.node.Ready() != nil {
		s.log.Info("waiting for a machine number and a checked clock before listening on the API address")
		if err := s.node.WaitReady(ctx); err != nil {
			s.health.Drain()
			s.log.Info("shutting down before the generator was ready: the API address was never listened on", "reason", err.Error())
			return nil
		}
	}
	l, err := listen()
	if err != nil {
		s.health.Drain()
		return err
	}
	sd := s.cfg.Shutdown(s.health)
	sd.SkipDelay = func() bool { return !s.wasReady.Load() && s.node.Ready() != nil }
	return serve.Serve(ctx, l, s.handler, s.tls, sd, s.log)
}

// HealthHandler serves only /healthz and /metrics, for a plaintext listener that load balancers
// and scrapers reach without a client certificate. It issues nothing.
func (s *Server) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", s.rest())
	mux.Handle("GET /metrics", serve.MetricsHandler(serve.RegionLabeled(s.reg, s.region.Name)))
	return mux
}

// shutdownNode stops issuing and releases the lease (Node.Close does both, in that order).
func (s *Server) shutdownNode() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.node.Close(ctx); err != nil {
		s.log.Warn("lease release failed; the number frees itself at lease expiry", "error", err)
	} else {
		s.log.Info("stopped issuing and released the lease")
	}
	s.closeStores()
}

// watchReady keeps the gRPC health status in step with readiness (a drain ends it for good).
func (s *Server) watchReady(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		ready := s.node.Ready() == nil
		if ready {
			s.wasReady.Store(true)
		}
		s.health.SetServing(ready)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// routes puts the IdService, gRPC health and reflection, /metrics and the REST API on one
// handler (serve.API), with the hot paths by exact pattern.
func (s *Server) routes() http.Handler {
	path, h := idgenv1connect.NewIdServiceHandler(&rpc{s: s}, rpcOptions(s)...)
	return serve.API{
		ConnectPath: path, Connect: h,
		Procedures: []string{idgenv1connect.IdServiceGenerateProcedure, idgenv1connect.IdServiceGenerateBatchProcedure, idgenv1connect.IdServiceDecodeProcedure},
		REST:       s.rest(), RESTPaths: []string{"/v1/ids", "/v1/ids:batch"},
		Health: s.health, Metrics: serve.RegionLabeled(s.reg, s.region.Name), Requests: s.metrics.RequestMetrics, Resolver: s.resolver, Browsers: s.cfg.Browsers,
	}.Handler()
}

// issue is the one request path to IDs for REST and Connect alike: caller check, quota, then the
// generator. It never returns an ID it is unsure of.
func (s *Server) issue(ctx context.Context, n int, dst []idcore.ID) ([]idcore.ID, error) {
	res := auth.FromContext(ctx)
	if res.Err != nil {
		return dst, res.Err
	}
	if res.Caller.IDsPerSecond > 0 && n > res.Caller.Burst {
		// Never within the quota, however long the caller waits: not a 429 with a Retry-After.
		return dst, apierr.BadRequest("a batch of %d is more than caller %s's burst of %d IDs: ask for at most %d at a time",
			n, res.Caller.Name, res.Caller.Burst, res.Caller.Burst)
	}
	if ok, wait := s.quotas.Take(res.Caller.Name, res.Caller.IDsPerSecond, res.Caller.Burst, n); !ok {
		s.metrics.quotaRejections.WithLabelValues(res.Caller.Name).Inc()
		return dst, overQuota(res.Caller.Name, quota.RetryAfterSeconds(wait))
	}
	var err error
	if n == 1 {
		var id idcore.ID
		id, err = s.node.Next(ctx)
		if err == nil {
			dst = append(dst, id)
		}
	} else {
		dst, err = s.node.AppendBatch(ctx, dst, n)
	}
	if err != nil {
		if r := idcore.Reason(err); r != "" {
			s.log.Warn("refused", "reason", r, "caller", res.Caller.Name, "request_id", serve.RequestID(ctx), "error", err)
		}
		return dst, err
	}
	s.metrics.servedBy(res.Caller.Name, n)
	return dst, nil
}

// Unassigned is decode's name for a region number no region has.
const Unassigned = "unassigned"

// regionName returns the name of region number n in the registry's current list, or Unassigned.
func (s *Server) regionName(n int) string {
	if r, ok := region.ByNumber(*s.names.Load(), n); ok {
		return r.Name
	}
	return Unassigned
}
