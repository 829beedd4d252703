package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Config is the route table file: an allowlist. A route passes only the methods, query
// parameters, response headers and response fields it declares; everything else is dropped.
type Config struct {
	Routes []*Route `json:"routes"`
}

// Route maps a public URL template to an internal upstream template and declares what passes.
type Route struct {
	// Name names the route in logs and metrics ("order").
	Name string `json:"name"`
	// Public is the customer-facing path, with one {public_id}: "/orders/{public_id}".
	Public string `json:"public"`
	// Upstream is the internal URL, with one {internal_id}:
	// "http://orders.internal/internal/orders/{internal_id}". Fixed query parameters may follow.
	Upstream string `json:"upstream"`
	// Resource is the prefix of the public ID in the path ("ord").
	Resource string `json:"resource"`
	// Methods the route accepts. Default ["GET"]; HEAD goes with GET. Only GET, HEAD and DELETE:
	// the gateway never forwards a request body.
	Methods []string `json:"methods,omitempty"`
	// Query declares the query parameters passed to the upstream, each a public ID (translated
	// to its internal ID) or a plain value with a type and bounds. Others are dropped.
	Query map[string]*Type `json:"query,omitempty"`
	// Headers declares the response headers passed to the customer: "plain" (passed when it holds
	// no internal ID, else the response is refused) or "location" (an upstream URL of a route in
	// this table, rewritten to that route's public path). Others are dropped.
	Headers map[string]string `json:"headers,omitempty"`
	// Response is the type of the response body. Fields it does not declare are dropped.
	Response *Type `json:"response"`

	prefix, suffix string   // of Public, around {public_id}
	up             *url.URL // Upstream with the placeholder in place, parsed
	upPrefix       string   // path of Upstream before {internal_id}
	upSuffix       string   // and after it
	methods        []string // with HEAD added beside GET
	allow          string   // the Allow header of a 405
	headers        map[string]string
}

// Type is the type of a JSON value: a route's response body, a field of it, or a query parameter.
// In a route file a type is an object ({"type": "string", "max_len": 64}) or, for the common
// cases, one word: "string", "int", "number", "bool", "time", or "id:RES" (an ID of resource RES).
type Type struct {
	// Type is one of object, array, id, string, int, number, bool, time, enum.
	Type string `json:"type"`
	// Resource is the public-ID prefix of an id.
	Resource string `json:"resource,omitempty"`
	// MaxLen bounds a string's length in bytes. Default 1024.
	MaxLen int `json:"max_len,omitempty"`
	// Min and Max bound an int (query parameters).
	Min *int64 `json:"min,omitempty"`
	Max *int64 `json:"max,omitempty"`
	// Values lists an enum's values.
	Values []string `json:"values,omitempty"`
	// Fields declares an object's members, matched exactly by name.
	Fields map[string]*Type `json:"fields,omitempty"`
	// Items is the type of an array's elements.
	Items *Type `json:"items,omitempty"`
	// MaxItems bounds an array's length. Default 1000.
	MaxItems int `json:"max_items,omitempty"`

	names []fieldName // Fields in a fixed order, with their JSON-quoted names
}

type fieldName struct {
	name   string
	quoted []byte // "name":
	typ    *Type
}

const (
	defaultMaxLen   = 1024
	defaultMaxItems = 1000
)

// UnmarshalJSON reads a type from its object form or its one-word form.
func (t *Type) UnmarshalJSON(b []byte) error {
	var word string
	if err := json.Unmarshal(b, &word); err == nil {
		if res, ok := strings.CutPrefix(word, "id:"); ok {
			*t = Type{Type: "id", Resource: res}
			return nil
		}
		*t = Type{Type: word}
		return nil
	}
	type plain Type
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode((*plain)(t))
}

var (
	namePattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	resourcePattern = regexp.MustCompile(`^[a-z][a-z0-9]{0,7}$`)
)

