// Package routes is the customer gateway's route table: the schema of a route file (public
// paths, upstreams, declared query parameters, headers and response types), read and checked
// once, and the compiled form the gateway serves from. It depends on the standard library and
// golang.org/x/net only, so a tool that lints route files (idgenctl routes check, through
// routecheck) builds without the service.
package routes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
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
	// Timeout bounds the whole upstream exchange (connect, headers and body), a Go duration
	// ("2s"); past it the customer gets 504. Default: the gateway's UpstreamTimeout (5 s).
	Timeout string `json:"timeout,omitempty"`
	// MaxInFlight bounds this route's requests served at once (more get 503). Default: half of
	// the gateway's MaxInFlight.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// MaxRewrites bounds this route's upstream bodies rebuilt at once (the rest wait). Default:
	// half of the gateway's MaxRewrites, at least 1.
	MaxRewrites int `json:"max_rewrites,omitempty"`
	// RatePerClient is each client's request rate on this route (per second; burst twice that,
	// at least 1), beside the gateway's own rate per client. Default none.
	RatePerClient float64 `json:"rate_per_client,omitempty"`
	// CacheControl is the Cache-Control of the route's 200s (and 203s) when the upstream's
	// (declared in Headers) gives none ("private, max-age=60"). Default: the gateway's. Its
	// redirects and 204s get no-store.
	CacheControl string `json:"cache_control,omitempty"`

	timeout        time.Duration // Timeout parsed; 0 for the gateway's default
	prefix, suffix string        // of Public, around {public_id}
	up             *url.URL      // Upstream with the placeholder in place, parsed
	upPrefix       string        // path of Upstream before {internal_id}
	upSuffix       string        // and after it
	upPath         bool          // the upstream's path is upPrefix, the ID, upSuffix, as it is (target)
	methods        []string      // with HEAD added beside GET
	allow          string        // the Allow header of a 405
	headers        map[string]string
}

// Type is the type of a JSON value: a route's response body, a field of it, or a query parameter.
// In a route file a type is an object ({"type": "string", "max_len": 64}) or, for the common
// cases, one word: "string", "int", "number", "bool", "time", "token", or "id:RES" (an ID of
// resource RES).
type Type struct {
	// Type is one of object, array, id, string, int, number, bool, time, enum, token.
	Type string `json:"type"`
	// Resource is the public-ID prefix of an id.
	Resource string `json:"resource,omitempty"`
	// MaxLen bounds a string's length in bytes, and a response token's upstream value's. Default
	// 1024; a token's at most MaxTokenLen.
	MaxLen int `json:"max_len,omitempty"`
	// TTL is how long a response token's handle can be redeemed, a Go duration ("1h", "15m"):
	// default DefaultTokenTTL, at least MinTokenTTL, at most MaxTokenTTL. A token (an upstream's
	// page cursor or continuation token) never reaches the customer as the upstream wrote it:
	// the gateway keeps the value under a random handle of its own and gives the customer that;
	// a query parameter of type token takes the handle back, and the upstream gets its value.
	TTL string `json:"ttl,omitempty"`
	// Pattern is an RE2 expression (Go's regexp syntax) a string must match as a whole: it is
	// anchored at both ends, so "[A-Z]{3}" refuses "EURO".
	Pattern string `json:"pattern,omitempty"`
	// Charset names the characters a string may hold: printable-ascii (0x20–0x7E),
	// alphanumeric (A–Z, a–z, 0–9) or letters (A–Z, a–z). See charsets.
	Charset string `json:"charset,omitempty"`
	// Min and Max bound an int, inclusive: a query parameter outside is a 400, a response value
	// outside makes the response unsafe. In a route file "min" and "max" of a number fill
	// MinNumber and MaxNumber instead (a number's bounds need not be whole).
	Min *int64 `json:"min,omitempty"`
	Max *int64 `json:"max,omitempty"`
	// MinNumber and MaxNumber bound a number, inclusive ("min" and "max" in a route file).
	MinNumber *float64 `json:"-"`
	MaxNumber *float64 `json:"-"`
	// Decimals bounds a number's digits after the decimal point (0 to MaxDecimals): a response
	// number with more makes the response unsafe, and one within is written anew, shortest. A
	// number that declares none holds any float64 in its bounds.
	Decimals *int `json:"decimals,omitempty"`
	// MinTime and MaxTime bound a time, inclusive ("min" and "max" in a route file: an RFC 3339
	// time, or "now", "now+24h", "now-720h", taken when a value is checked). A response time
	// outside makes the response unsafe, a query time outside is a 400.
	MinTime *TimeBound `json:"-"`
	MaxTime *TimeBound `json:"-"`
	// Precision is a time's: "s" (the default), "ms" or "day". A response time is written anew
	// in UTC, truncated to it (2026-11-30T12:00:00Z, 2026-11-30T12:00:00.123Z with always three
	// digits, 2026-11-30T00:00:00Z), so a customer sees an ID's millisecond only where a route
	// asks for it. A query time goes to the upstream to the nanosecond and takes no precision.
	Precision string `json:"precision,omitempty"`
	// Values lists an enum's values.
	Values []string `json:"values,omitempty"`
	// Fields declares an object's members, matched exactly by name.
	Fields map[string]*Type `json:"fields,omitempty"`
	// Items is the type of an array's elements.
	Items *Type `json:"items,omitempty"`
	// MaxItems bounds an array's length. Default 1000.
	MaxItems int `json:"max_items,omitempty"`

	names          []Member        // Fields in a fixed order, with their JSON-quoted names
	pattern        *regexp.Regexp  // Pattern, compiled and anchored
	charset        func(rune) bool // Charset's test of one character
	ttl            time.Duration   // TTL parsed, with its default
	minRaw, maxRaw json.RawMessage // "min" and "max" as the route file wrote them, until check
}

