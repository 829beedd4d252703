// Package server is the registry service: REST (echo) and idgen.v1.RegistryService (Connect,
// gRPC, gRPC-Web) on one port, with gRPC health and reflection, /healthz and /metrics. Reads are
// open to every known caller; changes need an admin identity and are audited.
package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"time"

	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/svc/storespec"
	"github.com/idgen/idgen/services/registry/internal/config"
	"github.com/idgen/idgen/services/registry/store"
	"github.com/idgen/idgen/services/registry/store/dynamostore"
	"github.com/idgen/idgen/services/registry/store/sqlitestore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// maxBody is the largest request body (REST) or message (Connect) the registry reads.
const maxBody = 4 << 10

// Server is the registry service.
type Server struct {
	cfg      config.Config
	log      *slog.Logger
	st       store.Store
	gate     *auth.Gate // the edge: callers and, with mutual TLS, the certificates, reloaded
	resolver *auth.Resolver
	tls      *tls.Config
	reg      *prometheus.Registry
	changes  *prometheus.CounterVec
	health   *serve.Health // NOT_SERVING from the start of a drain
	metrics  *serve.RequestMetrics
	handler  http.Handler
}

// New opens the store (seeding the default regions into a new one) and builds the handlers. It
// listens on nothing yet.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*Server, error) {
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	// The edge first: a server certificate that is expired or not yet valid stops the start
	// before the store is opened.
	edge := cfg.Edge
	edge.Dev = auth.Caller{Name: "dev", Admin: true}
	var err error
	if s.gate, err = auth.Setup(edge, log, s.reg); err != nil {
		return nil, err
	}
	s.resolver, s.tls = s.gate.Resolver, s.gate.TLS
	if s.st, err = openStore(ctx, cfg); err != nil {
		return nil, err
	}
	if err := s.st.Seed(ctx, region.Defaults(), cfg.Schedule); err != nil {
		s.st.Close()
		return nil, fmt.Errorf("registry: seed: %w", err)
	}
	s.metrics = serve.NewRequestMetrics(s.reg)
	s.changes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_registry_changes_total",
		Help: "Registry change requests, by action and result."}, []string{"action", "result"})
	s.reg.MustRegister(s.changes, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.health = serve.NewHealth(true, idgenv1connect.RegistryServiceName)
	path, h := idgenv1connect.NewRegistryServiceHandler(&rpc{s: s}, serve.ConnectOptions(maxBody, s.metrics)...)
	s.handler = serve.API{
		ConnectPath: path, Connect: h,
		Procedures: []string{idgenv1connect.RegistryServiceListRegionsProcedure, idgenv1connect.RegistryServiceGetRegionProcedure,
			idgenv1connect.RegistryServiceAddRegionProcedure, idgenv1connect.RegistryServiceRetireRegionProcedure, idgenv1connect.RegistryServiceGetLayoutsProcedure},
		REST:   s.rest(),
		Health: s.health, Metrics: serve.RegionLabeled(s.reg, cfg.Region), Requests: s.metrics, Resolver: s.resolver, Browsers: cfg.Browsers,
	}.Handler()
	return s, nil
}

// openStore opens the store --store names, making a SQLite file's directory when missing.
func openStore(ctx context.Context, cfg config.Config) (store.Store, error) {
	spec, err := cfg.StoreSpec()
	if err != nil {
		return nil, err
	}
	return storespec.Open(ctx, spec, storespec.Drivers[store.Store]{
		storespec.SQLite: func(ctx context.Context, spec storespec.Spec) (store.Store, error) {
			return sqlitestore.Open(ctx, spec.Where)
		},
		storespec.DynamoDB: func(ctx context.Context, spec storespec.Spec) (store.Store, error) {
			db, err := dynamo.NewClient(ctx, spec.Where)
			if err != nil {
				return nil, err
			}
			return dynamostore.New(db, region.RegistryTable), nil
		},
	})
}

// Handler returns the HTTP handler (for in-process tests).
func (s *Server) Handler() http.Handler { return s.handler }

// Close closes the store of a server that will not serve (Serve closes it when it returns).
func (s *Server) Close() error { return s.st.Close() }

// Serve serves on l until ctx ends, then shuts down gracefully: health turns NOT_SERVING and
// /healthz 503 draining while the API serves on for the deregistration delay, then it stops
// accepting, waits for requests in flight (up to the drain time), and closes the store.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	go s.gate.Run(ctx)
	err := serve.Serve(ctx, l, s.handler, s.tls, s.cfg.Shutdown(s.health), s.log)
	s.st.Close()
	return err
}

// HealthHandler serves only /healthz and /metrics, for a plaintext listener that load balancers
// and scrapers reach without a client certificate (the API's listener asks every connection for
// one). Its /healthz is the API's: 503 certificate_expired once the server certificate in use
// has expired, store_unavailable, draining from the start of a shutdown.
func (s *Server) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", s.rest())
	mux.Handle("GET /metrics", serve.MetricsHandler(serve.RegionLabeled(s.reg, s.cfg.Region)))
	return mux
}

