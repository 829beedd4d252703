package serve

import (
	"errors"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/labstack/echo/v4"
)

// REST returns the echo instance of a service's REST API: no banner, the request metrics (m),
// and the one error handler of every service. Every error is answered as JSON apierr.Body
// ({"error": message, "reason": name}) with the status errs maps it to, and Retry-After when
// the error carries one; echo's own 404 and 405 are named not_found and method_not_allowed.
//
// A POST whose Content-Type is not JSON is refused with 415 (unsupported_media_type) before its
// handler runs: text/plain, form and multipart bodies are what a page of any origin may make a
// browser send without a CORS preflight. A POST without a Content-Type (curl -X POST, no body)
// is served. Every GET route answers HEAD too, with the same handler and so the same headers
// (net/http sends no body for a HEAD).
//
// The metrics, the 415 check and the error answer wrap each route's handler (and its route
// middleware) once, as it is added, not as echo middleware (which echo applies anew on every
// request, a closure each); requests no route's handler takes (echo's 404 and 405) are observed
// and checked in the error handler. e.Use would wrap the handlers again: services add no echo
// middleware of their own.
func REST(m *RequestMetrics, errs apierr.Mapper) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	answer := func(err error, c echo.Context) int {
		ae := restError(err, errs)
		if c.Response().Committed {
			return ae.Status
		}
		if ae.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
		}
		_ = c.JSON(ae.Status, ae.Body())
		return ae.Status
	}
	options := allowed{}
	e.OnAddRouteHandler = func(host string, route echo.Route, h echo.HandlerFunc, mw []echo.MiddlewareFunc) {
		for i := len(mw) - 1; i >= 0; i-- {
			h = mw[i](h)
		}
		h = m.Echo(route.Path, jsonBodies, answer, h)
		router := e.Router()
		if host != "" {
			router = e.Routers()[host]
		}
		router.Add(route.Method, route.Path, h) // in place of echo's, which applies mw per request
		if route.Method == http.MethodGet {
			router.Add(http.MethodHead, route.Path, h)
		}
		// An OPTIONS request at a routed path is answered as echo answers it (204, Allow), but
		// by a route handler wrapped as the others, so that it is observed: echo's own answer is
		// no handler's and returns no error, so neither the wrap nor the error handler sees it.
		if route.Method != echo.RouteNotFound {
			if first := options.add(host, route); first {
				allow := options.header(host, route.Path)
				router.Add(http.MethodOptions, route.Path, m.Echo(route.Path, jsonBodies, answer, func(c echo.Context) error {
					c.Response().Header().Add(echo.HeaderAllow, allow())
					return c.NoContent(http.StatusNoContent)
				}))
			}
		}
		if host == "" && route.Method != echo.RouteNotFound && static(route.Path) {
			m.direct.add(e, route.Method, route.Path, h)
			if route.Method == http.MethodGet {
				m.direct.add(e, http.MethodHead, route.Path, h)
			}
		}
	}
	// Only what no route's handler answered comes here (route handlers answer their own errors):
	// echo's 404 and 405, observed under the path matched (405) or as unmatched.
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		m.echoUnrouted(err, c, jsonBodies, answer)
	}
	return e
}

// allowed is the methods routed at each path of an echo instance, for the Allow header of the
// OPTIONS answer REST routes there (echo's, which REST's route takes the place of, lists the
// same methods in this order).
type allowed struct {
	mu       sync.Mutex
	methods  map[[2]string]map[string]bool // by host and path
	explicit map[[2]string]bool            // paths with an OPTIONS route of the service's own
}

var allowOrder = []string{http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead,
	http.MethodPatch, http.MethodPost, "PROPFIND", http.MethodPut, http.MethodTrace, "REPORT"}

// add records route's method at its path and reports whether REST should route OPTIONS there:
// at the path's first route, unless the service routes OPTIONS there itself.
func (a *allowed) add(host string, route echo.Route) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := [2]string{host, route.Path}
	if a.methods == nil {
		a.methods, a.explicit = map[[2]string]map[string]bool{}, map[[2]string]bool{}
	}
	if route.Method == http.MethodOptions {
		a.explicit[k] = true // the service's own route, added after this, takes REST's place
		return false
	}
	first := a.methods[k] == nil
	if first {
		a.methods[k] = map[string]bool{}
	}
	a.methods[k][route.Method] = true
	if route.Method == http.MethodGet {
		a.methods[k][http.MethodHead] = true
	}
	return first && !a.explicit[k]
}