// LoadRoutes reads and checks a route table (JSON; unknown keys are an error).
func LoadRoutes(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: routes: %w", err)
	}
	c, err := ParseRoutes(b)
	if err != nil {
		return nil, fmt.Errorf("gateway: routes %s: %w", path, err)
	}
	return c, nil
}

// ParseRoutes reads and checks a route table.
func ParseRoutes(b []byte) (*Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	return &c, c.check()
}

func (c *Config) check() error {
	if len(c.Routes) == 0 {
		return fmt.Errorf("no routes")
	}
	names := map[string]bool{}
	publics, upstreams := map[string]string{}, map[string]string{}
	for i, r := range c.Routes {
		if r == nil {
			return fmt.Errorf("route %d is null", i)
		}
		if err := r.check(); err != nil {
			return fmt.Errorf("route %q: %w", r.Name, err)
		}
		if names[r.Name] {
			return fmt.Errorf("route %q: the name is used twice", r.Name)
		}
		names[r.Name] = true
		if other, ok := publics[r.Public]; ok {
			return fmt.Errorf("route %q: public path %s is route %q's already", r.Name, r.Public, other)
		}
		publics[r.Public] = r.Name
		// A Location is mapped to a route by its upstream path: two routes on one upstream path
		// would make that ambiguous, and could give an ID a public ID of the wrong resource.
		up := r.up.Scheme + "://" + r.up.Host + r.upPrefix + "{internal_id}" + r.upSuffix
		if other, ok := upstreams[up]; ok && r.upPrefix != "" {
			return fmt.Errorf("route %q: upstream path %s is route %q's already", r.Name, up, other)
		}
		upstreams[up] = r.Name
	}
	return nil
}

func (r *Route) check() error {
	if !namePattern.MatchString(r.Name) {
		return fmt.Errorf("name: want 1-63 of a-z, 0-9, _ and -")
	}
	pre, suf, ok := strings.Cut(r.Public, "{public_id}")
	if !ok || !strings.HasPrefix(pre, "/") || strings.ContainsAny(suf, "{}?") || strings.ContainsAny(pre, "{}?") {
		return fmt.Errorf("public %q: want a path with one {public_id}", r.Public)
	}
	r.prefix, r.suffix = pre, suf
	if strings.Count(r.Upstream, "{internal_id}") != 1 {
		return fmt.Errorf("upstream %q: want one {internal_id}", r.Upstream)
	}
	u, err := url.Parse(strings.Replace(r.Upstream, "{internal_id}", "0", 1))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("upstream %q: want an http(s) URL with a host and no user or fragment", r.Upstream)
	}
	r.up = u
	upPath, _, _ := strings.Cut(r.Upstream, "?")
	if p, s, ok := strings.Cut(upPath, "{internal_id}"); ok {
		scheme, rest, _ := strings.Cut(p, "://")
		_ = scheme
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			r.upPrefix, r.upSuffix = rest[i:], s
		}
	}
	if !resourcePattern.MatchString(r.Resource) {
		return fmt.Errorf("resource %q: want 1-8 of a-z and 0-9, starting with a letter", r.Resource)
	}
	if len(r.Methods) == 0 {
		r.Methods = []string{http.MethodGet}
	}
	r.methods = nil
	for _, m := range r.Methods {
		switch m {
		case http.MethodGet, http.MethodHead, http.MethodDelete:
			r.methods = append(r.methods, m)
		default:
			return fmt.Errorf("method %q: the gateway passes GET, HEAD and DELETE only (it never forwards a request body)", m)
		}
	}
	if slices.Contains(r.methods, http.MethodGet) && !slices.Contains(r.methods, http.MethodHead) {
		r.methods = append(r.methods, http.MethodHead)
	}
	slices.Sort(r.methods)
	r.methods = slices.Compact(r.methods)
	r.allow = strings.Join(r.methods, ", ")
	fixed := u.Query()
	for name, t := range r.Query {
		if name == "" || url.QueryEscape(name) != name {
			return fmt.Errorf("query parameter %q: want a name that needs no escaping", name)
		}
		if _, ok := fixed[name]; ok {
			return fmt.Errorf("query parameter %q: the upstream URL sets it already", name)
		}
		if err := t.check(true); err != nil {
			return fmt.Errorf("query parameter %q: %w", name, err)
		}
	}
	r.headers = map[string]string{}
	for name, kind := range r.Headers {
		canon := http.CanonicalHeaderKey(name)
		_, dup := r.headers[canon]
		switch {
		case !httpguts.ValidHeaderFieldName(name):
			return fmt.Errorf("header %q: not a valid header name", name)
		case dup:
			return fmt.Errorf("header %q: declared twice (header names are case-insensitive)", name)
		case kind != "plain" && kind != "location":
			return fmt.Errorf("header %q: kind %q: want plain or location", name, kind)
		case kind == "location" && canon != "Location" && canon != "Content-Location":
			return fmt.Errorf("header %q: only Location and Content-Location hold a location", name)
		case kind == "plain" && slices.Contains(urlHeaders, canon):
			return fmt.Errorf("header %q: it holds upstream URLs; declare Location and Content-Location as location, and do not pass Link or Refresh", name)
		case slices.Contains(hopHeaders, canon):
			return fmt.Errorf("header %q: the gateway sets it itself", name)
		}
		r.headers[canon] = kind
	}
	if r.Response == nil {
		return fmt.Errorf("response: declare the response body's type")
	}
	if err := r.Response.check(false); err != nil {
		return fmt.Errorf("response: %w", err)
	}
	return nil
}

