// The tests of libs/svc/auth that use the test fixtures (libs/testenv) and the package's
// exported API only, in this test-only module so that libs/svc does not require libs/testenv
// (which requires libs/svc through libs/localstack). The tests of unexported parts stay in
// libs/svc/auth with certificates of their own.
package auth_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// edge is a service's edge files in a temporary folder, served by a Gate on a loopback listener.
type edge struct {
	dir  string
	e    auth.Edge
	ca   *testenv.CA
	gate *auth.Gate
	reg  *prometheus.Registry
	log  *testenv.LogBuffer
	addr string
}

const callers = `{"trust_domain": "idgen.test", "callers": [{"name": "orders"}]}`

func writePair(t *testing.T, e auth.Edge, cert tls.Certificate) {
	t.Helper()
	c, k := testenv.EncodePEM(t, cert)
	testenv.RenameInto(t, e.KeyFile, k)
	testenv.RenameInto(t, e.CertFile, c)
}

// edgeOf is the edge of the files f.
func edgeOf(f testenv.TLSFiles) auth.Edge {
	return auth.Edge{CertFile: f.Cert, KeyFile: f.Key, ClientCA: f.ClientCA, CallersFile: f.Callers}
}

func newEdge(t *testing.T, every time.Duration) *edge {
	t.Helper()
	dir := t.TempDir()
	ed := &edge{dir: dir, ca: testenv.NewCA(t, "CA"), reg: prometheus.NewRegistry(), log: &testenv.LogBuffer{}}
	ed.e = edgeOf(ed.ca.EdgeFiles(t, dir, callers))
	ed.e.ReloadEvery = every
	var err error
	ed.gate, err = auth.Setup(ed.e, slog.New(slog.NewJSONHandler(ed.log, nil)), ed.reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ed.gate.Run(ctx); close(done) }()
	srv := httptest.NewUnstartedServer(ed.gate.Resolver.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if res := auth.FromContext(r.Context()); res.Err != nil {
			http.Error(w, res.Err.Error(), http.StatusForbidden)
			return
		}
		io.WriteString(w, "ok")
	})))
	srv.TLS = ed.gate.TLS
	srv.StartTLS()
	ed.addr = srv.Listener.Addr().String()
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return ed
}

func (ed *edge) served(t *testing.T) *x509.Certificate {
	t.Helper()
	orders := ed.ca.Client(t, time.Now().Add(time.Hour), "spiffe://idgen.test/svc/orders")
	c, err := testenv.ServedCertificate(ed.addr, &orders)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (ed *edge) reloads(t *testing.T, kind, outcome string) float64 {
	t.Helper()
	return reloads(t, ed.reg, kind, outcome)
}

func leaf(t *testing.T, c tls.Certificate) *x509.Certificate {
	t.Helper()
	l, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestGateServesRenewal: a pair renamed into place is served from the next handshake; a bad one
// is refused, counted and logged once, while the pair in use stays.
func TestGateServesRenewal(t *testing.T) {
	ed := newEdge(t, time.Hour) // only the watch can see the renewals within the test
	renewed := ed.ca.Server(t)
	began := time.Now()
	writePair(t, ed.e, renewed)
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return ed.served(t).SerialNumber.Cmp(leaf(t, renewed).SerialNumber) == 0, "the renewal is not served"
	})
	t.Logf("renewal served %v after its rename (watched)", time.Since(began).Round(time.Millisecond))
	if got := testenv.GatheredMetric(t, ed.reg, "idgen_tls_certificate_expiry_timestamp_seconds", testenv.Labels{"kind": "server"}); got != float64(leaf(t, renewed).NotAfter.Unix()) {
		t.Errorf("server expiry gauge %v, want %d", got, leaf(t, renewed).NotAfter.Unix())
	}
	if ed.reloads(t, "server", "ok") != 1 {
		t.Errorf("reloads{server,ok} = %v, want 1", ed.reloads(t, "server", "ok"))
	}

	now := time.Now()
	writePair(t, ed.e, ed.ca.ServerValid(t, now.Add(-2*time.Hour), now.Add(-time.Hour)))
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return ed.reloads(t, "server", "error") >= 1, "the expired renewal is not counted"
	})
	if ed.served(t).SerialNumber.Cmp(leaf(t, renewed).SerialNumber) != 0 {
		t.Fatal("an expired renewal replaced the pair in use")
	}
	if !strings.Contains(ed.log.String(), `"msg":"TLS reload refused: the files in use stay","kind":"server"`) ||
		!strings.Contains(ed.log.String(), "expired at") {
		t.Errorf("no log line of the refusal:\n%s", ed.log.String())
	}
	if ed.gate.CertificateProblem() != nil {
		t.Errorf("a refused renewal made the pair in use a problem: %v", ed.gate.CertificateProblem())
	}
}

