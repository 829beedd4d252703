// Package auth identifies callers by their client certificate. A caller's identity is the
// certificate's one URI SAN, spiffe://<trust-domain>/svc/<name>; a certificate with no URI SAN,
// several, or one of another trust domain is refused during the TLS handshake, so no request of
// such a connection is ever served. Known callers and their quotas come from a callers file.
//
// Certificates, keys, CA bundles and the callers file are files that change while a process
// runs: Setup (a service's edge) and NewClientTLS (a client's certificate) read them at start-up,
// refusing a certificate that is expired or not yet valid, and then re-read them whenever their
// folder changes (watched), every reload interval, and on SIGHUP. A new file that is good is in
// use from the next handshake (certificates, CAs) or request (callers); a bad one (unparsable, a
// key that is not the certificate's, expired, not yet valid, an invalid callers file) is
// refused, logged and counted, and the one in use stays (reload.go). A new client CA bundle
// reaches the connections already open too: one whose client certificate it no longer verifies
// is refused from its next request and closed, as is one whose certificate expires while it is
// open (conns.go).
package auth

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
)

// Errors.
var (
	ErrBadIdentity = errors.New("auth: certificate identity refused")
	ErrUnknown     = errors.New("auth: unknown caller")
)

// Identity is a caller's verified identity.
type Identity struct {
	TrustDomain string
	Name        string
}

func (id Identity) String() string { return "spiffe://" + id.TrustDomain + "/svc/" + id.Name }

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// FromCert returns the identity of a client certificate: its single URI SAN, which must be
// spiffe://<trustDomain>/svc/<name>.
func FromCert(cert *x509.Certificate, trustDomain string) (Identity, error) {
	switch n := len(cert.URIs); {
	case n == 0:
		return Identity{}, fmt.Errorf("%w: the certificate has no URI SAN", ErrBadIdentity)
	case n > 1:
		return Identity{}, fmt.Errorf("%w: the certificate has %d URI SANs, want one", ErrBadIdentity, n)
	}
	return ParseSPIFFE(cert.URIs[0], trustDomain)
}

// ParseSPIFFE checks that u is spiffe://<trustDomain>/svc/<name> and returns the identity.
func ParseSPIFFE(u *url.URL, trustDomain string) (Identity, error) {
	if u.Scheme != "spiffe" || u.User != nil || u.Port() != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Identity{}, fmt.Errorf("%w: %q is not a SPIFFE ID", ErrBadIdentity, u)
	}
	// SPIFFE IDs never hold percent-encoding: "ord%65rs" must not pass as "orders".
	if u.RawPath != "" || strings.Contains(u.String(), "%") {
		return Identity{}, fmt.Errorf("%w: %q is percent-encoded; a SPIFFE ID never is", ErrBadIdentity, u)
	}
	if u.Host != trustDomain {
		return Identity{}, fmt.Errorf("%w: trust domain %q, want %q", ErrBadIdentity, u.Host, trustDomain)
	}
	name, ok := strings.CutPrefix(u.Path, "/svc/")
	if !ok || !nameRE.MatchString(name) {
		return Identity{}, fmt.Errorf("%w: path %q, want /svc/<name>", ErrBadIdentity, u.Path)
	}
	return Identity{TrustDomain: trustDomain, Name: name}, nil
}

// Caller is one known caller.
type Caller struct {
	Name string `json:"name"`
	// IDsPerSecond is the quota (a batch of n counts n). 0 means no quota.
	IDsPerSecond float64 `json:"ids_per_second"`
	// Burst is how many IDs may be taken at once. Default: max(IDsPerSecond, 1000).
	Burst int `json:"burst,omitempty"`
	// Admin may change the registry.
	Admin bool `json:"admin,omitempty"`
	// Scraper may read /metrics on the mutual-TLS port (which shows callers' names and counts);
	// scrapers inside the network read the plaintext health listener instead.
	Scraper bool `json:"scraper,omitempty"`
}

// Callers is the callers file: the trust domain and the known callers.
type Callers struct {
	TrustDomain string   `json:"trust_domain"`
	Callers     []Caller `json:"callers"`
}

// LoadCallers reads and validates a callers file (JSON).
func LoadCallers(path string) (*Callers, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: callers file: %w", err)
	}
	c, err := ParseCallers(b)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return c, nil
}