// urlHeaders hold upstream URLs, which only a location rewrite may pass.
var urlHeaders = []string{"Location", "Content-Location", "Link", "Refresh"}

// hopHeaders are set by the gateway or the HTTP stack, never passed from an upstream.
var hopHeaders = []string{"Content-Type", "Content-Length", "Transfer-Encoding", "Connection", "Set-Cookie",
	"Retry-After", "Www-Authenticate", "Content-Encoding", "Trailer", "Upgrade", "Keep-Alive", "Proxy-Authenticate"}

// check validates t and fills its defaults. A query parameter's type is a leaf.
func (t *Type) check(query bool) error {
	if t == nil {
		return fmt.Errorf("missing type")
	}
	switch t.Type {
	case "object", "array":
		if query {
			return fmt.Errorf("a query parameter is an id, string, int, bool or enum")
		}
	}
	switch t.Type {
	case "object":
		if len(t.Fields) == 0 {
			return fmt.Errorf("an object declares its fields")
		}
		t.names = t.names[:0]
		for name, ft := range t.Fields {
			if err := ft.check(false); err != nil {
				return fmt.Errorf("field %q: %w", name, err)
			}
			q, _ := json.Marshal(name)
			t.names = append(t.names, fieldName{name: name, quoted: append(q, ':'), typ: ft})
		}
		slices.SortFunc(t.names, func(a, b fieldName) int { return strings.Compare(a.name, b.name) })
	case "array":
		if err := t.Items.check(false); err != nil {
			return fmt.Errorf("items: %w", err)
		}
		if t.MaxItems == 0 {
			t.MaxItems = defaultMaxItems
		}
	case "id":
		if !resourcePattern.MatchString(t.Resource) {
			return fmt.Errorf("id: resource %q: want 1-8 of a-z and 0-9, starting with a letter", t.Resource)
		}
	case "string":
		if t.MaxLen == 0 {
			t.MaxLen = defaultMaxLen
		}
	case "enum":
		if len(t.Values) == 0 {
			return fmt.Errorf("an enum lists its values")
		}
	case "int":
		if t.Min != nil && t.Max != nil && *t.Min > *t.Max {
			return fmt.Errorf("min %d is above max %d", *t.Min, *t.Max)
		}
	case "number", "bool", "time":
	default:
		return fmt.Errorf("type %q: want object, array, id, string, int, number, bool, time or enum", t.Type)
	}
	if t.MaxLen < 0 || t.MaxItems < 0 {
		return fmt.Errorf("negative bound")
	}
	// A key that does not apply to the type is a mistake in the route file, not a no-op.
	for key, applies := range map[string]bool{
		"resource":  t.Resource == "" || t.Type == "id",
		"max_len":   t.MaxLen == 0 || t.Type == "string",
		"min, max":  t.Min == nil && t.Max == nil || t.Type == "int",
		"values":    len(t.Values) == 0 || t.Type == "enum",
		"fields":    len(t.Fields) == 0 || t.Type == "object",
		"items":     t.Items == nil || t.Type == "array",
		"max_items": t.MaxItems == 0 || t.Type == "array",
	} {
		if !applies {
			return fmt.Errorf("%s does not apply to type %s", key, t.Type)
		}
	}
	return nil
}