// TestGateCallersAndCA: a caller added to the callers file and a CA added to the bundle are
// admitted; an invalid callers file is refused and the one in use stays; a CA taken out of the
// bundle admits no one, not even through a session resumed from before (crypto/tls checks a
// resumed session's chains against the ClientCAs of the configuration GetConfigForClient gives).
func TestGateCallersAndCA(t *testing.T) {
	ed := newEdge(t, time.Hour)
	hour := time.Now().Add(time.Hour)
	get := func(c *http.Client) (int, bool, error) {
		resp, err := c.Get("https://" + ed.addr + "/")
		if err != nil {
			return 0, false, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.TLS.DidResume, nil
	}
	client := func(roots *testenv.CA, cert tls.Certificate, sessions tls.ClientSessionCache) *http.Client {
		pool := x509.NewCertPool()
		pool.AddCert(ed.ca.Cert)
		return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ClientSessionCache: sessions, MinVersion: tls.VersionTLS12}}}
	}
	billing := client(ed.ca, ed.ca.Client(t, hour, "spiffe://idgen.test/svc/billing"), nil)
	if code, _, _ := get(billing); code != http.StatusForbidden {
		t.Fatalf("an unknown caller: %d", code)
	}
	testenv.RenameInto(t, ed.e.CallersFile, []byte(`{"trust_domain": "idgen.test", "callers": [{"name": "orders"}, {"name": "billing"}]}`))
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		code, _, err := get(billing)
		return err == nil && code == http.StatusOK, "the added caller is refused"
	})
	testenv.RenameInto(t, ed.e.CallersFile, []byte(`{"trust_domain": "idgen.test", "callers": [{"name": "Not Valid"}]}`))
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return ed.reloads(t, "callers", "error") == 1, "the invalid callers file is not counted"
	})
	if code, _, _ := get(billing); code != http.StatusOK {
		t.Fatalf("an invalid callers file replaced the one in use: %d", code)
	}

	ca2 := testenv.NewCA(t, "second CA")
	sessions := tls.NewLRUClientSessionCache(8)
	fromCA2 := client(ed.ca, ca2.Client(t, hour, "spiffe://idgen.test/svc/orders"), sessions)
	if _, _, err := get(fromCA2); err == nil {
		t.Fatal("a caller of a CA outside the bundle was answered")
	}
	testenv.RenameInto(t, ed.e.ClientCA, append(append([]byte(nil), ed.ca.PEM...), ca2.PEM...))
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		code, _, err := get(fromCA2)
		return err == nil && code == http.StatusOK, "the added CA's caller is refused"
	})
	if _, resumed, err := get(fromCA2); err != nil || !resumed {
		t.Fatalf("a second connection did not resume its session (%v): the check below would prove nothing", err)
	}
	testenv.RenameInto(t, ed.e.ClientCA, ed.ca.PEM)
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		code, resumed, err := get(fromCA2)
		return err != nil, "a caller of the removed CA is still answered: " + http.StatusText(code) + map[bool]string{true: " (resumed)"}[resumed]
	})
}