// header returns the Allow header of path's OPTIONS answer, made at the first OPTIONS request
// from the methods routed by then (a service adds every route before it serves).
func (a *allowed) header(host, path string) func() string {
	k := [2]string{host, path}
	var (
		once sync.Once
		v    string
	)
	return func() string {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			parts := []string{http.MethodOptions}
			for _, m := range allowOrder {
				if a.methods[k][m] {
					parts = append(parts, m)
				}
			}
			for m := range a.methods[k] {
				if !slices.Contains(allowOrder, m) {
					parts = append(parts, m)
				}
			}
			v = strings.Join(parts, ", ")
		})
		return v
	}
}

// static reports whether an echo route path has no parameters (an escaped colon, \:, is none).
func static(p string) bool {
	p = strings.ReplaceAll(p, `\:`, "")
	return !strings.ContainsAny(p, ":*")
}

// directRoutes are the handlers of the static routes of the echo instances REST built, each
// wrapped as REST wraps it, by instance, then method and path, for restPath.
type directRoutes struct {
	mu sync.Mutex
	by map[*echo.Echo]map[string][]directRoute // by path as a ServeMux matches it (\: unescaped)
}

type directRoute struct {
	method, path string // path as echo has it
	h            echo.HandlerFunc
}

func (d *directRoutes) add(e *echo.Echo, method, path string, h echo.HandlerFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.by == nil {
		d.by = map[*echo.Echo]map[string][]directRoute{}
	}
	if d.by[e] == nil {
		d.by[e] = map[string][]directRoute{}
	}
	p := strings.ReplaceAll(path, `\:`, ":")
	for i, r := range d.by[e][p] {
		if r.method == method {
			d.by[e][p][i].h = h
			return
		}
	}
	d.by[e][p] = append(d.by[e][p], directRoute{method, path, h})
}

// restPath returns the handler for the requests of path p that a ServeMux pattern matches exactly
// (API.RESTPaths). When rest is an echo instance REST built with m, a request for one of the
// methods routed at p is taken to its route's handler directly: echo's context, the handler as
// REST wrapped it (metrics, 415 check, error answer) and echo's context pool, without echo's
// router, which would only match p again. Any other request (another method, an escaped path,
// which echo routes by its raw form) goes through echo whole.
func (m *RequestMetrics) restPath(rest http.Handler, p string) http.Handler {
	e, ok := rest.(*echo.Echo)
	if !ok {
		return rest
	}
	m.direct.mu.Lock()
	routes := m.direct.by[e][p]
	m.direct.mu.Unlock()
	if len(routes) == 0 {
		return rest
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, rt := range routes {
			if rt.method == r.Method && r.URL.RawPath == "" {
				c := e.AcquireContext()
				c.Reset(r, w)
				c.SetPath(rt.path)
				if err := rt.h(c); err != nil { // REST's handlers answer their own errors
					e.HTTPErrorHandler(err, c)
				}
				e.ReleaseContext(c)
				return
			}
		}
		e.ServeHTTP(w, r)
	})
}

// jsonBodies refuses a POST whose Content-Type is given and is not JSON (apierr.UnsupportedMediaType),
// with Accept-Post naming what it takes.
func jsonBodies(c echo.Context) error {
	r := c.Request()
	if r.Method == http.MethodPost {
		if ct := r.Header["Content-Type"]; len(ct) > 1 || len(ct) == 1 && !isJSON(ct[0]) {
			c.Response().Header().Set("Accept-Post", "application/json") // as connect-go's 415 says what it takes
			return apierr.UnsupportedMediaType(mediaType(ct))
		}
	}
	return nil
}

// isJSON reports whether a Content-Type is application/json, in UTF-8 if it names a charset
// (RFC 8259: JSON between systems is UTF-8).
func isJSON(ct string) bool {
	if ct == "application/json" || ct == "application/json; charset=utf-8" {
		return true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// mediaType names what a refused body was sent as, for the 415's message: its media type (a
// token: no quotes, no spaces), or "" when its Content-Type does not parse, is given more than
// once, or is long.
func mediaType(ct []string) string {
	if len(ct) != 1 {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct[0])
	switch {
	case err != nil, len(mt) > 100:
		return ""
	case mt == "application/json":
		return "application/json in a charset other than UTF-8"
	}
	return mt
}

// restError maps a REST handler's error: echo's own (no route, wrong method, or one a handler
// made with echo.NewHTTPError) by its status, the rest by errs.
func restError(err error, errs apierr.Mapper) *apierr.Error {
	var he *echo.HTTPError
	if !errors.As(err, &he) {
		return errs.Map(err)
	}
	msg := http.StatusText(he.Code)
	if m, ok := he.Message.(string); ok {
		msg = apierr.Clean(m)
	}
	reason := apierr.CodeOfStatus(he.Code)
	switch he.Code {
	case http.StatusNotFound:
		reason = "not_found"
	case http.StatusMethodNotAllowed:
		reason = "method_not_allowed"
	}
	return &apierr.Error{Status: he.Code, Reason: reason, Msg: msg}
}
