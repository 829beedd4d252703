package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Gate is a service's edge as Setup built it: the resolver of callers and, with mutual TLS, the
// server TLS configuration. Its certificate, key, client CA bundle and callers file are re-read
// while Run runs; each handshake takes the certificate and CAs in use when it starts, each
// request the callers file in use when it arrives. A connection whose client certificate stops
// being trusted while it is open (its CA left the bundle, or it expired) is refused from its
// next request and closed (conns.go), on a server that installs the Gate's connection hooks
// (HooksFor: serve.Serve does).
type Gate struct {
	Resolver *Resolver
	// TLS is the listener's configuration (nil in development mode). Its GetConfigForClient
	// hands each handshake the material in use.
	TLS *tls.Config

	w     *watcher
	conf  atomic.Pointer[handshakeConf] // the configuration of new handshakes
	leaf  atomic.Pointer[x509.Certificate]
	conns *conns // the open connections, checked against each bundle loaded

	mu        sync.Mutex // pair, pool and onCallers, while a reload builds the next configuration
	pair      *tls.Certificate
	pool      *x509.CertPool
	poolGen   uint64 // pool's number (conns)
	onCallers []func(names []string)
}

// handshakeConf is the configuration of new handshakes and the number of its client CA bundle.
type handshakeConf struct {
	conf *tls.Config
	gen  uint64
}

// Setup reads the edge's files and returns its Gate: with mutual TLS, the callers file, the
// server certificate and key (refused when expired or not yet valid: a service must not start
// on a certificate no caller accepts) and the client CA bundle. The reload metrics are
// registered on reg (when not nil). It warns loudly in development mode.
func Setup(e Edge, log *slog.Logger, reg prometheus.Registerer) (*Gate, error) {
	if e.InsecureDev {
		log.Warn("insecure-dev: plaintext, every request is the one default caller; never use this in production",
			"caller", e.Dev.Name, "admin", e.Dev.Admin)
		return &Gate{Resolver: NewDevResolver(e.Dev)}, nil
	}
	g := &Gate{conns: newConns(log)}
	g.Resolver = &Resolver{conns: g.conns}
	w := newWatcher(Reload{Every: e.ReloadEvery, Log: log, SIGHUP: true})
	if err := w.add(&source{kind: KindCallers, files: []string{e.CallersFile}, load: g.loadCallers}); err != nil {
		return nil, fmt.Errorf("auth: callers file %s: %w", e.CallersFile, err)
	}
	if err := w.add(&source{kind: KindServer, files: []string{e.CertFile, e.KeyFile}, expiry: true, load: g.loadPair}); err != nil {
		return nil, fmt.Errorf("auth: server certificate %s (key %s): %w", e.CertFile, e.KeyFile, err)
	}
	if err := w.add(&source{kind: KindClientCA, files: []string{e.ClientCA}, expiry: true, load: g.loadClientCA}); err != nil {
		return nil, fmt.Errorf("auth: client CA %s: %w", e.ClientCA, err)
	}
	if reg != nil {
		for _, c := range append(w.collectors(), g.conns.counter) {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	w.handleSIGHUP()
	g.w = w
	g.TLS = &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			cur := g.conf.Load()
			return g.conns.forHandshake(cur.conf, cur.gen, hello.Conn), nil
		},
	}
	register(g.TLS, g.conns)
	log.Info("mutual TLS: certificate, key, client CA and callers re-read when they change, every period and on SIGHUP",
		"every", w.opt.Every.String(), "server_certificate_expires", g.leaf.Load().NotAfter.UTC().Format(time.RFC3339))
	return g, nil
}

// Run re-reads the edge's files until ctx ends (nothing in development mode).
func (g *Gate) Run(ctx context.Context) {
	if g.w == nil {
		return
	}
	defer g.w.stop()
	g.w.run(ctx)
}

// ServerCertificate returns the certificate new handshakes are served (nil in development mode).
func (g *Gate) ServerCertificate() *x509.Certificate { return g.leaf.Load() }

// CertificateProblem returns an error once the certificate served is expired (or not yet valid,
// after a clock step): callers refuse every handshake, so a /healthz must not say ok. Nil in
// development mode.
func (g *Gate) CertificateProblem() error {
	leaf := g.leaf.Load()
	if leaf == nil {
		return nil
	}
	if err := CheckValidity(leaf, time.Now()); err != nil {
		return fmt.Errorf("the server certificate in use (serial %s) %w", serial(leaf), err)
	}
	return nil
}

// OnCallers calls f with the callers' names after each reload of the callers file (a service
// exports a new caller's series at zero). Nothing happens in development mode.
func (g *Gate) OnCallers(f func(names []string)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.onCallers = append(g.onCallers, f)
}

// ReasonCertificate is the /healthz reason of a service whose server certificate is expired.
const ReasonCertificate = "certificate_expired"

func (g *Gate) loadCallers(contents [][]byte, _ time.Time) (loaded, error) {
	c, err := ParseCallers(contents[0])
	if err != nil {
		return loaded{}, err
	}
	attrs := []any{"trust_domain", c.TrustDomain, "callers", len(c.Callers)}
	if old := g.Resolver.callers.Load(); old != nil && old.TrustDomain != c.TrustDomain {
		attrs = append(attrs, "previous_trust_domain", old.TrustDomain)
	}
	g.Resolver.callers.Store(c)
	g.mu.Lock()
	hooks := g.onCallers
	g.mu.Unlock()
	names := g.Resolver.Names()
	for _, f := range hooks {
		f(names)
	}
	return loaded{attrs: attrs}, nil
}

func (g *Gate) loadPair(contents [][]byte, now time.Time) (loaded, error) {
	pair, err := ParseKeyPair(contents[0], contents[1], now)
	if err != nil {
		return loaded{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pair = pair
	g.install()
	return loaded{expiry: pair.Leaf.NotAfter, attrs: certAttrs(pair.Leaf)}, nil
}

func (g *Gate) loadClientCA(contents [][]byte, now time.Time) (loaded, error) {
	b, err := ParseCABundle(contents[0], now)
	if err != nil {
		return loaded{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// The connections open are checked against the new bundle; a handshake that began with the
	// old one is checked against it as it ends.
	g.pool, g.poolGen = b.Pool, g.conns.setBundle(b)
	g.install()
	return loaded{expiry: b.Expiry, attrs: []any{"certificates", len(b.Certs), "not_after", b.Expiry.UTC().Format(time.RFC3339)}}, nil
}

// install puts the configuration of the current pair and pool in use (with g.mu held; the first
// loads, before there are both, install nothing).
func (g *Gate) install() {
	if g.pair == nil || g.pool == nil {
		return
	}
	g.conf.Store(&handshakeConf{serverConfig(g.pair, g.pool, func() string { return g.Resolver.callers.Load().TrustDomain }), g.poolGen})
	g.leaf.Store(g.pair.Leaf)
}

// serverConfig is the configuration of handshakes served pair, verifying callers with pool and
// refusing any whose identity is not a single SPIFFE ID of the trust domain.
func serverConfig(pair *tls.Certificate, pool *x509.CertPool, trustDomain func() string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		NextProtos:   []string{"h2", "http/1.1"},
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("%w: no client certificate", ErrBadIdentity)
			}
			_, err := FromCert(cs.PeerCertificates[0], trustDomain())
			return err
		},
	}
}

func serial(c *x509.Certificate) string { return hex.EncodeToString(c.SerialNumber.Bytes()) }

func certAttrs(c *x509.Certificate) []any {
	return []any{"serial", serial(c), "subject", c.Subject.String(), "not_after", c.NotAfter.UTC().Format(time.RFC3339)}
}
