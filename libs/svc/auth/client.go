package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
)

// ClientFiles are where a client's TLS material lives, PEM files: its certificate and key, which
// it presents to servers that ask for one, and the CA bundle it verifies servers with (empty:
// the system's roots).
type ClientFiles struct {
	Cert, Key, CA string
}

// ClientTLS is a client's certificate, key and server CA bundle, re-read from their files while
// Run runs; each new connection takes the ones in use when it starts.
type ClientTLS struct {
	w     *watcher
	pair  atomic.Pointer[tls.Certificate]
	roots atomic.Pointer[x509.CertPool] // nil: the system's roots
	dial  net.Dialer

	mu         sync.Mutex
	transports []weak.Pointer[reloadingTransport] // Transport's still in use, which a reload moves to new connections
}

// NewClientTLS reads f, refusing a certificate that is expired or not yet valid, or a key that
// is not the certificate's. The reload metrics are in Collectors (kind client, and server_ca for
// the CA bundle).
func NewClientTLS(f ClientFiles, opt Reload) (*ClientTLS, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("auth: a client certificate needs both its certificate and its key file")
	}
	c := &ClientTLS{w: newWatcher(opt), dial: net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}}
	if err := c.w.add(&source{kind: KindClient, files: []string{f.Cert, f.Key}, expiry: true, load: c.loadPair}); err != nil {
		return nil, fmt.Errorf("auth: client certificate %s (key %s): %w", f.Cert, f.Key, err)
	}
	if f.CA != "" {
		if err := c.w.add(&source{kind: KindServerCA, files: []string{f.CA}, load: c.loadRoots}); err != nil {
			return nil, fmt.Errorf("auth: server CA %s: %w", f.CA, err)
		}
	}
	c.w.handleSIGHUP()
	return c, nil
}

// Run re-reads the files until ctx ends.
func (c *ClientTLS) Run(ctx context.Context) {
	defer c.w.stop()
	c.w.run(ctx)
}

// Collectors returns the reload metrics, for the application to register.
func (c *ClientTLS) Collectors() []prometheus.Collector { return c.w.collectors() }

// Certificate returns the certificate in use.
func (c *ClientTLS) Certificate() *tls.Certificate { return c.pair.Load() }

// Config returns the configuration of one connection to serverName (a host name or an IP
// address) with the material in use now.
func (c *ClientTLS) Config(serverName string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		RootCAs:    c.roots.Load(),
		NextProtos: []string{"h2", "http/1.1"},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return c.pair.Load(), nil
		},
	}
}

// DialTLSContext dials addr and completes a TLS handshake with the material in use now (for
// http.Transport.DialTLSContext: the transport's own TLSClientConfig would keep the CA bundle of
// its creation).
func (c *ClientTLS) DialTLSContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	raw, err := c.dial.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(raw, c.Config(host))
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return tc, nil
}

// Transport returns an HTTP transport whose https:// connections use DialTLSContext: HTTP/2 when
// the server offers it, else HTTP/1.1 (http:// ones speak HTTP/1.1). After a reload the next
// request goes on a new connection, which presents the new certificate (and verifies with the
// new bundle); a connection made before takes no new request, and closes once the requests it
// carries have ended (they finish on it) and it has been idle for a minute.
func (c *ClientTLS) Transport() http.RoundTripper {
	t := &reloadingTransport{}
	t.cur.Store(c.newTransport())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transports = append(c.live(), weak.Make(t))
	return t
}

// live drops the transports nothing uses any more from c.transports and returns the rest
// (c.mu held).
func (c *ClientTLS) live() []weak.Pointer[reloadingTransport] {
	return slices.DeleteFunc(c.transports, func(p weak.Pointer[reloadingTransport]) bool { return p.Value() == nil })
}

func (c *ClientTLS) newTransport() *http.Transport {
	t := &http.Transport{
		DialContext:         c.dial.DialContext,
		DialTLSContext:      c.DialTLSContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     time.Minute,
		Protocols:           new(http.Protocols),
	}
	t.Protocols.SetHTTP1(true)
	t.Protocols.SetHTTP2(true)
	return t
}

// reloadingTransport sends each request on the http.Transport of the material loaded last.
// Closing the idle connections at a reload would not be enough: an HTTP/2 connection that always
// has a request in flight is never idle, and would go on with the old certificate for ever.
type reloadingTransport struct {
	cur atomic.Pointer[http.Transport]
}

func (t *reloadingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.cur.Load().RoundTrip(r)
}

// CloseIdleConnections closes the idle connections of the transport in use (as
// http.Client.CloseIdleConnections asks).
func (t *reloadingTransport) CloseIdleConnections() { t.cur.Load().CloseIdleConnections() }

// reconnect gives every transport made so far a new http.Transport, so that the next request
// connects with the material just loaded. The old one gets no request any more: its idle
// connections are closed now, and each of the others once its requests have ended and it has
// been idle for the transport's IdleConnTimeout.
func (c *ClientTLS) reconnect() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transports = c.live()
	for _, p := range c.transports {
		if t := p.Value(); t != nil {
			t.cur.Swap(c.newTransport()).CloseIdleConnections()
		}
	}
}

func (c *ClientTLS) loadPair(contents [][]byte, now time.Time) (loaded, error) {
	pair, err := ParseKeyPair(contents[0], contents[1], now)
	if err != nil {
		return loaded{}, err
	}
	c.pair.Store(pair)
	c.reconnect()
	return loaded{expiry: pair.Leaf.NotAfter, attrs: certAttrs(pair.Leaf)}, nil
}

func (c *ClientTLS) loadRoots(contents [][]byte, now time.Time) (loaded, error) {
	b, err := ParseCABundle(contents[0], now)
	if err != nil {
		return loaded{}, err
	}
	c.roots.Store(b.Pool)
	c.reconnect()
	return loaded{expiry: b.Expiry, attrs: []any{"certificates", len(b.Certs), "not_after", b.Expiry.UTC().Format(time.RFC3339)}}, nil
}
