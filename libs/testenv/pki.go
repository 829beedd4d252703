package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority made for one test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte
}

// NewCA makes a CA valid for an hour either side of now.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

var serial atomic.Int64

// Server issues a server certificate for 127.0.0.1.
func (c *CA) Server(t testing.TB) tls.Certificate {
	return c.issue(t, true, nil, time.Now().Add(time.Hour))
}

// ServerValid issues a server certificate for 127.0.0.1 valid from notBefore to notAfter (an
// expired one, or one not valid yet).
func (c *CA) ServerValid(t testing.TB, notBefore, notAfter time.Time) tls.Certificate {
	return c.issueValid(t, true, nil, notBefore, notAfter)
}

// Client issues a client certificate with the given URI SANs, valid until notAfter.
func (c *CA) Client(t testing.TB, notAfter time.Time, uris ...string) tls.Certificate {
	return c.issue(t, false, uris, notAfter)
}

func (c *CA) issue(t testing.TB, server bool, uris []string, notAfter time.Time) tls.Certificate {
	t.Helper()
	return c.issueValid(t, server, uris, time.Now().Add(-2*time.Hour), notAfter)
}

func (c *CA) issueValid(t testing.TB, server bool, uris []string, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1) + 10), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
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
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// WritePEM writes a certificate and its key to dir as name.crt and name.key.
func WritePEM(t testing.TB, dir, name string, cert tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	certPEM, keyPEM := EncodePEM(t, cert)
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// EncodePEM returns a certificate and its key as PEM.
func EncodePEM(t testing.TB, cert tls.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	kb, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// RenameInto replaces path with data the way certificate agents do: written to a new file in
// the same folder, then renamed over path, so a reader sees the old file or the new one whole.
func RenameInto(t testing.TB, path string, data []byte) {
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

// ServedCertificate completes a TLS handshake with addr, presenting client (when not nil) and
// verifying nothing, and returns the certificate the server presented.
func ServedCertificate(addr string, client *tls.Certificate) (*x509.Certificate, error) {
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} // it only reads what is served
	if client != nil {
		cfg.Certificates = []tls.Certificate{*client}
	}
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// HTTPSClient returns a client trusting ca, presenting cert when not nil.
func (c *CA) HTTPSClient(cert *tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(c.Cert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
}