// TestSetupRefuses: a server certificate outside its validity, a key that is not the
// certificate's, or a CA bundle with no valid CA stops Setup with the reason.
func TestSetupRefuses(t *testing.T) {
	now := time.Now()
	ca := testenv.NewCA(t, "CA")
	for _, tt := range []struct {
		name  string
		setup func(e auth.Edge)
		want  string
	}{
		{"expired", func(e auth.Edge) { writePair(t, e, ca.ServerValid(t, now.Add(-2*time.Hour), now.Add(-time.Hour))) }, "expired at"},
		{"not yet valid", func(e auth.Edge) { writePair(t, e, ca.ServerValid(t, now.Add(time.Hour), now.Add(2*time.Hour))) }, "not valid before"},
		{"another key", func(e auth.Edge) {
			_, k := testenv.EncodePEM(t, ca.Server(t))
			testenv.RenameInto(t, e.KeyFile, k)
		}, "private key does not match"},
		{"no CA", func(e auth.Edge) { testenv.RenameInto(t, e.ClientCA, []byte("nothing")) }, "no PEM certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := edgeOf(ca.EdgeFiles(t, t.TempDir(), callers))
			tt.setup(e)
			_, err := auth.Setup(e, slog.New(slog.DiscardHandler), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Setup: %v, want an error with %q", err, tt.want)
			}
			if tt.name == "expired" && !errors.Is(err, auth.ErrValidity) {
				t.Errorf("%v is not ErrValidity", err)
			}
		})
	}
}

func TestParseCABundle(t *testing.T) {
	now := time.Now()
	a, b := testenv.NewCA(t, "a"), testenv.NewCA(t, "b")
	got, err := auth.ParseCABundle(append(append([]byte(nil), a.PEM...), b.PEM...), now)
	if err != nil || len(got.Certs) != 2 || !got.Expiry.Equal(a.Cert.NotAfter) {
		t.Fatalf("two CAs: %+v, %v; want the earlier expiry %v", got, err, a.Cert.NotAfter)
	}
	if _, err := auth.ParseCABundle(a.PEM, now.Add(2*time.Hour)); err == nil {
		t.Error("a bundle whose only CA has expired was accepted")
	}
	if got, err := auth.ParseCABundle(a.PEM, now.Add(-90*time.Minute)); err == nil {
		t.Errorf("a bundle whose only CA is not valid yet was accepted: %+v", got)
	}
	_, key := testenv.EncodePEM(t, a.Server(t))
	if _, err := auth.ParseCABundle(append(append([]byte(nil), a.PEM...), key...), now); err == nil || !strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("a key in the bundle: %v", err)
	}
}

// TestClientTLS: a client's certificate and server CA renamed into place are used from the next
// call, over HTTP/2 and the same transport; a bad renewal is refused and the certificate in use
// stays.
func TestClientTLS(t *testing.T) {
	ca, f, first := clientFiles(t)
	hour := time.Now().Add(time.Hour)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.TLS.PeerCertificates[0].SerialNumber.String()+" "+r.Proto)
		mu.Unlock()
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}, ClientAuth: tls.RequireAnyClientCert, NextProtos: []string{"h2", "http/1.1"}}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	reg := prometheus.NewRegistry()
	ct, err := auth.NewClientTLS(f, auth.Reload{Every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(ct.Collectors()...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ct.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// One transport throughout, as a client keeps: its idle HTTP/2 connection would present the
	// old certificate for ever if the reload did not close it.
	hc := &http.Client{Transport: ct.Transport(), Timeout: 2 * time.Second}
	last := func() string {
		resp, err := hc.Get(srv.URL)
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		mu.Lock()
		defer mu.Unlock()
		return seen[len(seen)-1]
	}
	if got := last(); got != leaf(t, first).SerialNumber.String()+" HTTP/2.0" {
		t.Fatalf("presented %s, want the first certificate over HTTP/2", got)
	}
	if got := testenv.GatheredMetric(t, reg, "idgen_tls_certificate_expiry_timestamp_seconds", testenv.Labels{"kind": "client"}); got != float64(leaf(t, first).NotAfter.Unix()) {
		t.Errorf("client expiry %v", got)
	}
	renewed := ca.Client(t, hour, "spiffe://idgen.test/svc/orders")
	writePair(t, auth.Edge{CertFile: f.Cert, KeyFile: f.Key}, renewed)
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		got := last()
		return got == leaf(t, renewed).SerialNumber.String()+" HTTP/2.0", "presents " + got
	})
	writePair(t, auth.Edge{CertFile: f.Cert, KeyFile: f.Key}, ca.Client(t, time.Now().Add(-time.Minute), "spiffe://idgen.test/svc/orders"))
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return reloads(t, reg, "client", "error") == 1, "the expired client certificate is not counted"
	})
	if got := last(); got != leaf(t, renewed).SerialNumber.String()+" HTTP/2.0" {
		t.Fatalf("after an expired renewal it presents %s, want the previous one", got)
	}
	// The server CA: a server of another CA is refused until the bundle holds it.
	other := testenv.NewCA(t, "other")
	srv2 := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv2.TLS = &tls.Config{Certificates: []tls.Certificate{other.Server(t)}}
	srv2.StartTLS()
	defer srv2.Close()
	get2 := func() error {
		hc := &http.Client{Transport: ct.Transport(), Timeout: 2 * time.Second}
		defer hc.CloseIdleConnections()
		resp, err := hc.Get(srv2.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if get2() == nil {
		t.Fatal("a server of a CA outside the bundle was trusted")
	}
	testenv.RenameInto(t, f.CA, append(append([]byte(nil), ca.PEM...), other.PEM...))
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		err := get2()
		return err == nil, "the added server CA is not trusted: " + errString(err)
	})
}

