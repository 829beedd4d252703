package serve

import (
	"errors"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

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
	routes := m.restRoutesOf(e)
	e.OnAddRouteHandler = func(host string, route echo.Route, h echo.HandlerFunc, mw []echo.MiddlewareFunc) {
		for i := len(mw) - 1; i >= 0; i-- {
			h = mw[i](h)
		}
		h = m.Echo(route.Path, jsonBodies, answer, h)
		router := e.Router()
		if host != "" {
			router = e.Routers()[host]
		}
		add := func(method string, h echo.HandlerFunc) {
			router.Add(method, route.Path, h) // in place of echo's, which applies mw per request
			if route.Method != echo.RouteNotFound {
				routes.add(host, route.Path, method, h)
			}
		}
		add(route.Method, h)
		if route.Method == http.MethodGet {
			add(http.MethodHead, h)
		}
		// An OPTIONS request at a routed path is answered as echo answers it (204, Allow), but
		// by a route handler wrapped as the others, so that it is observed: echo's own answer is
		// no handler's and returns no error, so neither the wrap nor the error handler sees it.
		// A service's own OPTIONS route, added before or after, takes its place.
		if route.Method != echo.RouteNotFound && !routes.has(host, route.Path, http.MethodOptions) {
			allow := routes.allow(host, route.Path)
			add(http.MethodOptions, m.Echo(route.Path, jsonBodies, answer, func(c echo.Context) error {
				c.Response().Header().Add(echo.HeaderAllow, allow())
				return c.NoContent(http.StatusNoContent)
			}))
		}
	}
	// Only what no route's handler answered comes here (route handlers answer their own errors):
	// echo's 404 and 405, observed under the path matched (405) or as unmatched.
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		m.echoUnrouted(err, c, jsonBodies, answer)
	}
	return e
}

// restRoutes are the routes of an echo instance REST built: each path's handlers by method, as
// REST wrapped them (RouteNotFound's aside). They give the Allow header of the OPTIONS answer
// REST routes at each path, and the handlers an API's exact paths take directly (restPath).
type restRoutes struct {
	mu    sync.Mutex
	paths map[[2]string]map[string]echo.HandlerFunc // by host and echo path, then method
}

// restRoutesOf returns e's routes, made empty the first time.
func (m *RequestMetrics) restRoutesOf(e *echo.Echo) *restRoutes {
	m.restMu.Lock()
	defer m.restMu.Unlock()
	if m.rest == nil {
		m.rest = map[*echo.Echo]*restRoutes{}
	}
	if m.rest[e] == nil {
		m.rest[e] = &restRoutes{paths: map[[2]string]map[string]echo.HandlerFunc{}}
	}
	return m.rest[e]
}

func (t *restRoutes) add(host, path, method string, h echo.HandlerFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := [2]string{host, path}
	if t.paths[k] == nil {
		t.paths[k] = map[string]echo.HandlerFunc{}
	}
	t.paths[k][method] = h
}

func (t *restRoutes) has(host, path, method string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.paths[[2]string{host, path}][method] != nil
}

// allowOrder is the order echo lists methods in an Allow header, after OPTIONS.
var allowOrder = []string{http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead,
	http.MethodPatch, http.MethodPost, "PROPFIND", http.MethodPut, http.MethodTrace, "REPORT"}

// allow returns the Allow header of path's OPTIONS answer, as echo's lists it, made at the first
// OPTIONS request from the methods routed by then (a service adds every route before it serves).
func (t *restRoutes) allow(host, path string) func() string {
	return sync.OnceValue(func() string {
		t.mu.Lock()
		defer t.mu.Unlock()
		methods := t.paths[[2]string{host, path}]
		parts := []string{http.MethodOptions}
		for _, m := range allowOrder {
			if methods[m] != nil {
				parts = append(parts, m)
			}
		}
		for m := range methods {
			if m != http.MethodOptions && !slices.Contains(allowOrder, m) {
				parts = append(parts, m)
			}
		}
		return strings.Join(parts, ", ")
	})
}

