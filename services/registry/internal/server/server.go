// Package server is the registry service: REST (echo) and idgen.v1.RegistryService (Connect,
// gRPC, gRPC-Web) on one port. Reads are open to every known caller; changes need an admin
// identity and are audited.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/registry/store"
	"github.com/idgen/idgen/services/registry/store/dynamostore"
	"github.com/idgen/idgen/services/registry/store/sqlitestore"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Config is the registry's configuration.
type Config struct {
	Listen, Store, Schedule string
	auth.Edge               // --callers, --tls-cert, --tls-key, --client-ca, --insecure-dev
	serve.Process           // --log-level, --drain
	serve.Browsers          // --cors-origins
}

// ParseConfig reads flags with IDGEN_* environment fallbacks.
func ParseConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:7000", "address ($IDGEN_LISTEN)")
	fs.StringVar(&c.Store, "store", "sqlite:.idgen/registry.db", "sqlite:PATH or dynamodb:ENDPOINT_URL (table idgen-regions) ($IDGEN_STORE)")
	fs.StringVar(&c.Schedule, "schedule", "v2", "layout schedule a new registry starts with: v2 or v1-v2 ($IDGEN_SCHEDULE)")
	c.Edge.RegisterFlags(fs, "callers file; callers with \"admin\": true may change the registry", "plaintext; every request is the admin caller dev")
	c.Process.RegisterFlags(fs, 5*time.Second)
	c.Browsers.RegisterFlags(fs)
	if err := flagenv.Parse(fs, args, getenv); err != nil {
		return c, err
	}
	if _, err := idcore.ScheduleByName(c.Schedule); err != nil {
		return c, err
	}
	if err := errors.Join(c.Complete(), c.Process.Check()); err != nil {
		return c, fmt.Errorf("registry: %w", err)
	}
	return c, nil
}

// Server is the registry service.
type Server struct {
	cfg      Config
	log      *slog.Logger
	st       store.Store
	resolver *auth.Resolver
	tls      *tls.Config
	reg      *prometheus.Registry
	changes  *prometheus.CounterVec
	health   serve.HealthChecker
	metrics  *serve.RequestMetrics
	handler  http.Handler
}

// New opens the store (seeding the default regions into a new one) and builds the handlers.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	s.metrics = serve.NewRequestMetrics(s.reg)
	kind, arg, _ := strings.Cut(cfg.Store, ":")
	switch kind {
	case "sqlite":
		st, err := sqlitestore.Open(ctx, arg)
		if err != nil {
			return nil, err
		}
		s.st = st
	case "dynamodb":
		db, err := dynamolease.NewClient(ctx, arg)
		if err != nil {
			return nil, err
		}
		s.st = dynamostore.New(db, store.TableName)
	default:
		return nil, fmt.Errorf("registry: --store %q: want sqlite:PATH or dynamodb:ENDPOINT_URL", cfg.Store)
	}
	if err := s.st.Seed(ctx, region.Defaults(), cfg.Schedule); err != nil {
		return nil, fmt.Errorf("registry: seed: %w", err)
	}
	var err error
	edge := cfg.Edge
	edge.Dev = auth.Caller{Name: "dev", Admin: true}
	if s.resolver, s.tls, err = auth.Setup(edge, log); err != nil {
		return nil, err
	}
	s.changes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_registry_changes_total",
		Help: "Registry change requests, by action and result."}, []string{"action", "result"})
	s.reg.MustRegister(s.changes, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.health = serve.NewHealthChecker(idgenv1connect.RegistryServiceName)
	mux := http.NewServeMux()
	path, h := idgenv1connect.NewRegistryServiceHandler(&rpc{s: s}, append(serve.JSONCodec(), connect.WithReadMaxBytes(4096), connect.WithCompressMinBytes(1024), s.metrics.Interceptor())...)
	serve.Mount(mux, path, h, idgenv1connect.RegistryServiceListRegionsProcedure, idgenv1connect.RegistryServiceGetRegionProcedure,
		idgenv1connect.RegistryServiceAddRegionProcedure, idgenv1connect.RegistryServiceRetireRegionProcedure, idgenv1connect.RegistryServiceGetLayoutsProcedure)
	mux.Handle(grpchealth.NewHandler(s.health))
	refl := serve.Reflector(idgenv1connect.RegistryServiceName, grpchealth.HealthV1ServiceName)
	mux.Handle(grpcreflect.NewHandlerV1(refl))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(refl))
	mux.Handle("/metrics", auth.ScrapersOnly(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})))
	mux.Handle("/", serve.RPCOr(s.rest()))
	s.handler = cfg.Browsers.Wrap(s.metrics.InFlight(s.resolver.Middleware(mux)))
	return s, nil
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves until ctx ends, then drains and closes the store.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	err := serve.Serve(ctx, l, s.handler, s.tls, s.cfg.Drain, s.log, func() { s.health.SetStatus("", grpchealth.StatusNotServing) })
	s.st.Close()
	return err
}

