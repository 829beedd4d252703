package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/testenv"
)

// TestRegistryOverMutualTLS: a registry that admits only callers with a certificate from the
// services' CA answers the generator, which presents its own certificate.
func TestRegistryOverMutualTLS(t *testing.T) {
	ca := testenv.NewCA(t, "services")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	reg := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"regions":[{"name":"eu-west-1","number":2,"peer":"us-east-1","status":"active"}]}`)
	}))
	reg.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	reg.StartTLS()
	defer reg.Close()
	dir := t.TempDir()
	certFile, keyFile := testenv.WritePEM(t, dir, "generator", ca.Client(t, time.Now().Add(time.Hour), "spiffe://idgen.test/svc/generator"))
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadRegions(context.Background(), reg.URL, http.DefaultClient); err == nil {
		t.Fatal("a client without a certificate was admitted: the test's registry is not what it claims")
	}
	client, _, err := registryClient(auth.Edge{CertFile: certFile, KeyFile: keyFile, ClientCA: caFile}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	regions, err := loadRegions(context.Background(), reg.URL, client)
	if err != nil || len(regions) != 1 || regions[0].Number != 2 {
		t.Fatalf("regions %v, %v", regions, err)
	}
}
