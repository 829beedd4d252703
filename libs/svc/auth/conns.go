package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrDistrusted is what errors.Is finds in the refusal of a request on a connection whose client
// certificate is no longer trusted: its CA left the client CA bundle, or it (or a CA of its
// chain) expired while the connection was open. errors.Is finds ErrBadIdentity in it too, so it
// is answered as a refused identity is (403, permission_denied).
var ErrDistrusted = errors.New("auth: the connection's client certificate is no longer trusted")

type distrustError string

func (e distrustError) Error() string { return string(e) }
func (distrustError) Is(target error) bool {
	return target == ErrDistrusted || target == ErrBadIdentity
}

// CloseDistrusted is how long a connection whose client certificate stopped being trusted stays
// open: its requests are refused from the moment it did (and, the refusal asking the client to
// close, an HTTP/1.1 connection closes after the first and an HTTP/2 one is sent a GOAWAY);
// then it is closed, whatever it carries (an idle connection, a long-lived stream).
const CloseDistrusted = 500 * time.Millisecond

// Reasons of idgen_tls_distrusted_connections_total.
const (
	DistrustUnverified = "unverified" // the client CA bundle no longer verifies the certificate
	DistrustExpired    = "expired"    // the certificate, or a CA of its chain, expired
)

// conns are the open connections of a Gate's listener, each with the chains its client
// certificate verified with, so that a change of the client CA bundle, or a certificate's
// expiry, reaches the connections already open and not only the next handshakes.
//
// A connection's chains are checked again once per bundle: when one is loaded (every open
// connection, at once), or at the connection's next request when its handshake used an older
// one. A request costs a context lookup and two atomic loads.
type conns struct {
	trust   atomic.Pointer[trust]
	log     *slog.Logger
	counter *prometheus.CounterVec
	closeIn time.Duration
	now     func() time.Time

	mu   sync.Mutex
	open map[net.Conn]*conn // by the connection under TLS
}

// trust is one client CA bundle as loaded, numbered.
type trust struct {
	gen     uint64
	pool    *x509.CertPool
	anchors map[string]bool // the DER of the bundle's certificates
}

type connKey struct{}

// conn is one open connection.
type conn struct {
	raw     net.Conn                      // closing it ends the TLS connection at once
	gen     atomic.Uint64                 // the bundle its chains were last verified with (0: none yet)
	refused atomic.Pointer[distrustError] // set once, for good

	mu      sync.Mutex // the fields below
	peer    []*x509.Certificate
	chains  [][]*x509.Certificate // the chains that verify with bundle gen
	expires *time.Timer           // refuses the connection when its chains expire
	closing *time.Timer
	done    bool // closed: no timer is armed any more
}

func newConns(log *slog.Logger) *conns {
	return &conns{log: log, closeIn: CloseDistrusted, now: time.Now, open: map[net.Conn]*conn{},
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_tls_distrusted_connections_total",
			Help: "Open connections refused and closed because their client certificate stopped being trusted, by reason: unverified (the client CA bundle loaded no longer verifies it) or expired (it, or a CA of its chain, expired while the connection was open)."},
			[]string{"reason"})}
}

// setBundle puts b in use and checks every open connection's certificate against it; it
// returns the bundle's number, which the handshakes it verifies record.
func (cs *conns) setBundle(b *CABundle) uint64 {
	t := &trust{pool: b.Pool, anchors: make(map[string]bool, len(b.Certs))}
	for _, c := range b.Certs {
		t.anchors[string(c.Raw)] = true
	}
	if old := cs.trust.Load(); old != nil {
		t.gen = old.gen + 1
	} else {
		t.gen = 1
	}
	cs.trust.Store(t)
	cs.mu.Lock()
	open := make([]*conn, 0, len(cs.open))
	for _, c := range cs.open {
		open = append(open, c)
	}
	cs.mu.Unlock()
	refused := 0
	for _, c := range open {
		if cs.recheck(c, nil) != nil {
			refused++
		}
	}
	if len(open) > 0 {
		cs.log.Info("client CA bundle: open connections checked against it", "connections", len(open), "refused", refused)
	}
	return t.gen
}

