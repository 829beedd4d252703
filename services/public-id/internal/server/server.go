// Package server is the public-ID service's internal API: REST and idgen.v1.PublicIdService over
// Connect, gRPC and gRPC-Web, callers identified by mutual TLS as the generator's. The customer
// gateway is a program of its own (cmd/public-id-gateway) on the same mapping store.
package server

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/public-id/internal/config"
	"github.com/idgen/idgen/services/public-id/internal/mapstore"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Server is the public-ID service's internal API.
type Server struct {
	cfg      config.Config
	log      *slog.Logger
	store    *mapstore.Opened // the store --store names, behind the cache of resolved mappings
	mappings mapping.Store    // store.Mappings
	maker    *publicid.Maker
	gate     *auth.Gate // the edge: callers and, with mutual TLS, the certificates, reloaded
	resolver *auth.Resolver
	tls      *tls.Config
	reg      *prometheus.Registry
	health   *serve.Health // NOT_SERVING from the start of a drain
	api      http.Handler
	metrics  *serve.RequestMetrics
	mapped   *prometheus.CounterVec
	counted  [2][len(outcomes)]prometheus.Counter // by op (opPublish, opResolve), then outcome; nil until first used
}

// The ops of idgen_publicid_store_calls_total.
const (
	opPublish = iota
	opResolve
)

var opNames = [...]string{opPublish: "publish", opResolve: "resolve"}

// maxBody is the largest request body (REST) or message (Connect) the internal API reads.
const maxBody = 4 << 10

// New opens the mapping store and builds the handlers. It listens on nothing yet.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*Server, error) {
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	s.metrics = serve.NewRequestMetrics(s.reg)
	s.mapped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_publicid_store_calls_total",
		Help: "Publishes and resolves of the internal API, by outcome (ok, not_found, store_unavailable, store_volatile, region_filling, error)."}, []string{"op", "outcome"})
	s.reg.MustRegister(s.mapped)
	// Every outcome's series exists from the start but region_filling's, which only a regions
	// store gives (count makes it on first use).
	for op, name := range opNames {
		for o, label := range outcomes {
			if o != outFilling {
				s.counted[op][o] = s.mapped.WithLabelValues(name, label)
			}
		}
	}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var err error
	if s.maker, err = publicid.NewMaker(dedupe(append(strings.Split(cfg.Resources, ","), cfg.DefaultResource))...); err != nil {
		return nil, err
	}
	// The edge before the store: a server certificate that is expired or not yet valid stops the
	// start before anything is opened.
	edge := cfg.Edge
	edge.Dev = auth.Caller{Name: "dev"}
	if s.gate, err = auth.Setup(edge, log, s.reg); err != nil {
		return nil, err
	}
	s.resolver, s.tls = s.gate.Resolver, s.gate.TLS
	if s.store, err = mapstore.Open(ctx, cfg.Flags, log, s.reg); err != nil {
		return nil, err
	}
	s.mappings = s.store.Mappings
	s.health = serve.NewHealth(true, idgenv1connect.PublicIdServiceName)
	path, h := idgenv1connect.NewPublicIdServiceHandler(&rpc{s}, serve.ConnectOptions(maxBody, s.metrics)...)
	s.api = serve.API{
		ConnectPath: path, Connect: h,
		Procedures: []string{idgenv1connect.PublicIdServicePublishProcedure, idgenv1connect.PublicIdServiceResolveProcedure},
		// The two hot routes by their own patterns: past the catch-all's RPC check and echo's
		// router (serve.API.RESTPaths).
		REST: s.rest(), RESTPaths: []string{"/v1/public-ids", "/v1/public-ids/{public_id}"},
		Health: s.health, Metrics: serve.RegionLabeled(s.reg, cfg.Region), Requests: s.metrics, Resolver: s.resolver, Browsers: cfg.Browsers,
	}.Handler()
	return s, nil
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range in {
		if v = strings.TrimSpace(v); v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// API returns the internal API handler.
func (s *Server) API() http.Handler { return s.api }

// Serve serves the internal API on api until ctx ends, then shuts down gracefully and closes the
// store: from the start, health is NOT_SERVING and /healthz answers 503 draining while the API
// serves on for the deregistration delay; then it stops accepting and drains its requests in
// flight.
func (s *Server) Serve(ctx context.Context, api net.Listener) error {
	go s.gate.Run(ctx)
	go func() {
		if err := s.store.Fill(ctx, 5*time.Second); err != nil && ctx.Err() == nil {
			s.log.Error("the fill of this region's mapping store stopped", "err", err)
		}
	}()
	err := serve.Serve(ctx, api, s.api, s.tls, s.cfg.Shutdown(s.health), s.log)
	s.store.Close()
	return err
}

// publish returns internal's public ID, making one of resource on the first publish.
func (s *Server) publish(ctx context.Context, internal int64, resource string) (string, error) {
	if res := auth.FromContext(ctx); res.Err != nil {
		return "", res.Err
	}
	if internal < 0 {
		return "", apierr.BadRequest("internal_id must not be negative")
	}
	if resource == "" {
		resource = s.cfg.DefaultResource
	}
	if !s.maker.Known(resource) {
		return "", apierr.BadRequest("unknown resource %q", resource)
	}
	pub, err := s.mappings.Publish(ctx, internal, func() (string, error) { return s.maker.New(resource) })
	s.count(opPublish, err)
	return pub, err
}

// resolve returns the internal ID of a public one; unknown and malformed ones alike are
// mapping.ErrNotFound or publicid.ErrMalformed, which errs answers the same way.
func (s *Server) resolve(ctx context.Context, public string) (int64, error) {
	if res := auth.FromContext(ctx); res.Err != nil {
		return 0, res.Err
	}
	if _, err := s.maker.Parse(public); err != nil {
		s.count(opResolve, mapping.ErrNotFound)
		return 0, err
	}
	in, err := s.mappings.Resolve(ctx, public)
	s.count(opResolve, err)
	return in, err
}

// count adds a store call of op with err's outcome to idgen_publicid_store_calls_total, through
// the series' counters found once (WithLabelValues hashes its labels at every call).
func (s *Server) count(op int, err error) {
	o := outcome(err)
	c := s.counted[op][o]
	if c == nil { // region_filling, which few stores give: the vector keeps the series it makes
		c = s.mapped.WithLabelValues(opNames[op], outcomes[o])
	}
	c.Inc()
}
