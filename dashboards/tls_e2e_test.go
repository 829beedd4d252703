package dashboards_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
)

// tlsGenerator starts a generator of region with mutual TLS, its certificate and CA an hour from
// expiry (the certificate alerts fire on it), scraped on its plaintext health listener as
// Prometheus scrapes production generators.
func tlsGenerator(t *testing.T, dir, bin, registry, region string) *proc {
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
	health := addr(t)
	return start(t, dir, "gen-t", health, bin, "--clock-check", "warn", "--registry", registry, "--region", region,
		"--listen", addr(t), "--health-listen", health, "--lease-store", "sqlite:"+filepath.Join(dir, "leases-tls.db"),
		"--tls-cert", certFile, "--tls-key", keyFile, "--client-ca", caFile, "--callers", callersFile)
}
