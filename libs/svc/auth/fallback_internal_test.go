package auth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The package's own tests make their certificates with the standard library: libs/svc does not
// require libs/testenv, whose fixtures require libs/svc (through libs/localstack). The tests
// that need only the exported API are in libs/svc/e2e/auth, on libs/testenv.

// testCA is a certificate authority made for one test, valid for an hour either side of now.
type testCA struct {
	Cert *x509.Certificate
	PEM  []byte
	key  *ecdsa.PrivateKey
}

var testSerial atomic.Int64

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}
}

// Server issues a server certificate for 127.0.0.1, valid for an hour.
func (c *testCA) Server(t testing.TB) tls.Certificate {
	return c.issue(t, x509.ExtKeyUsageServerAuth, time.Now().Add(time.Hour), nil)
}

// Client issues a client certificate with the URI SANs uris, valid until notAfter.
func (c *testCA) Client(t testing.TB, notAfter time.Time, uris ...string) tls.Certificate {
	return c.issue(t, x509.ExtKeyUsageClientAuth, notAfter, uris)
}

func (c *testCA) issue(t testing.TB, usage x509.ExtKeyUsage, notAfter time.Time, uris []string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(testSerial.Add(1) + 10), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.Cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// renameInto replaces path with data as certificate agents do: a new file in the same folder,
// renamed over path.
func renameInto(t testing.TB, path string, data []byte) {
	t.Helper()
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		t.Fatal(err)
	}
}

// writePair renames cert and its key into place as certFile and keyFile.
func writePair(t testing.TB, certFile, keyFile string, cert tls.Certificate) {
	t.Helper()
	kb, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	renameInto(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
	renameInto(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}))
}

// waitFor checks cond every 10 ms until it holds, and fails the test with cond's last status
// when timeout passes first.
func waitFor(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, status := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reloadCount is idgen_tls_reloads_total{kind,outcome} of reg: 0 before the first.
func reloadCount(t testing.TB, reg *prometheus.Registry, kind, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "idgen_tls_reloads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["outcome"] == outcome {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// syncBuffer is a log output the test reads while the gate writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestGatePeriodicReread: with no watch, the periodic re-read alone finds a renewal within its
// period, and reports a bad file once however many periods pass.
func TestGatePeriodicReread(t *testing.T) {
	const every = 200 * time.Millisecond
	dir := t.TempDir()
	ca := newTestCA(t, "CA")
	e := Edge{CertFile: filepath.Join(dir, "server.crt"), KeyFile: filepath.Join(dir, "server.key"),
		ClientCA: filepath.Join(dir, "client-ca.pem"), CallersFile: filepath.Join(dir, "callers.json"), ReloadEvery: every}
	writePair(t, e.CertFile, e.KeyFile, ca.Server(t))
	renameInto(t, e.ClientCA, ca.PEM)
	renameInto(t, e.CallersFile, []byte(`{"trust_domain": "idgen.test", "callers": [{"name": "orders"}]}`))
	reg, log := prometheus.NewRegistry(), &syncBuffer{}
	gate, err := Setup(e, slog.New(slog.NewJSONHandler(log, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	gate.w.opt.noWatch = true // the periodic re-read alone
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { gate.Run(ctx); close(done) }()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = gate.TLS
	srv.StartTLS()
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	orders := ca.Client(t, time.Now().Add(time.Hour), "spiffe://idgen.test/svc/orders")
	served := func() *x509.Certificate {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", srv.Listener.Addr().String(),
			&tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{orders}, MinVersion: tls.VersionTLS12}) // it only reads what is served
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}

	renewed := ca.Server(t)
	began := time.Now()
	writePair(t, e.CertFile, e.KeyFile, renewed)
	waitFor(t, 5*time.Second, func() (bool, string) {
		return served().SerialNumber.Cmp(renewed.Leaf.SerialNumber) == 0, "the renewal is not served"
	})
	took := time.Since(began)
	t.Logf("renewal served %v after its rename (periodic re-read every %v)", took.Round(time.Millisecond), every)
	if took > every+500*time.Millisecond {
		t.Errorf("the periodic re-read took %v, its period is %v", took, every)
	}
	renameInto(t, e.KeyFile, []byte("not a key"))
	waitFor(t, 5*time.Second, func() (bool, string) {
		return reloadCount(t, reg, "server", "error") == 1, "the bad key is not counted"
	})
	time.Sleep(3 * every) // three more periods re-read the same bad file
	if n := reloadCount(t, reg, "server", "error"); n != 1 {
		t.Errorf("the same bad file counted %v times over several periods, want once", n)
	}
	if n := strings.Count(log.String(), "TLS reload refused"); n != 1 {
		t.Errorf("the same bad file logged %d times, want once", n)
	}
}

// A transport nothing uses any more is not kept for the reloads.
func TestClientTLSDropsUnusedTransports(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "CA")
	f := ClientFiles{Cert: filepath.Join(dir, "client.crt"), Key: filepath.Join(dir, "client.key"), CA: filepath.Join(dir, "ca.pem")}
	writePair(t, f.Cert, f.Key, ca.Client(t, time.Now().Add(time.Hour), "spiffe://idgen.test/svc/orders"))
	renameInto(t, f.CA, ca.PEM)
	ct, err := NewClientTLS(f, Reload{Every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	kept := ct.Transport()
	for range 100 {
		_ = ct.Transport()
	}
	runtime.GC()
	ct.mu.Lock()
	ct.transports = ct.live()
	held := len(ct.transports)
	ct.mu.Unlock()
	if held != 1 {
		t.Errorf("%d transports held after 100 were dropped, want the 1 in use", held)
	}
	runtime.KeepAlive(kept)
}