var nameRE = regexp.MustCompile(`^[a-z]{2,}(-[a-z]+)+-[0-9]{1,2}$`)

// ninthRegion is the refusal once all eight numbers have been given.
const ninthRegion = "all 8 region numbers (0-7) have been given and numbers are never reused: 0 left. " +
	"For a ninth region, make its IDs UUIDv7 (libs/uuidv7), or add a layout with more region bits " +
	"from a timestamp cutover (a new period of the layout schedule)"

func mapErr(err error) *apierr.Error {
	return apierr.Map(err, func(err error) *apierr.Error {
		switch {
		case errors.Is(err, store.ErrFull):
			return apierr.New(http.StatusConflict, connect.CodeResourceExhausted, "registry: "+ninthRegion)
		case errors.Is(err, store.ErrNotFound):
			return apierr.New(http.StatusNotFound, connect.CodeNotFound, err.Error())
		case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrRetired):
			return apierr.New(http.StatusConflict, connect.CodeAlreadyExists, err.Error())
		}
		return apierr.New(http.StatusInternalServerError, connect.CodeInternal, "registry: internal error")
	})
}

// caller returns the request's caller, or an error when it is unknown; admin demands an admin.
func caller(ctx context.Context, admin bool) (auth.Result, error) {
	res := auth.FromContext(ctx)
	if res.Err != nil {
		return *res, res.Err
	}
	if admin && !res.Caller.Admin {
		return *res, apierr.New(http.StatusForbidden, connect.CodePermissionDenied,
			fmt.Sprintf("registry: %s is not an admin; changes need an admin identity", res.Identity))
	}
	return *res, nil
}

// add and retire are the two changes; both are audited, whatever their outcome.
func (s *Server) add(ctx context.Context, name, peer string) (region.Region, error) {
	res, err := caller(ctx, true)
	if err != nil {
		s.changes.WithLabelValues("add", "forbidden").Inc()
		return region.Region{}, err
	}
	if !nameRE.MatchString(name) {
		return region.Region{}, apierr.BadRequest("registry: region name %q: want an AWS region name such as eu-central-1", name)
	}
	if p, err := s.st.Get(ctx, peer); err != nil || p.Status != region.Active {
		return region.Region{}, apierr.BadRequest("registry: peer %q must be an active region", peer)
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
		s.log.Error("audit append failed", "error", aerr, "entry", e)
	}
	s.log.Info("registry change", "actor", e.Actor, "action", action, "detail", e.Detail)
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

func (s *Server) rest() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(s.metrics.Echo(restStatus))
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			_ = c.JSON(he.Code, map[string]string{"error": fmt.Sprint(he.Message)})
			return
		}
		ae := mapErr(err)
		_ = c.JSON(ae.Status, map[string]string{"error": ae.Msg})
	}
	e.Match([]string{http.MethodGet, http.MethodHead}, "/healthz", func(c echo.Context) error {
		if _, err := s.st.Schedule(c.Request().Context()); err != nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()})
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/v1/regions", func(c echo.Context) error {
		if _, err := caller(c.Request().Context(), false); err != nil {
			return err
		}
		rs, err := s.st.List(c.Request().Context())
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string][]region.Region{"regions": rs})
	})
	e.GET("/v1/regions/:name", func(c echo.Context) error {
		if _, err := caller(c.Request().Context(), false); err != nil {
			return err
		}
		r, err := s.st.Get(c.Request().Context(), c.Param("name"))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, r)
	})
	e.POST("/v1/regions", func(c echo.Context) error {
		var req struct {
			Name string `json:"name"`
			Peer string `json:"peer"`
		}
		if err := apierr.DecodeBody(c.Request().Body, 4096, &req); err != nil {
			return err
		}
		r, err := s.add(c.Request().Context(), req.Name, req.Peer)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, r)
	})
	// POST /v1/regions/{name}:retire (echo parameters end at '/', so the verb is split off here).
	e.POST("/v1/regions/:name", func(c echo.Context) error {
		name, ok := strings.CutSuffix(c.Param("name"), ":retire")
		if !ok {
			return echo.NewHTTPError(http.StatusNotFound, "registry: unknown action; POST /v1/regions/{name}:retire retires a region")
		}
		r, err := s.retire(c.Request().Context(), name)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, r)
	})
	e.GET("/v1/layouts", func(c echo.Context) error {
		doc, err := s.layouts(c.Request().Context())
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, doc)
	})
	e.GET("/v1/audit", func(c echo.Context) error {
		if _, err := caller(c.Request().Context(), true); err != nil {
			return err
		}
		log, err := s.st.AuditLog(c.Request().Context())
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{"entries": log})
	})
	return e
}

