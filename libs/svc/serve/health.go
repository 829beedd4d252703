package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"github.com/idgen/idgen/libs/svc/healthz"
)

// Health is a service's gRPC health (grpc.health.v1): each of its Connect services and "" (the
// server as a whole) share one status, so a client checking any of them sees the same answer.
// Drain turns them all to NOT_SERVING for good, when a graceful shutdown starts (Serve, through
// Shutdown.Health), and the service's /healthz answers 503 draining from then on (Draining).
type Health struct {
	checker  HealthChecker
	services []string
	mu       sync.Mutex // orders SetServing and Drain
	draining bool
}

// NewHealth returns the health of a server that serves services, SERVING or NOT_SERVING.
func NewHealth(serving bool, services ...string) *Health {
	h := &Health{checker: NewHealthChecker(services...), services: services}
	h.SetServing(serving)
	return h
}

// SetServing sets every service's status (and the server's); after Drain it stays NOT_SERVING.
func (h *Health) SetServing(ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.set(ok && !h.draining)
}

func (h *Health) set(ok bool) {
	st := grpchealth.StatusNotServing
	if ok {
		st = grpchealth.StatusServing
	}
	for _, s := range h.services {
		h.checker.SetStatus(s, st)
	}
	h.checker.SetStatus("", st)
}

// Drain turns every status to NOT_SERVING for the rest of the process (Serve calls it when its
// shutdown starts; more than once, from several listeners, is the same as once).
func (h *Health) Drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.draining = true
	h.set(false)
}

// Draining reports whether Drain was called (a /healthz answers 503 draining from then on, while
// the API still serves for the deregistration delay).
func (h *Health) Draining() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.draining
}

// HealthzWhileDraining answers GET and HEAD /healthz with 503 and the draining body
// (healthz.Draining) once h is draining, and passes every other request to next: for a
// listener whose handler has a /healthz of its own that knows nothing of the drain (the public-ID
// service's gateway), so every listener's health check sees the drain at once.
func HealthzWhileDraining(h *Health, next http.Handler) http.Handler {
	body, _ := json.Marshal(healthz.Draining)
	body = append(body, '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && h.Draining() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			if r.Method == http.MethodGet {
				_, _ = w.Write(body)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Checker returns the checker the gRPC health handler serves.
func (h *Health) Checker() grpchealth.Checker { return h.checker }

// Handler returns the gRPC health handler and its path.
func (h *Health) Handler() (string, http.Handler) { return grpchealth.NewHandler(h.checker) }

// statusServiceUnknown is grpc.health.v1's SERVICE_UNKNOWN, which only Watch sends.
const statusServiceUnknown grpchealth.Status = 3

// HealthChecker is a grpchealth.StaticChecker that follows the gRPC health protocol for a
// service it does not know: Check answers NOT_FOUND, and Watch sends SERVICE_UNKNOWN and keeps
// the stream open (the service may be registered later), where the static checker ends it.
type HealthChecker struct{ *grpchealth.StaticChecker }

// NewHealthChecker returns a checker that knows the given services (and "", the server).
func NewHealthChecker(services ...string) HealthChecker {
	return HealthChecker{grpchealth.NewStaticChecker(services...)}
}

// Check implements grpchealth.Checker.
func (h HealthChecker) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	resp, err := h.StaticChecker.Check(ctx, req)
	if connect.CodeOf(err) == connect.CodeNotFound {
		if info, ok := connect.CallInfoForHandlerContext(ctx); ok && strings.HasSuffix(info.Spec().Procedure, "/Watch") {
			return &grpchealth.CheckResponse{Status: statusServiceUnknown}, nil
		}
	}
	return resp, err
}

// Watch implements grpchealth.Watcher: a service the checker does not know is watched too, so
// its stream stays open (with SERVICE_UNKNOWN, from Check) until the client ends it.
func (h HealthChecker) Watch(ctx context.Context, req *grpchealth.CheckRequest, onChange func()) (func(), error) {
	stop, err := h.StaticChecker.Watch(ctx, req, onChange)
	if connect.CodeOf(err) == connect.CodeNotFound {
		return func() {}, nil
	}
	return stop, err
}