// connContext is the http.Server ConnContext hook that tracks a connection from its accept.
func (cs *conns) connContext(ctx context.Context, nc net.Conn) context.Context {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return ctx
	}
	c := &conn{raw: tc.NetConn()}
	cs.mu.Lock()
	cs.open[c.raw] = c
	cs.mu.Unlock()
	return context.WithValue(ctx, connKey{}, c)
}

// connState is the http.Server ConnState hook that forgets a connection once it is closed or hijacked.
func (cs *conns) connState(nc net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return
	}
	raw := tc.NetConn()
	cs.mu.Lock()
	c := cs.open[raw]
	delete(cs.open, raw)
	cs.mu.Unlock()
	if c != nil {
		c.mu.Lock()
		c.done = true
		c.stopTimers()
		c.mu.Unlock()
	}
}

// forHandshake returns the configuration of the handshake of raw: base, recording the chains
// the handshake verified (with bundle gen) in the connection's state.
func (cs *conns) forHandshake(base *tls.Config, gen uint64, raw net.Conn) *tls.Config {
	cs.mu.Lock()
	c := cs.open[raw]
	cs.mu.Unlock()
	if c == nil {
		return base // a listener that does not track its connections
	}
	conf := base.Clone()
	verify := base.VerifyConnection
	conf.VerifyConnection = func(st tls.ConnectionState) error {
		if err := verify(st); err != nil {
			return err
		}
		cs.verified(c, st, gen)
		return nil
	}
	return conf
}

// verified records what c's handshake verified with bundle gen, and checks it again at once
// when a newer bundle was loaded meanwhile.
func (cs *conns) verified(c *conn, st tls.ConnectionState, gen uint64) {
	c.mu.Lock()
	c.peer, c.chains = st.PeerCertificates, st.VerifiedChains
	c.gen.Store(gen)
	cs.armExpiry(c)
	c.mu.Unlock()
	if t := cs.trust.Load(); t.gen != gen {
		cs.recheck(c, nil)
	}
}

// check returns the refusal of r's connection, nil while its client certificate is trusted (and
// for a connection that is not tracked).
func (cs *conns) check(r *http.Request) error {
	c, _ := r.Context().Value(connKey{}).(*conn)
	if c == nil {
		return nil
	}
	if e := c.refused.Load(); e != nil {
		return *e
	}
	if c.gen.Load() == cs.trust.Load().gen {
		return nil
	}
	return cs.recheck(c, r.TLS)
}