// Member is a declared member of an object type: its name, the name JSON-quoted with its colon
// ("name":, as a rebuilt body writes it), and its type.
type Member struct {
	Name   string
	Quoted []byte
	Type   *Type
}

const (
	defaultMaxLen   = 1024
	defaultMaxItems = 1000
)

// A response token's bounds: its TTL (default, least and most) and its upstream value's length;
// and how many tokens one response may give out (each a write to the store), which a route's
// response must not be able to exceed: each token field counts the product of the max_items of
// the arrays it is in.
const (
	DefaultTokenTTL = time.Hour
	MinTokenTTL     = time.Second
	MaxTokenTTL     = 24 * time.Hour
	MaxTokenLen     = 8192
	MaxTokens       = 100
)

// tokenShare is a token field's path and how many tokens it can give out in one response.
type tokenShare struct {
	path string
	n    int
}

// tokenCount is how many tokens a value of type t (at path) can hold at most (to 10^9: past it,
// 10^9), and each token field's share.
func tokenCount(t *Type, path string) (int, []tokenShare) {
	capped := func(n int) int { return min(n, 1_000_000_000) }
	switch t.Type {
	case "token":
		return 1, []tokenShare{{path, 1}}
	case "object":
		n, shares := 0, []tokenShare(nil)
		for _, m := range t.names {
			k, f := tokenCount(m.Type, path+"."+m.Name)
			n = capped(n + k)
			shares = append(shares, f...)
		}
		return n, shares
	case "array":
		k, shares := tokenCount(t.Items, path+"[]")
		items := capped(t.MaxItems)
		for i := range shares {
			shares[i].n = capped(shares[i].n * items)
		}
		return capped(k * items), shares
	}
	return 0, nil
}

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
	// "min" and "max" are kept as written, and read in check as an int's (int64) or a number's
	// (float64) bounds, so that {"type": "number", "min": 0, "max": 0.5} and {"type": "int",
	// "min": 1} both read naturally, and a mistake is reported with the field's path.
	var form struct {
		*plain
		Min json.RawMessage `json:"min,omitempty"`
		Max json.RawMessage `json:"max,omitempty"`
	}
	form.plain = (*plain)(t)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&form); err != nil {
		return err
	}
	t.minRaw, t.maxRaw = form.Min, form.Max
	return nil
}

