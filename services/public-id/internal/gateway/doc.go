// Package gateway is the customer gateway: it maps public URLs to internal upstreams,
// translating public IDs in, and rebuilds every upstream response from the route's declared
// type on the way out. It is an allowlist: only declared methods, query parameters, headers and
// fields pass; ID fields carry public IDs of their declared resource; anything else that holds
// an internal ID turns the response into a 502, never into a leak.
//
// A request goes through steps, one file each; each returns its result or one *failure, which
// names the request's outcome (its status, metric label and public message are one row of the
// table in outcome.go):
//
//   - admit.go: who asks (the request ID of requestid.go, the client's address or API key), the
//     gateway's and the route's bounds on requests in flight, the client's rates;
//   - match.go: the route of the public path, and its methods;
//   - translate.go: the public IDs of the path and the query, turned into internal ones;
//   - upstream.go: the upstream transport, and what the upstream's status means;
//   - rebuild.go: the body, read within the body budget and rebuilt in a rewrite slot;
//   - headers.go: the header and Location policy, redirects included;
//   - publish.go: the public ID of every internal ID of a response;
//   - token.go: the handles of a response's tokens (an upstream's cursors, each a keyed MAC of its
//     route, ttl, window and value), kept in the store once the answer passed every check,
//     and the handle of a query's token swapped back for the upstream's value.
//   - represent.go: the representation of a rebuilt body (its ETag and a 304, gzip, Vary) and
//     the Cache-Control of a success.
//
// ServeHTTP (serve.go) runs them, writes the reply with its CORS headers (cors.go, which answers
// preflights too), counts its outcome and writes its access log line (accesslog.go), once;
// health.go is the gateway's /healthz. memory.go derives the Go memory limit that holds the
// process to the byte budget.
package gateway
