package dashboards_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/idgen/idgen/libs/localstack"
	"github.com/idgen/idgen/libs/testenv"
)

// tlsGenerator is gen-t, a generator of region with mutual TLS, its certificate and CA an hour
// from expiry (the certificate alerts fire on it), scraped on its plaintext health listener as
// Prometheus scrapes production generators.
func tlsGenerator(t *testing.T, dir, region string) localstack.Generator {
	t.Helper()
	ca := testenv.NewCA(t, "services CA")
	certFile, keyFile := testenv.WritePEM(t, dir, "gen-t", ca.Server(t))
	caFile, callersFile := filepath.Join(dir, "gen-t-ca.pem"), filepath.Join(dir, "gen-t-callers.json")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(callersFile, []byte(`{"trust_domain": "idgen.test", "callers": [{"name": "orders"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return localstack.Generator{Name: "gen-t", Region: region, LeaseStore: "sqlite:" + filepath.Join(dir, "leases-tls.db"), MTLS: true,
		Args: []string{"--tls-cert", certFile, "--tls-key", keyFile, "--client-ca", caFile, "--callers", callersFile}}
}