// ServeHealth serves HealthHandler on l (plaintext) until ctx ends, then stops accepting and
// waits for requests in flight. Give it a context that ends after Serve returned, so the load
// balancer sees /healthz answer 503 draining for the whole deregistration delay.
func (s *Server) ServeHealth(ctx context.Context, l net.Listener) error {
	return serve.Serve(ctx, l, s.HealthHandler(), nil, serve.Shutdown{Drain: s.cfg.Drain}, s.log.With("listener", "health"))
}

var nameRE = regexp.MustCompile(`^[a-z]{2,}(-[a-z]+)+-[0-9]{1,2}$`)

// caller returns the request's caller, or an error when it is unknown; admin demands an admin.
func caller(ctx context.Context, admin bool) (auth.Result, error) {
	res := auth.FromContext(ctx)
	if res.Err != nil {
		return *res, res.Err
	}
	if admin && !res.Caller.Admin {
		return *res, notAdmin(res.Identity.String())
	}
	return *res, nil
}

// list and get are the reads; every read needs a known caller.
func (s *Server) list(ctx context.Context) ([]region.Region, error) {
	if _, err := caller(ctx, false); err != nil {
		return nil, err
	}
	return s.st.List(ctx)
}

func (s *Server) get(ctx context.Context, name string) (region.Region, error) {
	if _, err := caller(ctx, false); err != nil {
		return region.Region{}, err
	}
	return s.st.Get(ctx, name)
}

// add and retire are the two changes; both are audited, whatever their outcome.
func (s *Server) add(ctx context.Context, name, peer string) (region.Region, error) {
	res, err := caller(ctx, true)
	if err != nil {
		s.changes.WithLabelValues("add", "forbidden").Inc()
		return region.Region{}, err
	}
	if !nameRE.MatchString(name) {
		return region.Region{}, apierr.BadRequest("region name %q: want an AWS region name such as eu-central-1", name)
	}
	if p, err := s.st.Get(ctx, peer); err != nil || p.Status != region.Active {
		return region.Region{}, apierr.BadRequest("peer %q must be an active region", peer)
	}
	r, err := s.st.Add(ctx, name, peer, time.Now())
	s.audit(ctx, res, "add", fmt.Sprintf("name=%s peer=%s number=%d", name, peer, r.Number), err)
	return r, err
}

func (s *Server) retire(ctx context.Context, name string) (region.Region, error) {
	res, err := caller(ctx, true)
	if err != nil {
		s.changes.WithLabelValues("retire", "forbidden").Inc()
		return region.Region{}, err
	}
	r, err := s.st.Retire(ctx, name, time.Now())
	s.audit(ctx, res, "retire", fmt.Sprintf("name=%s number=%d", name, r.Number), err)
	return r, err
}

func (s *Server) audit(ctx context.Context, res auth.Result, action, detail string, err error) {
	result := "ok"
	if err != nil {
		result, detail = "refused", detail+" error="+err.Error()
	}
	s.changes.WithLabelValues(action, result).Inc()
	e := store.AuditEntry{At: time.Now().UTC(), Actor: res.Identity.String(), Action: action, Detail: detail + " result=" + result}
	if aerr := s.st.Audit(context.WithoutCancel(ctx), e); aerr != nil {
		s.log.Error("audit append failed", "error", aerr, "entry", e, "request_id", serve.RequestID(ctx))
	}
	s.log.Info("registry change", "actor", e.Actor, "action", action, "detail", e.Detail, "request_id", serve.RequestID(ctx))
}

type layoutsDoc struct {
	Schedule string       `json:"schedule"`
	Periods  []periodJSON `json:"periods"`
}

type periodJSON struct {
	Layout   string      `json:"layout"`
	StartsAt time.Time   `json:"starts_at"`
	Fields   []fieldJSON `json:"fields"`
}

type fieldJSON struct {
	Name string `json:"name"`
	Bits int    `json:"bits"`
}

func (s *Server) layouts(ctx context.Context) (layoutsDoc, error) {
	// Reads need a known caller, as every other read does.
	if _, err := caller(ctx, false); err != nil {
		return layoutsDoc{}, err
	}
	name, err := s.st.Schedule(ctx)
	if err != nil {
		return layoutsDoc{}, err
	}
	sched, err := idcore.ScheduleByName(name)
	if err != nil {
		return layoutsDoc{}, err
	}
	doc := layoutsDoc{Schedule: name}
	for _, p := range sched.Periods() {
		pj := periodJSON{Layout: p.Layout.Name(), StartsAt: idcore.Epoch.Add(time.Duration(p.Start) * time.Millisecond),
			Fields: []fieldJSON{{"timestamp", idcore.TimestampBits}}}
		for _, f := range p.Layout.Fields() {
			pj.Fields = append(pj.Fields, fieldJSON{f.Kind.String(), int(f.Bits)})
		}
		doc.Periods = append(doc.Periods, pj)
	}
	return doc, nil
}