// recheck verifies c's certificate with the bundle in use unless it was already (st gives the
// certificates of a connection whose handshake was not recorded), and refuses c when it no
// longer verifies.
func (cs *conns) recheck(c *conn, st *tls.ConnectionState) error {
	t := cs.trust.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.refused.Load(); e != nil {
		return *e
	}
	if c.gen.Load() == t.gen {
		return nil
	}
	if c.peer == nil && st != nil {
		c.peer, c.chains = st.PeerCertificates, st.VerifiedChains
	}
	if len(c.peer) == 0 {
		return nil // the handshake is not done: it verifies with a bundle that is
	}
	// A chain that ends at a CA still in the bundle still verifies; else the bundle may verify
	// the certificate another way (a CA added that signed an intermediate the client sent).
	var kept [][]*x509.Certificate
	for _, ch := range c.chains {
		if len(ch) > 0 && t.anchors[string(ch[len(ch)-1].Raw)] {
			kept = append(kept, ch)
		}
	}
	if len(kept) == 0 {
		inter := x509.NewCertPool()
		for _, ic := range c.peer[1:] {
			inter.AddCert(ic)
		}
		chains, err := c.peer[0].Verify(x509.VerifyOptions{Roots: t.pool, Intermediates: inter,
			CurrentTime: cs.now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		if err != nil {
			return cs.refuse(c, DistrustUnverified, fmt.Sprintf(
				"auth: the connection's client certificate (serial %s) no longer verifies with the client CA bundle: %v",
				serial(c.peer[0]), err))
		}
		kept = chains
	}
	c.chains = kept
	c.gen.Store(t.gen)
	cs.armExpiry(c)
	return nil
}

// armExpiry refuses c, by a timer, when the last of its chains expires (c.mu held).
func (cs *conns) armExpiry(c *conn) {
	if c.expires != nil {
		c.expires.Stop()
		c.expires = nil
	}
	if c.done || len(c.chains) == 0 {
		return
	}
	var last time.Time
	var lastBy *x509.Certificate // the certificate whose expiry ends the chain that lasts longest
	for _, ch := range c.chains {
		var end time.Time
		var by *x509.Certificate
		for _, cert := range ch {
			if by == nil || cert.NotAfter.Before(end) {
				end, by = cert.NotAfter, cert
			}
		}
		if lastBy == nil || end.After(last) {
			last, lastBy = end, by
		}
	}
	what := fmt.Sprintf("the connection's client certificate (serial %s)", serial(c.peer[0]))
	if lastBy != c.peer[0] {
		what += fmt.Sprintf(", through its CA %q,", lastBy.Subject.String())
	}
	msg := fmt.Sprintf("auth: %s expired at %s", what, last.UTC().Format(time.RFC3339))
	c.expires = time.AfterFunc(last.Sub(cs.now()), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.done {
			cs.refuse(c, DistrustExpired, msg)
		}
	})
}

// refuse refuses c's requests from now on and closes it after cs.closeIn (c.mu held). It
// returns the refusal.
func (cs *conns) refuse(c *conn, reason, msg string) error {
	e := distrustError(msg)
	if !c.refused.CompareAndSwap(nil, &e) {
		return *c.refused.Load()
	}
	c.stopTimers()
	cs.counter.WithLabelValues(reason).Inc()
	attrs := []any{"reason", reason, "remote", c.raw.RemoteAddr().String(), "error", msg, "close_in", cs.closeIn.String()}
	if len(c.peer) > 0 {
		attrs = append(attrs, "serial", serial(c.peer[0]), "subject", c.peer[0].Subject.String())
		if len(c.peer[0].URIs) == 1 {
			attrs = append(attrs, "identity", c.peer[0].URIs[0].String())
		}
	}
	cs.log.Warn("connection refused: its client certificate is no longer trusted", attrs...)
	if !c.done {
		c.closing = time.AfterFunc(cs.closeIn, func() { c.raw.Close() })
	}
	return e
}

// stopTimers stops c's timers (c.mu held).
func (c *conn) stopTimers() {
	if c.expires != nil {
		c.expires.Stop()
		c.expires = nil
	}
	if c.done && c.closing != nil {
		c.closing.Stop()
	}
}

// ConnHooks are the http.Server hooks that track a listener's connections (ConnContext and
// ConnState), so that a Gate refuses and closes the connections whose client certificate stops
// being trusted.
type ConnHooks struct {
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	ConnState   func(c net.Conn, state http.ConnState)
}

// hooks holds the connections of each Gate's TLS configuration, by the configuration (weak: a
// Gate nothing uses any more is forgotten).
var hooks sync.Map // weak.Pointer[tls.Config] → *conns

func register(conf *tls.Config, cs *conns) {
	k := weak.Make(conf)
	hooks.Store(k, cs)
	runtime.AddCleanup(conf, func(k weak.Pointer[tls.Config]) { hooks.Delete(k) }, k)
}

// HooksFor returns the hooks of the server whose TLS configuration is conf, when conf is a
// Gate's (Gate.TLS): serve.Serve installs them.
func HooksFor(conf *tls.Config) (ConnHooks, bool) {
	v, ok := hooks.Load(weak.Make(conf))
	if !ok {
		return ConnHooks{}, false
	}
	cs := v.(*conns)
	return ConnHooks{ConnContext: cs.connContext, ConnState: cs.connState}, true
}