// readBounds reads the "min" and "max" of a route file into Min and Max (an int, and any type
// but a number or a time, for the check that they do not apply), MinNumber and MaxNumber (a
// number) or MinTime and MaxTime (a time).
func (t *Type) readBounds() error {
	for _, b := range []struct {
		key string
		raw *json.RawMessage
		i   **int64
		f   **float64
		tm  **TimeBound
	}{{"min", &t.minRaw, &t.Min, &t.MinNumber, &t.MinTime}, {"max", &t.maxRaw, &t.Max, &t.MaxNumber, &t.MaxTime}} {
		text := string(*b.raw)
		*b.raw = nil
		if text == "" || text == "null" {
			continue
		}
		if t.Type == "time" {
			tb, err := parseTimeBound(text)
			if err != nil {
				return fmt.Errorf("%s %s: %w", b.key, text, err)
			}
			*b.tm = tb
			continue
		}
		if text[0] != '-' && (text[0] < '0' || text[0] > '9') {
			return fmt.Errorf("%s: want a number", b.key)
		}
		if t.Type != "number" {
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				*b.i = &n
				continue
			}
			if t.Type == "int" {
				return fmt.Errorf("%s %s: an int's bounds are 64-bit integers", b.key, text)
			}
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("%s %s: want a finite number", b.key, text)
		}
		*b.f = &f
	}
	return nil
}

var (
	namePattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	resourcePattern = regexp.MustCompile(`^[a-z][a-z0-9]{0,7}$`)
)

// LoadRoutes reads and checks a route table (JSON; unknown keys are an error).
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("routes %s: %w", path, err)
	}
	return c, nil
}

// ParseRoutes reads and checks a route table.
func Parse(b []byte) (*Config, error) {
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
		_, rest, _ := strings.Cut(p, "://")
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			r.upPrefix, r.upSuffix = rest[i:], s
		}
	}
	// The path needs no escaping, so the ID's digits go into the parsed URL as they are.
	r.upPath = r.upPrefix != "" && u.RawPath == "" && u.Path == r.upPrefix+"0"+r.upSuffix
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
		if t.Type == "token" && !r.Response.HasToken() {
			return fmt.Errorf("query parameter %q: a token is redeemed only on the route that issued it, and this route's response declares none", name)
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
		case slices.Contains(hopHeaders, canon) || strings.HasPrefix(canon, "Access-Control-"):
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
	if n, shares := tokenCount(r.Response, "response"); n > MaxTokens {
		var named []string
		for _, s := range shares {
			named = append(named, fmt.Sprintf("%s %d", s.path, s.n))
		}
		return fmt.Errorf("response: up to %d tokens in one response (%s), and the gateway gives out at most %d in one: declare smaller max_items for the arrays they are in",
			n, strings.Join(named, ", "), MaxTokens)
	}
	r.timeout = 0
	if r.Timeout != "" {
		d, err := time.ParseDuration(r.Timeout)
		switch {
		case err != nil:
			return fmt.Errorf("timeout %q: want a duration such as \"2s\" or \"500ms\"", r.Timeout)
		case d <= 0:
			return fmt.Errorf("timeout %q: want a positive duration", r.Timeout)
		case d > MaxRouteTimeout:
			return fmt.Errorf("timeout %q: at most %s (the gateway's server answers within 30 s)", r.Timeout, MaxRouteTimeout)
		}
		r.timeout = d
	}
	if r.MaxInFlight < 0 {
		return fmt.Errorf("max_in_flight %d: want a positive number (or none, for the default)", r.MaxInFlight)
	}
	if r.MaxRewrites < 0 {
		return fmt.Errorf("max_rewrites %d: want a positive number (or none, for the default)", r.MaxRewrites)
	}
	if r.RatePerClient < 0 {
		return fmt.Errorf("rate_per_client %v: want a positive number of requests a second (or none)", r.RatePerClient)
	}
	if r.CacheControl != "" && (strings.TrimSpace(r.CacheControl) != r.CacheControl || !httpguts.ValidHeaderFieldValue(r.CacheControl)) {
		return fmt.Errorf("cache_control %q: want a Cache-Control value such as \"private, max-age=60\"", r.CacheControl)
	}
	return nil
}

// Target is the upstream URL for internal ID id: Upstream with the ID in place, then query
// (encoded; "" for none) after the upstream's own parameters. Where the ID is in a path that
// needs no escaping (upPath), it is the route's parsed URL with the ID's digits in its path,
// what parsing the written-out URL gives; otherwise that URL written out and parsed.
func (r *Route) Target(id int64, query string) (*url.URL, error) {
	sep := "?"
	if strings.Contains(r.Upstream, "?") {
		sep = "&"
	}
	if r.upPath && id >= 0 {
		u := *r.up
		var digits [20]byte
		u.Path = r.upPrefix + string(strconv.AppendInt(digits[:0], id, 10)) + r.upSuffix
		if query != "" {
			if sep == "&" {
				u.RawQuery += "&" + query
			} else {
				u.RawQuery = query
			}
			u.ForceQuery = false
		}
		return &u, nil
	}
	s := strings.Replace(r.Upstream, "{internal_id}", strconv.FormatInt(id, 10), 1)
	if query != "" {
		s += sep + query
	}
	return url.Parse(s)
}