// ParseCallers decodes and validates the JSON of a callers file.
func ParseCallers(b []byte) (*Callers, error) {
	var c Callers
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("auth: callers file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("auth: callers file: more than one JSON document")
	}
	return &c, c.Validate()
}

// Validate checks the trust domain, names and quotas, and fills in default bursts.
func (c *Callers) Validate() error {
	if c.TrustDomain == "" || strings.ContainsAny(c.TrustDomain, "/:@ ") {
		return fmt.Errorf("auth: callers file: bad trust domain %q", c.TrustDomain)
	}
	seen := map[string]bool{}
	for i := range c.Callers {
		cl := &c.Callers[i]
		if !nameRE.MatchString(cl.Name) || seen[cl.Name] {
			return fmt.Errorf("auth: callers file: bad or repeated caller name %q", cl.Name)
		}
		seen[cl.Name] = true
		if cl.IDsPerSecond < 0 || cl.Burst < 0 {
			return fmt.Errorf("auth: callers file: caller %s: negative quota", cl.Name)
		}
		if cl.Burst == 0 {
			cl.Burst = max(int(cl.IDsPerSecond), 1000)
		}
	}
	return nil
}

// Find returns the caller with the given name.
func (c *Callers) Find(name string) (Caller, bool) {
	for _, cl := range c.Callers {
		if cl.Name == name {
			return cl, true
		}
	}
	return Caller{}, false
}

// ServerTLS returns a server TLS configuration that requires a client certificate signed by the
// CA in clientCAFile and refuses, during the handshake, any whose identity is not a single
// SPIFFE ID of trustDomain. The files are read once; a service's edge (Setup) re-reads them.
func ServerTLS(certFile, keyFile, clientCAFile, trustDomain string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("auth: server certificate: %w", err)
	}
	pool, err := CertPool(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("auth: client CA: %w", err)
	}
	return serverConfig(&cert, pool, func() string { return trustDomain }), nil
}

// ContextKey is the key of a request's *Result in its context (FromContext). Attach stores it
// with context.WithValue; a server that builds each request's context as one value of its own
// type (serve.WithRequest) answers Value(ContextKey{}) with Resolve's Result.
type ContextKey struct{}

// Resolver attaches the caller of each request to its context: the verified identity of the TLS
// connection looked up in the callers file, or, in development mode (plaintext), one default
// caller.
type Resolver struct {
	callers atomic.Pointer[Callers] // the callers file in use (a reload swaps it)
	dev     *Result                 // every request's result in development mode (read-only, shared)
	conns   *conns                  // a Gate's open connections (nil: not tracked)
}

// NewResolver returns a resolver for TLS callers.
func NewResolver(c *Callers) *Resolver {
	rv := &Resolver{}
	rv.callers.Store(c)
	return rv
}

// Callers returns the callers file in use (nil in development mode).
func (rv *Resolver) Callers() *Callers { return rv.callers.Load() }

// NewDevResolver returns a resolver that treats every request as the one caller dev (plaintext
// development mode).
func NewDevResolver(dev Caller) *Resolver {
	return &Resolver{dev: &Result{Caller: dev, Identity: Identity{TrustDomain: "dev", Name: dev.Name}}}
}

// Names returns the names of the callers the resolver knows (the default caller in development
// mode), so per-caller metrics can be exported at zero from the start.
func (rv *Resolver) Names() []string {
	if rv.dev != nil {
		return []string{rv.dev.Caller.Name}
	}
	var out []string
	if c := rv.callers.Load(); c != nil {
		for _, cl := range c.Callers {
			out = append(out, cl.Name)
		}
	}
	return out
}

// ScrapersOnly lets only callers marked scraper (and the development caller) reach h: for
// /metrics on the mutual-TLS port. Others get 403.
func ScrapersOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := FromContext(r.Context())
		if res.Err != nil || !(res.Caller.Scraper || res.Identity.TrustDomain == "dev") {
			http.Error(w, "metrics are for callers marked scraper in the callers file", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Result is what the resolver found for a request.
type Result struct {
	Caller   Caller
	Identity Identity
	Err      error // ErrUnknown or ErrBadIdentity (ErrDistrusted among them) when the request must be refused
}

// Middleware resolves the caller and stores the Result in the request context.
func (rv *Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(rv.Attach(r.Context(), r)))
	})
}