// clientFiles writes a client certificate of spiffe://idgen.test/svc/orders valid for an hour,
// its key and its CA's bundle into a temporary folder, and returns the CA, the files and the
// certificate.
func clientFiles(t *testing.T) (*testenv.CA, auth.ClientFiles, tls.Certificate) {
	t.Helper()
	dir := t.TempDir()
	ca := testenv.NewCA(t, "CA")
	f := auth.ClientFiles{Cert: filepath.Join(dir, "client.crt"), Key: filepath.Join(dir, "client.key"), CA: filepath.Join(dir, "ca.pem")}
	cert := ca.Client(t, time.Now().Add(time.Hour), "spiffe://idgen.test/svc/orders")
	writePair(t, auth.Edge{CertFile: f.Cert, KeyFile: f.Key}, cert)
	testenv.RenameInto(t, f.CA, ca.PEM)
	return ca, f, cert
}

// A reload moves the next request to a new connection even while the old one always has a
// request in flight (an HTTP/2 connection that is never idle), and the request in flight across
// the reload finishes on the old one.
func TestClientTLSBusyConnection(t *testing.T) {
	ca, f, first := clientFiles(t)
	hour := time.Now().Add(time.Hour)
	held, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			close(held)
			<-release
		}
		_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].SerialNumber.String()+" "+r.Proto)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}, ClientAuth: tls.RequireAnyClientCert, NextProtos: []string{"h2", "http/1.1"}}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ct, err := auth.NewClientTLS(f, auth.Reload{Every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ct.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	hc := &http.Client{Transport: ct.Transport(), Timeout: 10 * time.Second}
	get := func(path string) (string, error) {
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	want := func(c tls.Certificate) string { return leaf(t, c).SerialNumber.String() + " HTTP/2.0" }
	if got, err := get("/"); err != nil || got != want(first) {
		t.Fatalf("first request: %q, %v; want %q", got, err, want(first))
	}
	type answer struct {
		body string
		err  error
	}
	inFlight := make(chan answer, 1)
	go func() { b, err := get("/hold"); inFlight <- answer{b, err} }()
	<-held // the connection has a request in flight from now on
	renewed := ca.Client(t, hour, "spiffe://idgen.test/svc/orders")
	writePair(t, auth.Edge{CertFile: f.Cert, KeyFile: f.Key}, renewed)
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return ct.Certificate().Leaf.SerialNumber.Cmp(leaf(t, renewed).SerialNumber) == 0, "the renewed certificate is not loaded"
	})
	if got, err := get("/"); err != nil || got != want(renewed) {
		t.Errorf("the request after the reload, with the old connection busy: %q, %v; want %q", got, err, want(renewed))
	}
	close(release)
	if a := <-inFlight; a.err != nil || a.body != want(first) {
		t.Errorf("the request in flight across the reload: %q, %v; want it answered on its connection (%q)", a.body, a.err, want(first))
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// reloads returns idgen_tls_reloads_total{kind,outcome} of reg: 0 before the first.
func reloads(t *testing.T, reg *prometheus.Registry, kind, outcome string) float64 {
	t.Helper()
	return testenv.Gather(t, reg).Sum("idgen_tls_reloads_total", testenv.Labels{"kind": kind, "outcome": outcome})
}
