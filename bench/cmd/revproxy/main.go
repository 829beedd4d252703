// Command revproxy is the plain reverse proxy the public-ID gateway is measured against: what a
// team would put in front of an upstream instead. It is net/http/httputil's ReverseProxy on the
// gateway's route shape, /orders/{x} to UPSTREAM/internal/orders/{x}, with a Rewrite that sets
// the outgoing URL and nothing else (no ID mapping, no rebuilt body, no headers of its own),
// served by the same http.Server settings and garbage collector target as the bare handler
// (cmd/bare) and the services (libs/svc/serve), so that the comparison measures the handlers.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/idgen/idgen/libs/svc/serve"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:7101", "address")
	upstream := flag.String("upstream", "http://127.0.0.1:7100", "the upstream's base URL (scheme and host)")
	flag.Parse()
	base, err := url.Parse(*upstream)
	if err == nil && base.Host == "" {
		err = fmt.Errorf("-upstream %q: no host", *upstream)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.Out.URL.Scheme, pr.Out.URL.Host = base.Scheme, base.Host
		x := pr.In.PathValue("x") // unescaped; escaped again below, so that %2F stays in the segment
		pr.Out.URL.Path, pr.Out.URL.RawPath = "/internal/orders/"+x, "/internal/orders/"+url.PathEscape(x)
	}}
	mux := http.NewServeMux()
	mux.Handle("/orders/{x}", proxy)
	serve.Main("revproxy", err, "warn", func(ctx context.Context, log *slog.Logger) error {
		l, err := net.Listen("tcp", *addr)
		if err != nil {
			return err
		}
		return serve.Serve(ctx, l, mux, nil, serve.Shutdown{}, log)
	})
}