// Attach resolves the caller of r and returns ctx carrying the Result, for servers that build
// the request context in one middleware of their own.
func (rv *Resolver) Attach(ctx context.Context, r *http.Request) context.Context {
	return context.WithValue(ctx, ContextKey{}, rv.resolve(r))
}

// Resolve returns the caller of r, the Result Attach stores: never nil, its Err set when the
// request must be refused.
func (rv *Resolver) Resolve(r *http.Request) *Result { return rv.resolve(r) }

func (rv *Resolver) resolve(r *http.Request) *Result {
	if rv.dev != nil {
		return rv.dev
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return &Result{Err: fmt.Errorf("%w: no client certificate", ErrBadIdentity)}
	}
	callers := rv.callers.Load()
	id, err := FromCert(r.TLS.PeerCertificates[0], callers.TrustDomain)
	if err != nil {
		return &Result{Err: err}
	}
	if rv.conns != nil {
		if err := rv.conns.check(r); err != nil {
			return &Result{Identity: id, Err: err}
		}
	}
	c, ok := callers.Find(id.Name)
	if !ok {
		return &Result{Identity: id, Err: fmt.Errorf("%w: %s", ErrUnknown, id)}
	}
	return &Result{Caller: c, Identity: id}
}

// FromContext returns the Result the middleware stored.
func FromContext(ctx context.Context) *Result {
	if r, ok := ctx.Value(ContextKey{}).(*Result); ok {
		return r
	}
	return &Result{Err: fmt.Errorf("%w: no caller resolved", ErrUnknown)}
}

// Edge is how a service meets its callers: mutual TLS with a callers file, or, in development,
// plaintext with one default caller.
type Edge struct {
	InsecureDev                              bool
	Dev                                      Caller // the default caller in development mode
	CallersFile, CertFile, KeyFile, ClientCA string
	// ReloadEvery is how often the four files are re-read besides when their folders change and
	// on SIGHUP (the fallback for changes a watch misses). Default: DefaultReloadEvery.
	ReloadEvery time.Duration
}

// RegisterFlags defines the edge flags on fs: --callers, --tls-cert, --tls-key, --client-ca,
// --tls-reload-every and --insecure-dev (devUsage says who the development caller is).
func (e *Edge) RegisterFlags(fs *flag.FlagSet, callersUsage, devUsage string) {
	fs.StringVar(&e.CallersFile, "callers", "", callersUsage)
	fs.StringVar(&e.CertFile, "tls-cert", "", "server certificate, PEM")
	fs.StringVar(&e.KeyFile, "tls-key", "", "server key, PEM")
	fs.StringVar(&e.ClientCA, "client-ca", "", "CA that signs callers' certificates, PEM")
	fs.DurationVar(&e.ReloadEvery, "tls-reload-every", DefaultReloadEvery,
		"how often --tls-cert, --tls-key, --client-ca and --callers are re-read, besides when their folders change and on SIGHUP")
	fs.BoolVar(&e.InsecureDev, "insecure-dev", false, devUsage+" (development only)")
}

// TLSSet reports whether any TLS setting was given.
func (e Edge) TLSSet() bool { return e.CertFile != "" || e.KeyFile != "" || e.ClientCA != "" }

// Check refuses an edge that is neither complete mutual TLS nor development mode, and one that
// is both: --insecure-dev with a TLS setting would serve plaintext while the operator believes
// the certificates are in use.
func (e Edge) Check() error {
	switch {
	case e.InsecureDev && e.TLSSet():
		return errors.New("--insecure-dev and TLS settings (--tls-cert, --tls-key, --client-ca) exclude each other")
	case !e.InsecureDev && (e.CertFile == "" || e.KeyFile == "" || e.ClientCA == "" || e.CallersFile == ""):
		return errors.New("mutual TLS needs --tls-cert, --tls-key, --client-ca and --callers (or --insecure-dev for development)")
	case e.ReloadEvery < 0:
		return errors.New("--tls-reload-every is negative")
	}
	return nil
}

// CertPool reads a PEM file of CA certificates into a pool; a file with none is an error.
func CertPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}