// MaxRouteTimeout bounds a route's timeout: the upstream exchange and the rewrite must fit in
// the server's 30 s write timeout.
const MaxRouteTimeout = 25 * time.Second

// urlHeaders hold upstream URLs, which only a location rewrite may pass.
var urlHeaders = []string{"Location", "Content-Location", "Link", "Refresh"}

// hopHeaders are set by the gateway or the HTTP stack, never passed from an upstream.
var hopHeaders = []string{"Content-Type", "Content-Length", "Transfer-Encoding", "Connection", "Set-Cookie",
	"Retry-After", "Www-Authenticate", "Content-Encoding", "Trailer", "Upgrade", "Keep-Alive", "Proxy-Authenticate",
	"X-Request-Id", "Vary"}

// check validates t and fills its defaults. A query parameter's type is a leaf.
func (t *Type) check(query bool) error {
	if t == nil {
		return fmt.Errorf("missing type")
	}
	if err := t.readBounds(); err != nil {
		return err
	}
	switch t.Type {
	case "object", "array":
		if query {
			return fmt.Errorf("a query parameter is an id, string, int, number, bool, time, enum or token")
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
			t.names = append(t.names, Member{Name: name, Quoted: append(q, ':'), Type: ft})
		}
		slices.SortFunc(t.names, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
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
		t.pattern, t.charset = nil, nil
		if t.Pattern != "" {
			if _, err := regexp.Compile(t.Pattern); err != nil {
				return fmt.Errorf("pattern %q: %w", t.Pattern, err)
			}
			// Anchored at both ends of the text (\A, \z: a (?m) inside cannot loosen them), so
			// the whole value must match, not a part of it.
			re, err := regexp.Compile(`\A(?:` + t.Pattern + `)\z`)
			if err != nil {
				return fmt.Errorf("pattern %q: %w", t.Pattern, err)
			}
			t.pattern = re
		}
		if t.Charset != "" {
			in, ok := charsets[t.Charset]
			if !ok {
				return fmt.Errorf("charset %q: want %s", t.Charset, charsetNames())
			}
			t.charset = in
		}
	case "enum":
		if len(t.Values) == 0 {
			return fmt.Errorf("an enum lists its values")
		}
	case "int":
		if t.Min != nil && t.Max != nil && *t.Min > *t.Max {
			return fmt.Errorf("min %d is above max %d", *t.Min, *t.Max)
		}
	case "number":
		for _, b := range []*float64{t.MinNumber, t.MaxNumber} {
			if b != nil && (math.IsNaN(*b) || math.IsInf(*b, 0)) {
				return fmt.Errorf("min, max: want finite numbers")
			}
		}
		if t.MinNumber != nil && t.MaxNumber != nil && *t.MinNumber > *t.MaxNumber {
			return fmt.Errorf("min %s is above max %s", formatFloat(*t.MinNumber), formatFloat(*t.MaxNumber))
		}
		if t.Decimals != nil && (*t.Decimals < 0 || *t.Decimals > MaxDecimals) {
			return fmt.Errorf("decimals %d: want 0 to %d (a float64 holds %d significant digits)", *t.Decimals, MaxDecimals, MaxDecimals)
		}
	case "time":
		switch t.Precision {
		case "":
			if !query {
				t.Precision = "s"
			}
		case "s", "ms", "day":
			if query {
				return fmt.Errorf("precision does not apply to a query parameter (the upstream gets the time to the nanosecond)")
			}
		default:
			return fmt.Errorf("precision %q: want s (the default), ms or day", t.Precision)
		}
		if err := t.checkTimeBounds(); err != nil {
			return err
		}
	case "token":
		if query && (t.TTL != "" || t.MaxLen != 0) {
			return fmt.Errorf("ttl and max_len are a response token's: a query token is the handle the gateway issued")
		}
		if query {
			break
		}
		if t.MaxLen == 0 {
			t.MaxLen = defaultMaxLen
		}
		if t.MaxLen > MaxTokenLen {
			return fmt.Errorf("max_len %d: a token's is at most %d", t.MaxLen, MaxTokenLen)
		}
		t.ttl = DefaultTokenTTL
		if t.TTL != "" {
			d, err := time.ParseDuration(t.TTL)
			switch {
			case err != nil:
				return fmt.Errorf("ttl %q: want a duration such as \"1h\" or \"15m\"", t.TTL)
			case d < MinTokenTTL || d > MaxTokenTTL:
				return fmt.Errorf("ttl %q: want %s to %s", t.TTL, MinTokenTTL, MaxTokenTTL)
			}
			t.ttl = d
		}
	case "bool":
	default:
		return fmt.Errorf("type %q: want object, array, id, string, int, number, bool, time, enum or token", t.Type)
	}
	if t.MaxLen < 0 || t.MaxItems < 0 {
		return fmt.Errorf("negative bound")
	}
	// A key that does not apply to the type is a mistake in the route file, not a no-op.
	for key, applies := range map[string]bool{
		"resource":  t.Resource == "" || t.Type == "id",
		"max_len":   t.MaxLen == 0 || t.Type == "string" || t.Type == "token",
		"ttl":       t.TTL == "" || t.Type == "token",
		"pattern":   t.Pattern == "" || t.Type == "string",
		"charset":   t.Charset == "" || t.Type == "string",
		"min, max":  (t.Min == nil && t.Max == nil || t.Type == "int") && (t.MinNumber == nil && t.MaxNumber == nil || t.Type == "number"),
		"precision": t.Precision == "" || t.Type == "time",
		"decimals":  t.Decimals == nil || t.Type == "number",
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

// charsets are the named character sets a string may declare. Each is small on purpose; there is
// no "digits" or "hex": a run of them is what an internal ID looks like, and a field that holds
// only digits is an int (declare it with min and max) or wants a pattern that says how many.
var charsets = map[string]func(rune) bool{
	// printable-ascii: space to tilde (0x20–0x7E): no control characters, nothing beyond ASCII.
	"printable-ascii": func(c rune) bool { return c >= 0x20 && c <= 0x7e },
	// alphanumeric: A–Z, a–z and 0–9.
	"alphanumeric": func(c rune) bool { return isLetter(c) || '0' <= c && c <= '9' },
	// letters: A–Z and a–z.
	"letters": isLetter,
}

func isLetter(c rune) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func charsetNames() string {
	names := slices.Sorted(maps.Keys(charsets))
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// InCharset says whether every character of s is in the declared charset (true when none is).
func (t *Type) InCharset(s []byte) bool {
	if t.charset == nil {
		return true
	}
	for _, c := range string(s) {
		if !t.charset(c) {
			return false
		}
	}
	return true
}

// Matches says whether s matches the declared pattern as a whole (true when none is declared).
func (t *Type) Matches(s []byte) bool { return t.pattern == nil || t.pattern.Match(s) }

// InBounds says whether an int is within the declared min and max.
func (t *Type) InBounds(n int64) bool {
	return (t.Min == nil || n >= *t.Min) && (t.Max == nil || n <= *t.Max)
}

// InNumberBounds says whether a number is within the declared min and max.
func (t *Type) InNumberBounds(f float64) bool {
	return (t.MinNumber == nil || f >= *t.MinNumber) && (t.MaxNumber == nil || f <= *t.MaxNumber)
}

// timeLayouts write a response time at its precision, in UTC.
var timeLayouts = map[string]string{
	"s":   "2006-01-02T15:04:05Z",
	"ms":  "2006-01-02T15:04:05.000Z",
	"day": "2006-01-02T00:00:00Z",
}

// FourDigitYear says whether ts in UTC is still an RFC 3339 time (0000-01-01T00:00:00+01:00 is
// year -1 in UTC, which RFC 3339 cannot write).
func FourDigitYear(ts time.Time) bool {
	y := ts.UTC().Year()
	return y >= 0 && y <= 9999
}

// AppendTime writes ts anew in UTC at the declared precision: the fraction beyond it is cut
// (never rounded up into the next second or day).
func (t *Type) AppendTime(dst []byte, ts time.Time) []byte {
	layout, ok := timeLayouts[t.Precision]
	if !ok {
		layout = timeLayouts["s"]
	}
	return ts.UTC().AppendFormat(dst, layout)
}

// Member returns the declared member of an object type by exact name.
func (t *Type) Member(name []byte) *Member {
	if len(t.names) <= 8 {
		for i := range t.names {
			if t.names[i].Name == string(name) {
				return &t.names[i]
			}
		}
		return nil
	}
	i, ok := slices.BinarySearchFunc(t.names, name, func(f Member, n []byte) int { return strings.Compare(f.Name, string(n)) })
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

// QueryValue checks one customer query value against its declared type and returns the value
// the upstream gets: numbers and times written anew by the gateway, never the customer's text.
// A public ID is the caller's to resolve.
func (t *Type) QueryValue(name, v string) (string, error) {
	switch t.Type {
	case "string":
		if len(v) > t.MaxLen {
			return "", fmt.Errorf("query parameter %s: longer than %d bytes", name, t.MaxLen)
		}
		if !t.InCharset([]byte(v)) {
			return "", fmt.Errorf("query parameter %s: outside the declared charset %s", name, t.Charset)
		}
		if !t.Matches([]byte(v)) {
			return "", fmt.Errorf("query parameter %s: does not match the declared pattern", name)
		}
		return v, nil
	case "int":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || len(v) > 20 {
			return "", fmt.Errorf("query parameter %s: want an integer", name)
		}
		if !t.InBounds(n) {
			return "", fmt.Errorf("query parameter %s: want an integer in %s", name, t.Bounds())
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
		if !t.InNumberBounds(f) {
			return "", fmt.Errorf("query parameter %s: want a number in %s", name, t.Bounds())
		}
		if !t.InDecimals(f) {
			return "", fmt.Errorf("query parameter %s: want at most %d decimals", name, *t.Decimals)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case "time":
		ts, err := time.Parse(time.RFC3339Nano, v)
		if err != nil || len(v) > 40 || !FourDigitYear(ts) {
			return "", fmt.Errorf("query parameter %s: want an RFC 3339 time such as 2026-11-30T12:00:00Z", name)
		}
		if t.HasTimeBounds() && !t.InTimeBounds(ts, time.Now()) {
			return "", fmt.Errorf("query parameter %s: want a time in %s", name, t.TimeBounds())
		}
		return ts.UTC().Format(time.RFC3339Nano), nil
	}
	return "", fmt.Errorf("query parameter %s: type %s", name, t.Type)
}

// Bounds writes an int's or a number's declared min and max as "1–50" ("…" for a side not
// declared).
func (t *Type) Bounds() string {
	lo, hi := "…", "…"
	if t.Min != nil {
		lo = strconv.FormatInt(*t.Min, 10)
	}
	if t.Max != nil {
		hi = strconv.FormatInt(*t.Max, 10)
	}
	if t.MinNumber != nil {
		lo = formatFloat(*t.MinNumber)
	}
	if t.MaxNumber != nil {
		hi = formatFloat(*t.MaxNumber)
	}
	return lo + "–" + hi
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// PublicPath returns the public path around its {public_id}: "/orders/" and "" for
// "/orders/{public_id}".
func (r *Route) PublicPath() (prefix, suffix string) { return r.prefix, r.suffix }

// UpstreamURL is Upstream parsed, with 0 in place of {internal_id}. The caller must not change it.
func (r *Route) UpstreamURL() *url.URL { return r.up }

// UpstreamPath returns the upstream's path around its {internal_id} ("" and "" when the ID is
// not in the path).
func (r *Route) UpstreamPath() (prefix, suffix string) { return r.upPrefix, r.upSuffix }

// AllowedMethods are the methods the route accepts, sorted, with HEAD beside GET; Allow is them
// as a 405's Allow header.
func (r *Route) AllowedMethods() []string { return r.methods }

// Allow is the route's methods as an Allow header ("GET, HEAD").
func (r *Route) Allow() string { return r.allow }

// HeaderKinds maps each declared response header, by its canonical name, to its kind: "plain" or
// "location".
func (r *Route) HeaderKinds() map[string]string { return r.headers }

// TimeoutDuration is Timeout parsed; 0 when the route sets none (the gateway's default).
func (r *Route) TimeoutDuration() time.Duration { return r.timeout }

// Members lists an object type's declared members, sorted by name.
func (t *Type) Members() []Member { return t.names }

// TokenTTL is a response token's TTL, parsed, with its default.
func (t *Type) TokenTTL() time.Duration { return t.ttl }

// HasToken says whether t declares a token anywhere.
func (t *Type) HasToken() bool {
	if t == nil {
		return false
	}
	if t.Type == "token" {
		return true
	}
	for _, f := range t.Fields {
		if f.HasToken() {
			return true
		}
	}
	return t.Items.HasToken()
}
