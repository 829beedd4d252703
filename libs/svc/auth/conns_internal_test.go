package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// trackedConn is a connection as conns sees one after a handshake verified cert with bundle
// gen, and a request on it; the other end of the pipe sees the close.
func trackedConn(t testing.TB, cs *conns, cert tls.Certificate, roots *testCA, gen uint64) (*http.Request, net.Conn) {
	t.Helper()
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(roots.Cert)
	chains, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	raw, peer := net.Pipe()
	t.Cleanup(func() { raw.Close(); peer.Close() })
	ctx := cs.connContext(context.Background(), tls.Server(raw, &tls.Config{}))
	st := tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}, VerifiedChains: chains}
	cs.verified(cs.open[raw], st, gen)
	r, _ := http.NewRequestWithContext(context.WithValue(ctx, http.ServerContextKey, "a server"), "GET", "/", nil)
	r.TLS = &st
	return r, peer
}

func bundle(t testing.TB, cas ...*testCA) *CABundle {
	t.Helper()
	var pem []byte
	for _, ca := range cas {
		pem = append(pem, ca.PEM...)
	}
	b, err := ParseCABundle(pem, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// closedWithin reports whether the other end of a pipe sees it closed within d.
func closedWithin(peer net.Conn, d time.Duration) bool {
	_ = peer.SetReadDeadline(time.Now().Add(d))
	_, err := peer.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)
}

// TestConnsDistrust: a connection whose CA leaves the bundle is refused (ErrDistrusted, which is
// an ErrBadIdentity) at once and closed after closeIn; another CA's connection stays; putting
// the CA back does not make a refused connection trusted again; a connection whose handshake
// verified with an older bundle is checked at its next request.
func TestConnsDistrust(t *testing.T) {
	cs := newConns(slog.New(slog.NewTextHandler(io.Discard, nil)))
	cs.closeIn = 20 * time.Millisecond
	caA, caB := newTestCA(t, "A"), newTestCA(t, "B")
	hour := time.Now().Add(time.Hour)
	fromA, fromB := caA.Client(t, hour, "spiffe://idgen.test/svc/orders"), caB.Client(t, hour, "spiffe://idgen.test/svc/orders")
	gen := cs.setBundle(bundle(t, caA, caB))
	rA, peerA := trackedConn(t, cs, fromA, caA, gen)
	rB, peerB := trackedConn(t, cs, fromB, caB, gen)
	if err := cs.check(rA); err != nil {
		t.Fatalf("before the change: %v", err)
	}
	began := time.Now()
	gen = cs.setBundle(bundle(t, caB))
	err := cs.check(rA)
	if !errors.Is(err, ErrDistrusted) || !errors.Is(err, ErrBadIdentity) {
		t.Fatalf("A's connection after A left the bundle: %v", err)
	}
	if !closedWithin(peerA, time.Second) {
		t.Fatal("A's connection is not closed")
	}
	t.Logf("closed %v after the change (closeIn %v): %v", time.Since(began).Round(time.Millisecond), cs.closeIn, err)
	if err := cs.check(rB); err != nil {
		t.Fatalf("B's connection: %v", err)
	}
	if closedWithin(peerB, 50*time.Millisecond) {
		t.Fatal("B's connection was closed")
	}
	cs.setBundle(bundle(t, caA, caB))
	if err := cs.check(rA); !errors.Is(err, ErrDistrusted) {
		t.Fatalf("A's refused connection after A came back: %v", err)
	}

	// A handshake that verified with the bundle before the last one: checked when its request comes.
	cs.setBundle(bundle(t, caB))
	rLate, _ := trackedConn(t, cs, fromA, caA, gen-1)
	if err := cs.check(rLate); !errors.Is(err, ErrDistrusted) {
		t.Fatalf("a connection verified with an older bundle that held A: %v", err)
	}
	if got := testCounter(cs, DistrustUnverified); got != 2 {
		t.Errorf("distrusted connections (unverified) = %v, want 2", got)
	}
}

// TestConnsExpiry: a connection is refused and closed when its certificate expires.
func TestConnsExpiry(t *testing.T) {
	cs := newConns(slog.New(slog.NewTextHandler(io.Discard, nil)))
	cs.closeIn = 20 * time.Millisecond
	ca := newTestCA(t, "A")
	cert := ca.Client(t, time.Now().Add(time.Hour), "spiffe://idgen.test/svc/orders")
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	cs.now = func() time.Time { return leaf.NotAfter.Add(-50 * time.Millisecond) } // the timer's start
	gen := cs.setBundle(bundle(t, ca))
	r, peer := trackedConn(t, cs, cert, ca, gen)
	if err := cs.check(r); err != nil {
		t.Fatalf("before the expiry: %v", err)
	}
	if !closedWithin(peer, 2*time.Second) {
		t.Fatal("not closed after the expiry")
	}
	if err := cs.check(r); !errors.Is(err, ErrDistrusted) || !errors.Is(err, ErrBadIdentity) {
		t.Fatalf("after the expiry: %v", err)
	}
	if got := testCounter(cs, DistrustExpired); got != 1 {
		t.Errorf("distrusted connections (expired) = %v, want 1", got)
	}
}

func testCounter(cs *conns, reason string) float64 {
	return testutil.ToFloat64(cs.counter.WithLabelValues(reason))
}

// BenchmarkConnsCheck is what a request on a tracked connection costs once its certificate was
// verified with the bundle in use.
func BenchmarkConnsCheck(b *testing.B) {
	cs := newConns(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ca := newTestCA(b, "A")
	gen := cs.setBundle(bundle(b, ca))
	r, _ := trackedConn(b, cs, ca.Client(b, time.Now().Add(time.Hour), "spiffe://idgen.test/svc/orders"), ca, gen)
	// A request's context is net/http's cancelCtx over the connection's.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	r = r.WithContext(ctx)
	b.ReportAllocs()
	for b.Loop() {
		if err := cs.check(r); err != nil {
			b.Fatal(err)
		}
	}
}
