package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/services/public-id/internal/scan"
)

// redirect passes an upstream redirect only when the route declares Location and it names a
// route's upstream; the customer then gets that route's public path.
func (g *Gateway) redirect(q *request, resp *http.Response) (*answer, *failure) {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return nil, upstreamStatus(resp.StatusCode)
	}
	if q.route.HeaderKinds()["Location"] != "location" {
		return nil, fail(outcomeUnsafe, unsafe("Location", "an upstream redirect, and the route declares no location"))
	}
	headers, err := g.headers(q.r.Context(), q.route, resp.Header, &q.known)
	if err != nil {
		return nil, refusal(q.r.Context(), err)
	}
	if headers.Get("Location") == "" {
		return nil, fail(outcomeUnsafe, unsafe("Location", "an upstream redirect without a location"))
	}
	return &answer{status: resp.StatusCode, headers: headers}, nil
}

// headers returns the upstream headers the route declares, checked: a plain header that holds an
// internal ID (the response's own, or any that looks like one) makes the response unsafe, and a
// location is rewritten to a public path.
func (g *Gateway) headers(ctx context.Context, route *routes.Route, in http.Header, known *Known) (http.Header, error) {
	var out http.Header   // made for the first header that passes
	var ids *scan.Scanner // made for the first plain header
	for name, kind := range route.HeaderKinds() {
		vs := in[name] // route.HeaderKinds() holds canonical names, as the upstream's header does
		if len(vs) == 0 {
			continue
		}
		if out == nil {
			out = http.Header{}
		}
		if kind == "location" {
			if len(vs) > 1 {
				return nil, unsafe(name, "more than one location")
			}
			loc, err := g.location(ctx, route, vs[0])
			if err != nil {
				return nil, err
			}
			out.Set(name, loc)
			continue
		}
		if ids == nil {
			s := g.detect.scanner()
			ids = &s
		}
		for _, v := range vs {
			if ids.Find([]byte(v)) != "" || known.Contains([]byte(v)) {
				return nil, unsafe(name, "a header holds an internal ID")
			}
			out.Add(name, v)
		}
	}
	return out, nil
}

// location rewrites an upstream URL to the public path of the route whose upstream it names,
// with its internal ID published under that route's resource. Any other location is unsafe.
func (g *Gateway) location(ctx context.Context, route *routes.Route, loc string) (string, error) {
	u, err := route.UpstreamURL().Parse(loc)
	if err != nil {
		return "", unsafe("Location", "not a URL")
	}
	for _, rt := range g.routes {
		upPrefix, upSuffix := rt.UpstreamPath()
		if up := rt.UpstreamURL(); upPrefix == "" || u.Scheme != up.Scheme || u.Host != up.Host {
			continue
		}
		rest, ok := strings.CutPrefix(u.EscapedPath(), upPrefix)
		if !ok {
			continue
		}
		digits, ok := strings.CutSuffix(rest, upSuffix)
		if !ok {
			continue
		}
		id, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || id < 0 || strconv.FormatInt(id, 10) != digits {
			continue
		}
		pubs, err := g.publish(ctx, []pendingID{{id: id, resource: rt.Resource, field: "Location"}}, nil)
		if err != nil {
			return "", err
		}
		pre, suf := rt.PublicPath()
		return pre + pubs[id] + suf, nil
	}
	return "", unsafe("Location", "names no route's upstream")
}
