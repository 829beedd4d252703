// Package gatewayserver is the customer gateway's process (cmd/public-id-gateway): the route
// table, the mapping store opened with the gateway's own credentials (internal/mapstore, as the
// internal API opens it), the gateway on the customers' listener and /metrics with /healthz on the
// operator's. It shares no process with the internal API: customers from the internet and the
// company's services over mutual TLS reach different programs behind different load balancers.
package gatewayserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/public-id/internal/config"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/internal/mapstore"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
)

// Server is the gateway's process, built and not yet listening.
type Server struct {
	cfg     config.GatewayConfig
	log     *slog.Logger
	store   *mapstore.Opened
	rates   redis.UniversalClient // --rate-redis; nil for none
	gw      *gateway.Gateway
	health  *serve.Health // drained from the start of a shutdown
	metrics http.Handler
	// cacheBytes is the mapping cache's weight now (0 without a cache), for the memory limit.
	cacheBytes func() uint64
}

// New loads the route table, opens the mapping store and builds the gateway.
func New(ctx context.Context, cfg config.GatewayConfig, log *slog.Logger) (*Server, error) {
	table, err := routes.Load(cfg.Routes)
	if err != nil {
		return nil, err
	}
	maker, err := publicid.NewMaker(table.Resources()...)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	store, err := mapstore.Open(ctx, cfg.Flags, log, reg)
	if err != nil {
		return nil, err
	}
	rates, err := openRates(ctx, cfg, log)
	if err != nil {
		store.Close()
		return nil, err
	}
	ridHeader := cfg.RequestIDHeader
	if ridHeader == "" {
		ridHeader = gateway.NoRequestIDHeader
	}
	gw, err := gateway.New(table, maker, store.Mappings, reg, gateway.Options{Probe: store.Probe, RequestIDHeader: ridHeader, RatePerClient: cfg.RatePerClient,
		TrustedProxies: cfg.TrustedProxies, IDsSince: cfg.IDsSince, Logger: log, APIKeyHeader: cfg.APIKeyHeader,
		CORSOrigins: cfg.CORSOrigins, CompressMinSize: cfg.CompressMin, CacheControl: cfg.CacheControl, MemoryLimit: cfg.MemoryLimit,
		RateRedis: rates, RateRedisTimeout: cfg.RateRedisTimeout})
	if err != nil {
		store.Close()
		closeRates(rates)
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, store: store, rates: rates, gw: gw, health: serve.NewHealth(true)}
	s.metrics = serve.MetricsHandler(serve.RegionLabeled(reg, cfg.Region))
	s.cacheBytes = func() uint64 { return 0 }
	if c, ok := store.Mappings.(interface{ Bytes() uint64 }); ok {
		s.cacheBytes = c.Bytes
	}
	return s, nil
}

// openRates connects to --rate-redis (nil without it) and runs the limiter's script once. A Redis
// that refuses it (a wrong password, an ACL that lacks the script, its commands or its keys) or
// whose certificate does not verify is a configuration error, and the gateway does not start; one
// it cannot reach now is logged, and the gateway starts on its own limiter, which serves every
// check the Redis fails until it answers: scaling out in a Redis outage still works.
func openRates(ctx context.Context, cfg config.GatewayConfig, log *slog.Logger) (redis.UniversalClient, error) {
	if cfg.RateRedis == "" {
		return nil, nil
	}
	spec, err := cfg.RateRedisSpec()
	if err != nil {
		return nil, err
	}
	rdb, err := redismap.NewClient(redismap.Target{Addr: spec.Where, CAFile: cfg.RateRedisCA})
	if err != nil {
		return nil, fmt.Errorf("--rate-redis: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, rateCheckTimeout)
	defer cancel()
	err = gateway.CheckRateRedis(cctx, rdb)
	var refused redis.Error
	var badCert *tls.CertificateVerificationError
	switch {
	case err == nil:
	case errors.As(err, &refused) || errors.As(err, &badCert):
		rdb.Close()
		return nil, fmt.Errorf("--rate-redis: the Redis refused the rate limiter's check (the limiter's user needs EVALSHA, EVAL, GET, SET and TIME on keys rate:rl:*): %w", err)
	default:
		log.Error("the rate limits' Redis does not answer: each gateway limits clients on its own until it does", "err", err)
	}
	return rdb, nil
}

// rateCheckTimeout bounds the start-up check of --rate-redis.
const rateCheckTimeout = 3 * time.Second

func closeRates(rdb redis.UniversalClient) {
	if rdb != nil {
		rdb.Close()
	}
}

// followMemory holds the process's Go memory limit to what the gateway holds (LiveMemoryLimit),
// read every second, until ctx ends. GOMEMLIMIT, when set, is the operator's.
func (s *Server) followMemory(ctx context.Context) {
	if os.Getenv("GOMEMLIMIT") != "" || s.gw.LiveMemoryLimit(0) < 0 {
		return
	}
	last := int64(0)
	set := func() {
		limit := s.gw.LiveMemoryLimit(s.cacheBytes())
		debug.SetMemoryLimit(limit)
		if last == 0 || limit > 2*last || limit < last/2 {
			s.log.Info("memory limit", "bytes", limit)
			last = limit
		}
	}
	set()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			set()
		}
	}
}

// Handler is what the customers' listener serves: the gateway, with /healthz answering 503
// draining from the start of a shutdown.
func (s *Server) Handler() http.Handler { return serve.HealthzWhileDraining(s.health, s.gw) }

// OperatorHandler is what the operator's listener serves: /metrics, and /healthz as customers'
// load balancer sees it.
func (s *Server) OperatorHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.metrics)
	mux.Handle("/healthz", s.Handler())
	return mux
}

// Serve serves customers on l and the operator on ops (nil for none) until ctx ends, then shuts
// both down as the internal API does (503 draining at once, the deregistration delay, the drain)
// and closes the store.
func (s *Server) Serve(ctx context.Context, l, ops net.Listener) error {
	sd := s.cfg.Shutdown(s.health)
	mctx, stop := context.WithCancel(ctx)
	defer stop()
	go s.followMemory(mctx)
	errc := make(chan error, 2)
	n := 1
	go func() { errc <- serve.Serve(ctx, l, s.Handler(), nil, sd, s.log) }()
	if ops != nil {
		n++
		go func() {
			errc <- serve.Serve(ctx, ops, s.OperatorHandler(), nil, sd, s.log.With("listener", "operator"))
		}()
	}
	var first error
	for range n {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	s.store.Close()
	closeRates(s.rates)
	return first
}

// Run builds the gateway, listens and serves until ctx ends.
func Run(ctx context.Context, cfg config.GatewayConfig, log *slog.Logger) error {
	s, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		s.store.Close()
		closeRates(s.rates)
		return err
	}
	var ops net.Listener
	if cfg.MetricsListen != "" {
		if ops, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			l.Close()
			s.store.Close()
			closeRates(s.rates)
			return fmt.Errorf("--metrics-listen: %w", err)
		}
	}
	return s.Serve(ctx, l, ops)
}