// field returns the declared member of an object type by exact name.
func (t *Type) field(name []byte) *fieldName {
	i, ok := slices.BinarySearchFunc(t.names, name, func(f fieldName, n []byte) int { return strings.Compare(f.name, string(n)) })
	if !ok {
		return nil
	}
	return &t.names[i]
}

// Resources returns every resource prefix the routes use.
func (c *Config) Resources() []string {
	var out []string
	var walk func(t *Type)
	walk = func(t *Type) {
		if t == nil {
			return
		}
		if t.Type == "id" {
			out = append(out, t.Resource)
		}
		for _, f := range t.Fields {
			walk(f)
		}
		walk(t.Items)
	}
	for _, r := range c.Routes {
		out = append(out, r.Resource)
		walk(r.Response)
		for _, q := range r.Query {
			walk(q)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// queryValue checks one customer query value against its declared type and returns the value
// the upstream gets: numbers and times written anew by the gateway, never the customer's text.
// A public ID is the caller's to resolve.
func (t *Type) queryValue(name, v string) (string, error) {
	switch t.Type {
	case "string":
		if len(v) > t.MaxLen {
			return "", fmt.Errorf("query parameter %s: longer than %d bytes", name, t.MaxLen)
		}
		return v, nil
	case "int":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || len(v) > 20 {
			return "", fmt.Errorf("query parameter %s: want an integer", name)
		}
		if t.Min != nil && n < *t.Min || t.Max != nil && n > *t.Max {
			return "", fmt.Errorf("query parameter %s: want an integer in %s", name, t.bounds())
		}
		return strconv.FormatInt(n, 10), nil
	case "bool":
		if v != "true" && v != "false" {
			return "", fmt.Errorf("query parameter %s: want true or false", name)
		}
		return v, nil
	case "enum":
		if !slices.Contains(t.Values, v) {
			return "", fmt.Errorf("query parameter %s: want one of %s", name, strings.Join(t.Values, ", "))
		}
		return v, nil
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || len(v) > 32 || math.IsNaN(f) || math.IsInf(f, 0) || strings.ContainsAny(v, "xX_") {
			return "", fmt.Errorf("query parameter %s: want a decimal number", name)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case "time":
		ts, err := time.Parse(time.RFC3339Nano, v)
		if err != nil || len(v) > 40 {
			return "", fmt.Errorf("query parameter %s: want an RFC 3339 time such as 2026-11-30T12:00:00Z", name)
		}
		return ts.UTC().Format(time.RFC3339Nano), nil
	}
	return "", fmt.Errorf("query parameter %s: type %s", name, t.Type)
}

func (t *Type) bounds() string {
	lo, hi := "…", "…"
	if t.Min != nil {
		lo = strconv.FormatInt(*t.Min, 10)
	}
	if t.Max != nil {
		hi = strconv.FormatInt(*t.Max, 10)
	}
	return lo + "–" + hi
}
