package gateway

import (
	"context"
	"log/slog"
	"net/http"
)

// logRequest writes the access log's line for q (AccessLog, at info level; /healthz at debug
// level, since load balancers ask it every few seconds): the request ID (and a trusted AWS load
// balancer's X-Amzn-Trace-Id, as trace_id), the method, the route
// and its public path as the route's template with the public ID (only a well-formed one of the
// route's resource: a malformed one could be anything a customer typed, an internal ID included),
// the status, the outcome, the body bytes sent (after compression; 0 for a HEAD), the duration,
// the client's address as the gateway found it (behind a trusted proxy, X-Forwarded-For's) and,
// for a request with an API key, the key's short hash. Never a query, an internal ID or a key.
func (g *Gateway) logRequest(q *request, status int, o outcome, sent int, health bool) {
	level := slog.LevelInfo
	if health {
		level = slog.LevelDebug
	}
	ctx := context.Background()
	if !g.access.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 13)
	attrs = append(attrs, slog.String("request_id", q.id))
	if q.traceID != "" {
		attrs = append(attrs, slog.String("trace_id", q.traceID))
	}
	attrs = append(attrs, slog.String("method", logMethod(q.r.Method)))
	if q.route != nil {
		attrs = append(attrs, slog.String("route", q.route.Name), slog.String("path", q.route.Public))
		if res, err := g.maker.Parse(q.pub); err == nil && res == q.route.Resource {
			attrs = append(attrs, slog.String("public_id", q.pub))
		}
	} else if health {
		attrs = append(attrs, slog.String("path", "/healthz"))
	}
	attrs = append(attrs, slog.Int("status", status), slog.String("outcome", o.String()), slog.Int("bytes", sent),
		slog.Duration("duration", g.now().Sub(q.began)))
	if q.client.IsValid() {
		attrs = append(attrs, slog.String("client", q.client.String()))
	}
	if q.keyTag != "" {
		attrs = append(attrs, slog.String("api_key", q.keyTag))
	}
	g.access.LogAttrs(ctx, level, "gateway request", attrs...)
}

// logMethod is the request's method as the log shows it: a method a customer made up, which
// could spell anything, is "other".
func logMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodDelete, http.MethodOptions, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}