// routesAt returns the handlers of the default host's route that ServeMux pattern p names:
// the same path, with each of p's {name} segments a :name parameter of echo's and an escaped
// colon (\:) of echo's a plain one. It names none when p ends in a slash (a subtree pattern, which
// matches more than echo's route) or has another wildcard ({name...}, {$}), and a route with
// parameters none when another route's path begins as its does up to its first parameter: echo
// would answer a request the pattern matches from that route when it is more specific (a
// static /things/new beside /things/:id).
func (t *restRoutes) routesAt(p string) []directRoute {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []directRoute
	for k, methods := range t.paths {
		if k[0] != "" {
			continue
		}
		pattern, params, ok := muxPattern(k[1])
		if !ok || pattern != p {
			continue
		}
		if len(params) > 0 {
			prefix := k[1][:strings.Index(k[1], "/:")+1]
			for other := range t.paths {
				if other[0] == "" && other[1] != k[1] && strings.HasPrefix(other[1], prefix) {
					return nil
				}
			}
		}
		for method, h := range methods {
			out = append(out, directRoute{method, k[1], params, h})
		}
	}
	return out
}

// muxPattern is echo path p as a ServeMux pattern ({name} for each :name segment, a colon for
// each \:) with its parameters' names in order; false when p ends in a slash, or has a
// parameter that is not a whole segment or whose name is no Go identifier (as ServeMux's
// wildcards' are), or echo's * wildcard.
func muxPattern(p string) (string, []string, bool) {
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return "", nil, false
	}
	var b strings.Builder
	var params []string
	for i, seg := range strings.Split(p, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		if name, ok := strings.CutPrefix(seg, ":"); ok {
			if !identifier(name) {
				return "", nil, false
			}
			params = append(params, name)
			b.WriteString("{" + name + "}")
			continue
		}
		plain := strings.ReplaceAll(seg, `\:`, "")
		if strings.ContainsAny(plain, ":*{}") {
			return "", nil, false
		}
		b.WriteString(strings.ReplaceAll(seg, `\:`, ":"))
	}
	return b.String(), params, true
}

// identifier reports whether s is a Go identifier, as a ServeMux wildcard's name must be.
func identifier(s string) bool {
	for i, c := range s {
		if !unicode.IsLetter(c) && c != '_' && (i == 0 || !unicode.IsDigit(c)) {
			return false
		}
	}
	return s != ""
}

type directRoute struct {
	method, path string   // path as echo has it
	params       []string // its parameters' names, as in the path
	h            echo.HandlerFunc
}

// restPath returns the handler for the requests that ServeMux pattern p matches (API.RESTPaths):
// an exact path, or one whose segments are {name} wildcards. When rest is an echo instance REST
// built with m, a request for one of the methods routed at p is taken to its route's handler
// directly: echo's context, with the path parameters the pattern matched (each {name} is echo's
// :name), the handler as REST wrapped it (metrics, 415 check, error answer) and echo's context
// pool, without echo's router, which would only match p again. Any other request (another
// method, an escaped path, which echo routes by its raw form) goes through echo whole.
func (m *RequestMetrics) restPath(rest http.Handler, p string) http.Handler {
	e, ok := rest.(*echo.Echo)
	if !ok {
		return rest
	}
	m.restMu.Lock()
	t := m.rest[e]
	m.restMu.Unlock()
	if t == nil || len(e.Routers()) > 0 { // with routes by host, echo routes by the Host header too
		return rest
	}
	routes := t.routesAt(p)
	if len(routes) == 0 {
		return rest
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, rt := range routes {
			if rt.method == r.Method && r.URL.RawPath == "" {
				c := e.AcquireContext()
				c.Reset(r, w)
				c.SetPath(rt.path)
				if len(rt.params) > 0 {
					// The values where echo's router puts them: ParamValues is the context's own
					// slice, as long as the names. Without a raw path, the mux's values are the
					// segments of r.URL.Path, as echo's router would take them.
					c.SetParamNames(rt.params...)
					vals := c.ParamValues()
					for i, name := range rt.params {
						vals[i] = r.PathValue(name)
					}
				}
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
