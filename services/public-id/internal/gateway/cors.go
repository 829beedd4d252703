package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/idgen/idgen/libs/routes"
	"github.com/rs/cors"
)

// corsMaxAge is how long a browser may keep a preflight's answer, in seconds.
const corsMaxAge = 600

// newCORS is the CORS policy of each route (github.com/rs/cors), when origins are configured
// (nil otherwise: no CORS header is ever sent): pages of those exact origins may call the route's
// methods, sending If-None-Match and the API key's header, and read X-Request-Id, ETag and
// Retry-After besides the headers every page may read. Credentials (cookies, TLS client
// certificates, HTTP authentication) are never allowed, and no origin is a wildcard.
func newCORS(origins []string, apiKeyHeader string, rs []*routes.Route) (map[*routes.Route]*cors.Cors, error) {
	if len(origins) == 0 {
		return nil, nil
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || strings.Contains(o, "*") || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" || u.String() != o {
			return nil, fmt.Errorf("gateway: CORS origin %q: want an exact origin, scheme://host[:port], such as https://app.example.com (no path, no wildcard)", o)
		}
	}
	allowed := []string{"If-None-Match"}
	if apiKeyHeader != "" {
		allowed = append(allowed, apiKeyHeader)
	}
	out := make(map[*routes.Route]*cors.Cors, len(rs))
	for _, r := range rs {
		out[r] = cors.New(cors.Options{
			AllowedOrigins: origins, AllowedMethods: r.AllowedMethods(), AllowedHeaders: allowed,
			ExposedHeaders: []string{"X-Request-Id", "ETag", "Retry-After"}, MaxAge: corsMaxAge,
		})
	}
	return out, nil
}

// preflight answers a CORS preflight (OPTIONS with Access-Control-Request-Method) on a route's
// path, when CORS is configured: 204, with the Access-Control-Allow-* headers when the origin,
// the method (one of the route's) and the headers asked for are allowed, without them (which the
// browser takes as a refusal) otherwise. It is counted ok on the route and logged. It returns
// false for any other request.
func (g *Gateway) preflight(w http.ResponseWriter, q *request) bool {
	if g.cors == nil || q.r.Method != http.MethodOptions || q.r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	rt, pub := g.findRoute(q.r.URL.Path)
	if rt == nil {
		return false
	}
	q.route, q.lim, q.pub, q.start = rt, g.perRoute[rt], pub, g.now()
	w.Header()["Cache-Control"] = []string{"no-store"}
	g.cors[rt].HandlerFunc(w, q.r) // writes the status
	q.lim.requests[outcomeOK].Inc()
	q.lim.duration.Observe(g.now().Sub(q.start).Seconds())
	g.logRequest(q, http.StatusNoContent, outcomeOK, 0, false)
	return true
}

// allowOrigin sets the CORS headers of an answer on a route (Vary: Origin always; the allowed
// origin and the exposed headers for a page of a configured origin).
func (g *Gateway) allowOrigin(w http.ResponseWriter, q *request) {
	if g.cors == nil || q.route == nil {
		return
	}
	g.cors[q.route].HandlerFunc(w, q.r)
}
