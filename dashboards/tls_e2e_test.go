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
	edge := filepath.Join(dir, "gen-t")
	if err := os.MkdirAll(edge, 0o755); err != nil {
		t.Fatal(err)
	}
	f := testenv.NewCA(t, "services CA").EdgeFiles(t, edge, `{"trust_domain": "idgen.test", "callers": [{"name": "orders"}]}`)
	return localstack.Generator{Name: "gen-t", Region: region, LeaseStore: "sqlite:" + filepath.Join(dir, "leases-tls.db"), MTLS: true,
		Args: []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--client-ca", f.ClientCA, "--callers", f.Callers}}
}
