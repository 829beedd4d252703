package serve

import (
	"errors"
	"flag"
	"net/http"
	"net/url"
	"slices"
	"strings"

	connectcors "connectrpc.com/cors"
	"github.com/rs/cors"
)

// Browsers holds who may call a service from a web page: the origins allowed by CORS.
type Browsers struct {
	Origins []string
}

// RegisterFlags adds --cors-origins.
func (b *Browsers) RegisterFlags(fs *flag.FlagSet) {
	fs.Func("cors-origins", "comma-separated origins (https://app.example.com) whose pages may call the API from a browser; default none", func(v string) error {
		b.Origins = nil
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o == "" {
				continue
			}
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
				return errors.New("want origins such as https://app.example.com")
			}
			b.Origins = append(b.Origins, strings.TrimSuffix(o, "/"))
		}
		return nil
	})
}

// Wrap lets the configured origins call h from a browser: CORS preflights answered, and the
// headers the Connect, gRPC-Web and REST faces use allowed and exposed (connectrpc.com/cors's
// lists). A preflight's Access-Control-Request-Headers may name them in any case and order
// (header names are case-insensitive; browsers send them lower-case and sorted, other clients
// and proxies need not). Credentials are never allowed: callers are identified by mutual TLS,
// not cookies. Without origins, h is returned as it is.
func (b Browsers) Wrap(h http.Handler) http.Handler {
	if len(b.Origins) == 0 {
		return h
	}
	c := cors.New(cors.Options{
		AllowedOrigins: b.Origins,
		AllowedMethods: append(connectcors.AllowedMethods(), http.MethodHead),
		AllowedHeaders: append(connectcors.AllowedHeaders(), "X-Request-Id"),
		ExposedHeaders: append(connectcors.ExposedHeaders(), "Retry-After", "X-Request-Id"),
		MaxAge:         7200,
	})
	ch := c.Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v, ok := r.Header[requestHeaders]; ok && r.Method == http.MethodOptions {
			r = r.WithContext(r.Context())
			r.Header = r.Header.Clone()
			r.Header[requestHeaders] = []string{headerList(v)}
		}
		ch.ServeHTTP(w, r)
	})
}

const requestHeaders = "Access-Control-Request-Headers"

// headerList is a preflight's Access-Control-Request-Headers in the form rs/cors accepts (and
// browsers send): the names lower-case, sorted, each once, comma-separated without spaces.
func headerList(values []string) string {
	var names []string
	for _, v := range values {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ",")
}
