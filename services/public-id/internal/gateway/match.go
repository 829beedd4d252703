package gateway

import (
	"slices"
	"strings"

	"github.com/idgen/idgen/libs/routes"
)

// match finds the route of the request's public path and the public ID in it (none: the one
// not-found answer, on route ""), then checks the route allows the method (else 405 with Allow).
func (g *Gateway) match(q *request) *failure {
	if rt, pub := g.findRoute(q.r.URL.Path); rt != nil {
		q.route, q.lim, q.pub, q.start = rt, g.perRoute[rt], pub, g.now()
	}
	switch {
	case q.route == nil:
		return fail(outcomeNotFound, nil)
	case !slices.Contains(q.route.AllowedMethods(), q.r.Method):
		return &failure{outcome: outcomeMethodNotAllowed, allow: q.route.Allow(),
			msg: "method " + q.r.Method + " is not allowed here; allowed: " + q.route.Allow()}
	}
	return nil
}

// findRoute is the route of a public path and the public ID in it; nil for none.
func (g *Gateway) findRoute(path string) (*routes.Route, string) {
	for _, rt := range g.routes {
		pre, suf := rt.PublicPath()
		if rest, ok := strings.CutPrefix(path, pre); ok {
			if id, ok := strings.CutSuffix(rest, suf); ok && id != "" && !strings.Contains(id, "/") {
				return rt, id
			}
		}
	}
	return nil, ""
}
