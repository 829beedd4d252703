package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/svc/quota"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
)

// Route maps a public URL template to an internal upstream template.
type Route struct {
	// Public is the customer-facing path, with one {public_id}: "/orders/{public_id}".
	Public string `json:"public"`
	// Upstream is the internal URL, with {internal_id}: "http://orders.internal/internal/orders/{internal_id}".
	Upstream string `json:"upstream"`
	// Resource is the prefix the route's public IDs carry ("ord").
	Resource string `json:"resource"`
	// IDFields names the JSON keys holding internal IDs and the resource of each: {"id": "ord"}.
	IDFields map[string]string `json:"id_fields"`

	prefix, suffix string
}

// Config is the route table file.
type Config struct {
	Routes []Route `json:"routes"`
}

// LoadRoutes reads and checks a route table (JSON).
func LoadRoutes(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: routes: %w", err)
	}
	var c Config
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("gateway: routes %s: %w", path, err)
	}
	return &c, c.check()
}

func (c *Config) check() error {
	for i := range c.Routes {
		r := &c.Routes[i]
		pre, suf, ok := strings.Cut(r.Public, "{public_id}")
		if !ok || !strings.HasPrefix(pre, "/") || strings.Contains(suf, "{") {
			return fmt.Errorf("gateway: route %q: the public path needs one {public_id}", r.Public)
		}
		if strings.Count(r.Upstream, "{internal_id}") != 1 || !(strings.HasPrefix(r.Upstream, "http://") || strings.HasPrefix(r.Upstream, "https://")) {
			return fmt.Errorf("gateway: route %q: the upstream needs one {internal_id} in an http(s) URL", r.Public)
		}
		r.prefix, r.suffix = pre, suf
	}
	return nil
}

// Resources returns every resource prefix the routes use.
func (c *Config) Resources() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range c.Routes {
		for _, p := range append([]string{r.Resource}, valuesOf(r.IDFields)...) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

func valuesOf(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// Gateway is the customer-facing handler.
type Gateway struct {
	routes   []Route
	maker    *publicid.Maker
	store    mapping.Store
	client   *http.Client
	limits   *quota.Limiter
	rate     float64
	burst    int
	maxBody  int64
	log      *slog.Logger
	requests *prometheus.CounterVec
}

// Options configure a Gateway.
type Options struct {
	// RatePerClient is each client's request rate (per second, by IP); 0 for none. Burst default 2×.
	RatePerClient float64
	// UpstreamTimeout bounds each upstream call. Default 5 s.
	UpstreamTimeout time.Duration
	// MaxBody caps an upstream body read into memory; larger answers are a 502. Default 1 MiB.
	MaxBody int64
	Logger  *slog.Logger
}

// New builds the gateway.
func New(c *Config, maker *publicid.Maker, store mapping.Store, reg prometheus.Registerer, o Options) *Gateway {
	if o.UpstreamTimeout == 0 {
		o.UpstreamTimeout = 5 * time.Second
	}
	if o.MaxBody == 0 {
		o.MaxBody = 1 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	g := &Gateway{routes: c.Routes, maker: maker, store: store, limits: quota.New(nil), rate: o.RatePerClient,
		burst: max(int(2*o.RatePerClient), 1), maxBody: o.MaxBody, log: o.Logger,
		client: &http.Client{Timeout: o.UpstreamTimeout, Transport: &http.Transport{
			DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext, ResponseHeaderTimeout: o.UpstreamTimeout,
			MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_gateway_requests_total",
			Help: "Customer requests, by outcome (ok, not_found, rate_limited, upstream_error, upstream_timeout, unsafe_response)."}, []string{"outcome"}),
	}
	reg.MustRegister(g.requests)
	return g
}

// notFound is the one answer for unknown and malformed public IDs alike.
func (g *Gateway) notFound(w http.ResponseWriter) {
	g.requests.WithLabelValues("not_found").Inc()
	writeJSON(w, http.StatusNotFound, `{"error":"not found"}`)
}

func writeJSON(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body+"\n")
}

func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if ok, wait := g.limits.Take(clientKey(r), g.rate, g.burst, 1); !ok {
		g.requests.WithLabelValues("rate_limited").Inc()
		w.Header().Set("Retry-After", strconv.Itoa(quota.RetryAfterSeconds(wait)))
		writeJSON(w, http.StatusTooManyRequests, `{"error":"too many requests"}`)
		return
	}
	var route *Route
	var pub string
	for i := range g.routes {
		rt := &g.routes[i]
		if rest, ok := strings.CutPrefix(r.URL.Path, rt.prefix); ok {
			if id, ok := strings.CutSuffix(rest, rt.suffix); ok && id != "" && !strings.Contains(id, "/") {
				route, pub = rt, id
				break
			}
		}
	}
	if route == nil {
		g.notFound(w)
		return
	}
	if res, err := g.maker.Parse(pub); err != nil || res != route.Resource {
		g.notFound(w) // malformed: the store is never touched
		return
	}
	internal, err := g.store.Resolve(r.Context(), pub)
	if errors.Is(err, mapping.ErrNotFound) {
		g.notFound(w)
		return
	}
	if err != nil {
		g.fail(w, http.StatusServiceUnavailable, "upstream_error", err)
		return
	}
	target := strings.Replace(route.Upstream, "{internal_id}", strconv.FormatInt(internal, 10), 1)
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	var body io.Reader
	if r.Body != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
		body = http.MaxBytesReader(w, r.Body, g.maxBody)
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, target, body)
	if err != nil {
		g.fail(w, http.StatusBadGateway, "upstream_error", err)
		return
	}
	req.Header.Set("Accept", "application/json")
	if ct := r.Header.Get("Content-Type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			g.fail(w, http.StatusGatewayTimeout, "upstream_timeout", err)
			return
		}
		g.fail(w, http.StatusBadGateway, "upstream_error", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		g.fail(w, http.StatusBadGateway, "upstream_error", fmt.Errorf("upstream answered %s", resp.Status))
		return
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, g.maxBody+1))
	if err != nil {
		g.fail(w, http.StatusBadGateway, "upstream_error", err)
		return
	}
	if int64(len(raw)) > g.maxBody {
		g.fail(w, http.StatusBadGateway, "upstream_error", fmt.Errorf("upstream body larger than %d bytes", g.maxBody))
		return
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		w.WriteHeader(resp.StatusCode)
		return
	}
	out, err := Rewrite(raw, route.IDFields, func(in int64, resource string) (string, error) {
		// Most IDs in responses have their public ID already: look before making one.
		if pub, err := g.store.Lookup(r.Context(), in); !errors.Is(err, mapping.ErrNotFound) {
			return pub, err
		}
		return g.store.Publish(r.Context(), in, func() (string, error) { return g.maker.New(resource) })
	})
	if err != nil {
		g.fail(w, http.StatusBadGateway, "unsafe_response", err)
		return
	}
	g.requests.WithLabelValues("ok").Inc()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// fail answers without any upstream detail; the detail goes to the log.
func (g *Gateway) fail(w http.ResponseWriter, code int, outcome string, err error) {
	g.requests.WithLabelValues(outcome).Inc()
	g.log.Warn("gateway request failed", "outcome", outcome, "error", err.Error())
	msg := map[int]string{http.StatusBadGateway: "bad gateway", http.StatusGatewayTimeout: "gateway timeout",
		http.StatusServiceUnavailable: "service unavailable"}[code]
	writeJSON(w, code, `{"error":"`+msg+`"}`)
}