type rpc struct{ s *Server }

func toProto(r region.Region) *idgenv1.Region {
	p := &idgenv1.Region{Name: r.Name, Number: int32(r.Number), Peer: r.Peer, Status: r.Status, AddedAt: timestamppb.New(r.AddedAt)}
	if r.RetiredAt != nil {
		p.RetiredAt = timestamppb.New(*r.RetiredAt)
	}
	return p
}

func cerr(err error) error { return mapErr(err).Connect() }

func (r *rpc) ListRegions(ctx context.Context, _ *connect.Request[idgenv1.ListRegionsRequest]) (*connect.Response[idgenv1.ListRegionsResponse], error) {
	if _, err := caller(ctx, false); err != nil {
		return nil, cerr(err)
	}
	rs, err := r.s.st.List(ctx)
	if err != nil {
		return nil, cerr(err)
	}
	out := &idgenv1.ListRegionsResponse{}
	for _, x := range rs {
		out.Regions = append(out.Regions, toProto(x))
	}
	return connect.NewResponse(out), nil
}

func (r *rpc) GetRegion(ctx context.Context, req *connect.Request[idgenv1.GetRegionRequest]) (*connect.Response[idgenv1.GetRegionResponse], error) {
	if _, err := caller(ctx, false); err != nil {
		return nil, cerr(err)
	}
	x, err := r.s.st.Get(ctx, req.Msg.GetName())
	if err != nil {
		return nil, cerr(err)
	}
	return connect.NewResponse(&idgenv1.GetRegionResponse{Region: toProto(x)}), nil
}

func (r *rpc) AddRegion(ctx context.Context, req *connect.Request[idgenv1.AddRegionRequest]) (*connect.Response[idgenv1.AddRegionResponse], error) {
	x, err := r.s.add(ctx, req.Msg.GetName(), req.Msg.GetPeer())
	if err != nil {
		return nil, cerr(err)
	}
	return connect.NewResponse(&idgenv1.AddRegionResponse{Region: toProto(x)}), nil
}

func (r *rpc) RetireRegion(ctx context.Context, req *connect.Request[idgenv1.RetireRegionRequest]) (*connect.Response[idgenv1.RetireRegionResponse], error) {
	x, err := r.s.retire(ctx, req.Msg.GetName())
	if err != nil {
		return nil, cerr(err)
	}
	return connect.NewResponse(&idgenv1.RetireRegionResponse{Region: toProto(x)}), nil
}

func (r *rpc) GetLayouts(ctx context.Context, _ *connect.Request[idgenv1.GetLayoutsRequest]) (*connect.Response[idgenv1.GetLayoutsResponse], error) {
	doc, err := r.s.layouts(ctx)
	if err != nil {
		return nil, cerr(err)
	}
	out := &idgenv1.GetLayoutsResponse{Schedule: doc.Schedule}
	for _, p := range doc.Periods {
		lp := &idgenv1.LayoutPeriod{Layout: p.Layout, StartsAt: timestamppb.New(p.StartsAt)}
		for _, f := range p.Fields {
			lp.Fields = append(lp.Fields, &idgenv1.LayoutField{Name: f.Name, Bits: int32(f.Bits)})
		}
		out.Periods = append(out.Periods, lp)
	}
	return connect.NewResponse(out), nil
}

// restStatus is the status a REST error is answered with.
func restStatus(err error) int {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he.Code
	}
	return mapErr(err).Status
}
