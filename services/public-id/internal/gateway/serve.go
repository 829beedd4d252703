package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/svc/serve"
)

// request is one customer request on its way through the steps.
type request struct {
	r     *http.Request
	route *routes.Route // once matched
	lim   *routeLimits  // the route's bounds and series, once matched
	pub   string        // the public ID of the path, once matched
	start time.Time     // when it was matched, for the latency metric
	known Known         // the internal IDs of the request, then of the response
	enc   codings       // its Accept-Encoding, once read (represent.go)

	// Who asks, found once (ServeHTTP): for the rate limits, the upstream and the access log.
	id      string     // the request ID (requestid.go)
	traceID string     // a trusted load balancer's X-Amzn-Trace-Id, for the access log; "" for none
	began   time.Time  // when the gateway took it, for the access log
	client  netip.Addr // the client's address, as clientAddr finds it
	key     clientKey  // whom the rate limits count: the address, or the API key
	keyTag  string     // the API key's short hash, for the log; "" for none

	// What admission took, freed after the reply (release).
	inFlight   bool         // one of the gateway's slots for requests in flight
	routeSlots *routeLimits // one of the route's
}

// release frees what admission took for q.
func (g *Gateway) release(q *request) {
	if q.inFlight {
		<-g.inFlight
	}
	if q.routeSlots != nil {
		<-q.routeSlots.inFlight
	}
}

// answer is a reply: the rebuilt upstream response, the gateway's own error or its health.
type answer struct {
	status  int
	headers http.Header
	body    []byte // JSON, without its final newline; nil for none
	// encoded: body is gzip (represent.go), the newline inside, and is written as it is; pooled
	// is its buffer, given back once the reply is written.
	encoded bool
	pooled  *[]byte
}

// ServeHTTP implements http.Handler: it runs the steps, then writes the reply, counts the
// request's outcome and logs it (accesslog.go), once. What admission took is freed after the
// reply is written; the rewrite slot and the body budget before (rebuild.go), so a slow reader
// holds only its own connection and its in-flight slots.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := &request{r: r, began: g.now()}
	defer g.release(q)
	f := g.identify(q)
	w.Header()["X-Request-Id"] = []string{q.id}
	if f == nil {
		f = g.admit(q)
	}
	if f == nil && r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		a := g.health(r.Context())
		g.logRequest(q, a.status, outcomeOK, write(w, r, a), true)
		return
	}
	if f == nil && g.preflight(w, q) {
		return
	}
	var a *answer
	if f == nil {
		a, f = g.forward(q)
	}
	route := ""
	if q.route != nil {
		route = q.route.Name
	}
	o := outcomeOK
	if f != nil {
		o, a = f.outcome, g.failed(route, f)
	} else {
		g.cacheControl(q, a)
	}
	if q.lim != nil {
		q.lim.requests[o].Inc()
	} else {
		g.requests.WithLabelValues(route, o.String()).Inc()
	}
	g.allowOrigin(w, q)
	n := write(w, r, a)
	if a.pooled != nil {
		putBuffer(a.pooled)
	}
	if q.lim != nil {
		q.lim.duration.Observe(g.now().Sub(q.start).Seconds())
	}
	g.logRequest(q, a.status, o, n, false)
}

// forward runs the steps after the gateway's admission: match the route, take the route's
// admission, translate the request, call the upstream, and rebuild its answer.
func (g *Gateway) forward(q *request) (*answer, *failure) {
	if f := g.match(q); f != nil {
		return nil, f
	}
	if f := g.admitRoute(q); f != nil {
		return nil, f
	}
	if f := g.acceptable(q); f != nil {
		return nil, f
	}
	target, f := g.translate(q)
	if f != nil {
		return nil, f
	}
	if f := preconditions(q.r); f != nil {
		return nil, f
	}
	// The route's timeout bounds the whole exchange with the upstream: connect, headers, body.
	ctx, cancel := context.WithTimeout(q.r.Context(), q.lim.timeout)
	defer cancel()
	resp, f := g.call(ctx, q, target)
	if f != nil {
		return nil, f
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return g.redirect(q, resp)
	}
	return g.rebuild(q, resp)
}

// failed is the reply to a failure, from its row of outcomes; the log says why where the row
// says so, with the route and never an upstream's bytes: every quoted string is removed (an
// upstream's bytes in a transport error, the upstream URL with its internal ID), and for an
// unsafe response only the field and the reason are named, never the value.
func (g *Gateway) failed(route string, f *failure) *answer {
	row := outcomes[f.outcome]
	var ue *UnsafeError
	switch {
	case f.outcome == outcomeUnsafe && errors.As(f.err, &ue):
		g.log.Warn("gateway refused an upstream response", "route", route, "field", ue.Field, "reason", ue.Reason)
	case f.outcome == outcomeCanceled:
		// There is no one to tell, so the log says it at debug level only.
		g.log.Debug("gateway request canceled by the customer", "route", route, "error", redacted(f.err))
	case row.logged:
		g.log.Warn("gateway request failed", "route", route, "outcome", row.label, "error", redacted(f.err))
	}
	status, msg := cmp.Or(f.status, row.status), f.msg
	if msg == "" {
		msg = row.msg
	}
	h := http.Header{"Cache-Control": {"no-store"}}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		h.Set("Retry-After", strconv.Itoa(max(f.retryAfter, 1)))
	}
	if f.allow != "" {
		h.Set("Allow", f.allow)
	}
	body, _ := json.Marshal(map[string]string{"error": msg})
	return &answer{status: status, headers: h, body: body}
}

func redacted(err error) string {
	if err == nil {
		return ""
	}
	return serve.Redact(err.Error())
}

// The values of the headers every reply sets, shared by the replies (net/http copies a reply's
// header before it writes it, and nothing changes a value in place).
var (
	jsonType   = []string{"application/json"}
	zeroLength = []string{"0"}
	noSniff    = []string{"nosniff"}
)

// write is the gateway's one reply writer: a's headers (beside what ServeHTTP set already: the
// request ID, CORS), then its body, a JSON one with its final newline. Content-Length is set, so a
// HEAD gets the status and headers a GET gets, and no body. It returns the body bytes written.
func write(w http.ResponseWriter, r *http.Request, a *answer) int {
	h := w.Header()
	for k, v := range a.headers {
		if k == "Vary" {
			h[k] = append(v[:len(v):len(v)], h[k]...) // with CORS's Vary: Origin
			continue
		}
		h[k] = v
	}
	size := len(a.body)
	if a.body != nil && !a.encoded {
		size++ // the newline
	}
	switch {
	case a.body != nil:
		h["Content-Type"] = jsonType
		h["Content-Length"] = []string{strconv.Itoa(size)}
	case a.status != http.StatusNoContent && a.status != http.StatusNotModified:
		h["Content-Length"] = zeroLength // what the server adds to a GET's empty body, set for a HEAD too
	}
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(a.status)
	if a.body == nil || r.Method == http.MethodHead {
		return 0
	}
	n, err := w.Write(a.body)
	if err == nil && !a.encoded {
		m, _ := w.Write(newline)
		n += m
	}
	return n
}

var newline = []byte{'\n'}
