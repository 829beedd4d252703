package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"unsafe"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// API is what a service serves on its port, the same way in every service: its Connect service
// (Connect, gRPC, gRPC-Web) by each procedure's exact path and UNIMPLEMENTED for the others, gRPC
// health and reflection (which lists, and can describe and call, the service, health and
// reflection itself), /metrics for scrapers, and its REST API for every other request that is no
// RPC. Each request's context carries its request ID and caller (WithRequest); the requests in
// flight are counted, and browsers of the configured origins admitted.
type API struct {
	ConnectPath string       // the Connect handler's path, from idgenv1connect.New…ServiceHandler
	Connect     http.Handler // the Connect handler
	Procedures  []string     // the service's procedures (idgenv1connect.…Procedure)
	REST        http.Handler // the REST API
	// RESTPaths are REST routes mounted by their own ServeMux patterns as well, for hot paths:
	// an exact path, or one with {name} segments for echo's :name parameters. The catch-all
	// costs a path match per request, and echo's router another (restPath).
	RESTPaths []string
	Health    *Health // its services are the ones reflection lists, with health and reflection
	Metrics   prometheus.Gatherer
	Requests  *RequestMetrics
	Resolver  *auth.Resolver
	Browsers  Browsers
}

// Handler returns the port's handler.
func (a API) Handler() http.Handler {
	mux := http.NewServeMux()
	Mount(mux, a.ConnectPath, a.Connect, a.Procedures...)
	mux.Handle(a.Health.Handler())
	refl := Reflector(append(append([]string(nil), a.Health.services...), grpcServices...)...)
	mux.Handle(grpcreflect.NewHandlerV1(refl))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(refl))
	mux.Handle("/metrics", auth.ScrapersOnly(MetricsHandler(a.Metrics)))
	mux.Handle("/", RPCOr(a.REST))
	for _, p := range a.RESTPaths {
		mux.Handle(p, a.Requests.restPath(a.REST, p))
	}
	return a.Browsers.Wrap(a.Requests.InFlight(WithRequest(a.Resolver, mux)))
}

// MetricsHandler serves g in the Prometheus exposition formats.
func MetricsHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

// ConnectOptions are the Connect handler options of every service: the services' JSON codec,
// request messages of at most maxBytes, compression only of responses of 1 KiB or more (gzip
// costs more than it saves on small messages), and the request metrics.
func ConnectOptions(maxBytes int, m *RequestMetrics) []connect.HandlerOption {
	return append(JSONCodec(),
		connect.WithReadMaxBytes(maxBytes),
		connect.WithCompressMinBytes(1024),
		m.Interceptor(),
	)
}

type reqIDKey struct{}

var (
	reqPrefix = func() string { var b [4]byte; _, _ = rand.Read(b[:]); return hex.EncodeToString(b[:]) + "-" }()
	reqSeq    atomic.Uint64
)

// WithRequest builds each request's context once: its request ID (the caller's X-Request-Id when
// it has one of at most 128 bytes, else a per-process prefix and a counter), echoed in the
// response, and its caller as rv resolves it (auth.FromContext). The context, the ID's header
// value, the caller and a made ID's bytes are one allocation (requestContext).
func WithRequest(rv *auth.Resolver, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := &requestContext{Context: r.Context(), res: rv.Resolve(r)}
		if v := r.Header["X-Request-Id"]; len(v) > 0 && v[0] != "" && len(v[0]) <= 128 { // Header.Get without canonicalizing a canonical key
			rc.id = v[0]
		} else {
			b := strconv.AppendUint(append(rc.made[:0], reqPrefix...), reqSeq.Add(1), 10)
			rc.id = unsafe.String(unsafe.SliceData(b), len(b)) // rc.made is not written again
		}
		rc.hdr[0] = rc.id
		w.Header()["X-Request-Id"] = rc.hdr[:] // as Header.Set, without its own slice
		if rc.res.Err != nil && errors.Is(rc.res.Err, auth.ErrDistrusted) {
			refuseConn(w, r, rc.res.Err)
			return
		}
		next.ServeHTTP(w, r.WithContext(rc))
	})
}

// refuseConn answers a request on a connection whose client certificate is no longer trusted,
// whatever it asks for (health and reflection too): 403 (permission_denied), as a refused caller
// is answered, in the request's protocol (gRPC, gRPC-Web and Connect by their error format, REST
// as apierr.Body), asking the client to close the connection (HTTP/1.1 closes it after the
// response; HTTP/2 sends a GOAWAY). The Gate closes it shortly anyway (auth.CloseDistrusted).
func refuseConn(w http.ResponseWriter, r *http.Request, err error) {
	ae := apierr.Map(err, func(error) *apierr.Error { return nil })
	w.Header().Set("Connection", "close")
	if isRPC(r) {
		_ = connectErrors.Write(w, r, ae.Connect())
		return
	}
	b, _ := json.Marshal(ae.Body())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.Status)
	_, _ = w.Write(append(b, '\n'))
}

var connectErrors = connect.NewErrorWriter()

// requestContext is a request's context as WithRequest builds it: the request ID and the caller
// answered by key, everything else by the parent (cancellation included: context.WithCancel on
// it finds the parent's through Value, as on a context.WithValue).
type requestContext struct {
	context.Context
	id   string
	res  *auth.Result
	hdr  [1]string // the X-Request-Id header's value
	made [32]byte  // a made request ID: the prefix (9 bytes) and a uint64 (at most 20 digits)
}

func (c *requestContext) Value(key any) any {
	switch key.(type) {
	case reqIDKey:
		return c.id
	case auth.ContextKey:
		return c.res
	}
	return c.Context.Value(key)
}

// RequestID returns the request ID WithRequest gave the request of ctx ("" outside one).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(reqIDKey{}).(string)
	return id
}
