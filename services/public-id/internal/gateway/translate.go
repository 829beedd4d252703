package gateway

import (
	"context"
	"errors"
	"net/url"
	"strconv"

	"github.com/idgen/idgen/services/public-id/mapping"
)

// translate builds the upstream URL: the route's template with the internal ID of the path's
// public ID, then the declared query parameters, checked and translated (an id parameter's
// public ID to its internal ID, a token's handle to the upstream's value: token.go). Anything
// else in the customer's query is dropped. Every
// internal ID of the request goes into q.known.
func (g *Gateway) translate(q *request) (*url.URL, *failure) {
	internal, f := g.resolve(q.r.Context(), q.route.Resource, q.pub)
	if f != nil {
		return nil, f
	}
	q.known.Add(internal)
	query, f := g.query(q)
	if f != nil {
		return nil, f
	}
	target, err := q.route.Target(internal, query)
	if err != nil {
		return nil, fail(outcomeUpstreamError, err)
	}
	return target, nil
}

// query checks and translates the declared query parameters of q and returns them encoded, ""
// for none.
func (g *Gateway) query(q *request) (string, *failure) {
	if len(q.route.Query) == 0 || q.r.URL.RawQuery == "" {
		return "", nil
	}
	in, err := url.ParseQuery(q.r.URL.RawQuery)
	if err != nil {
		return "", badRequest("malformed query string")
	}
	pass := url.Values{}
	for name, t := range q.route.Query {
		vs := in[name]
		switch {
		case len(vs) == 0:
			continue
		case len(vs) > 1:
			return "", badRequest("query parameter " + name + " is given more than once")
		}
		v := vs[0]
		if t.Type == "token" {
			var f *failure
			if v, f = g.redeem(q, name, v); f != nil {
				return "", f
			}
		} else if t.Type == "id" {
			id, f := g.resolve(q.r.Context(), t.Resource, v)
			if f != nil {
				return "", f
			}
			q.known.Add(id)
			v = strconv.FormatInt(id, 10)
		} else if v, err = t.QueryValue(name, v); err != nil {
			return "", badRequest(err.Error())
		}
		pass.Set(name, v)
	}
	return pass.Encode(), nil
}

// resolve turns a customer's public ID of the given resource into its internal ID; unknown,
// malformed and other resources' IDs all get the one not-found answer.
func (g *Gateway) resolve(ctx context.Context, resource, pub string) (int64, *failure) {
	if res, err := g.maker.Parse(pub); err != nil || res != resource {
		return 0, fail(outcomeNotFound, nil) // malformed or another resource's: the store is never touched
	}
	internal, err := g.store.Resolve(ctx, pub)
	switch {
	case errors.Is(err, mapping.ErrNotFound):
		return 0, fail(outcomeNotFound, nil)
	case err != nil && ctx.Err() != nil:
		return 0, fail(outcomeCanceled, err) // the customer left: not the store's failure
	case err != nil:
		return 0, fail(outcomeStoreUnavailable, err)
	}
	return internal, nil
}
