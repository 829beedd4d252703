package gateway

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// newUpstreamTransport is the upstream transport, called as a RoundTripper (not through an
// http.Client): a redirect comes back as the upstream sent it, never followed, since redirects
// are the gateway's to judge (a Location must map to a public path; a redirect could lead
// anywhere, the internal API included). There is no client timeout: each request carries its
// route's deadline, which bounds the whole exchange (connect, headers and body).
func newUpstreamTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute, MaxResponseHeaderBytes: 64 << 10}
}

// call asks the upstream for target within ctx (the route's deadline) and returns its response
// when the gateway passes on what it means: a 2xx to rebuild, a 3xx to judge as a redirect.
// Otherwise the response is closed and the failure says what the customer gets: 404 and 410
// the one not-found answer, another 4xx its status with the gateway's words, the rest 502; a
// broken exchange 502 or, past the deadline, 504.
//
// The upstream gets the request ID (X-Request-Id) and is asked for its body uncompressed
// (Accept-Encoding: identity; the gateway compresses what it rebuilt itself, represent.go).
//
// A HEAD is a GET without the body: the upstream's GET answer, rebuilt and checked as for a GET,
// gives the same status and headers (an upstream's HEAD has no body to rebuild or check).
func (g *Gateway) call(ctx context.Context, q *request, target *url.URL) (*http.Response, *failure) {
	method := q.r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	// What http.NewRequestWithContext makes of the URL, without writing it out to parse it again:
	// no body, and the Host header the URL's host without an empty port.
	if h := target.Host; strings.LastIndexByte(h, ':') > strings.LastIndexByte(h, ']') {
		target.Host = strings.TrimSuffix(h, ":")
	}
	req := (&http.Request{Method: method, URL: target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Accept": {"application/json"}, "Accept-Encoding": identityOnly, "X-Request-Id": {q.id}},
		Host:   target.Host}).WithContext(ctx)
	t0 := g.now()
	resp, err := g.client.RoundTrip(req)
	q.lim.upstream.Observe(g.now().Sub(t0).Seconds())
	if err != nil {
		// As an http.Client says it ("Get \"…\": …"; the log redacts the quoted URL).
		return nil, upstreamFailure(q.r.Context(), &url.Error{Op: method[:1] + strings.ToLower(method[1:]), URL: target.String(), Err: err})
	}
	var f *failure
	switch code := resp.StatusCode; {
	case code == http.StatusNotFound || code == http.StatusGone:
		f = fail(outcomeNotFound, nil)
	case code >= 400 && code < 500:
		f = upstream4xx(code)
	case code >= 200 && code < 400:
		return resp, nil
	default:
		f = upstreamStatus(code)
	}
	resp.Body.Close()
	return nil, f
}

var identityOnly = []string{"identity"}
