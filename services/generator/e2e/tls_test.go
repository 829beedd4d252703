package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// generatorTLS is the generator with mutual TLS, its lease store in the files' folder.
var generatorTLS = testenv.TLSService{
	Args: func(listen string, f testenv.TLSFiles) []string {
		return cmdline.Generator{TLS: true, Listen: listen, LeaseStore: "sqlite:" + filepath.Join(f.Dir, "leases.db"),
			Lease: "3s", Renew: "500ms", FenceMargin: "500ms", Drain: "1s",
			Extra: []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--client-ca", f.ClientCA, "--callers", f.Callers}}.Args()
	},
	Probe: func(c *http.Client, base string) (int, error) {
		resp, err := c.Post(base+"/v1/ids", "application/json", strings.NewReader("{}"))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	},
	Allowed: http.StatusOK,
	Refused: func(t *testing.T, f testenv.TLSFiles) {
		// Refused before the lease store is opened: no machine number was claimed.
		if _, err := os.Stat(filepath.Join(f.Dir, "leases.db")); err == nil {
			t.Errorf("the generator opened its lease store before refusing its certificate")
		}
	},
}

// TestTLSReload: a generator process serves a certificate renewed on disk within its reload
// interval, refuses bad renewals while serving the previous pair, admits an added CA's and an
// added caller's requests, survives SIGHUP, and answers /healthz 503 once its certificate
// expires: the same process throughout.
func TestTLSReload(t *testing.T) {
	svc := generatorTLS
	svc.Bin = generatorBin(t)
	r := testenv.CheckTLSReload(t, svc)
	t.Log(r)
}

// TestTLSDistrust: a CA taken out of the generator's client CA bundle reaches the keep-alive
// connections its callers already have open (HTTP/1.1, HTTP/2, gRPC, idle, a health Watch
// stream): refused from their next request and closed within a second, while the other CA's
// callers are served on; a client certificate that expires on an open connection is refused on
// it the same way.
func TestTLSDistrust(t *testing.T) {
	svc := generatorTLS
	svc.Bin = generatorBin(t)
	r := testenv.CheckTLSDistrust(t, svc)
	t.Log(r)
}

// TestTLSStartRefused: a generator started on an expired or not yet valid certificate exits
// non-zero, saying why, without claiming a machine number.
func TestTLSStartRefused(t *testing.T) {
	svc := generatorTLS
	svc.Bin = generatorBin(t)
	testenv.CheckTLSStartRefused(t, svc)
}

// TestClientCertificateReload: a client (libs/idclient) taking IDs from a generator process over
// mutual TLS presents the certificate renamed into place from its next connection, without a
// restart: the generator counts the IDs under the new certificate's identity. An expired renewal
// is refused and counted by the client, which goes on with the certificate in use.
func TestClientCertificateReload(t *testing.T) {
	dir := t.TempDir()
	ca := testenv.NewCA(t, "services CA")
	f := ca.EdgeFiles(t, dir, `{"trust_domain": "idgen.test", "callers": [{"name": "orders"}, {"name": "billing"}, {"name": "prometheus", "scraper": true}]}`)
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	hour := time.Now().Add(time.Hour)
	scraper := ca.Client(t, hour, "spiffe://idgen.test/svc/prometheus")
	served := func(caller string) float64 {
		c := ca.HTTPSClient(&scraper)
		defer c.CloseIdleConnections()
		m, err := testenv.ScrapeErr(c, "https://"+addr+"/metrics")
		if err != nil {
			return -1
		}
		if v, ok := m.Value("idgen_server_ids_served_total", testenv.Labels{"caller": caller}); ok {
			return v
		}
		return -1
	}
	proc.StartT(t, proc.Spec{Bin: generatorBin(t), Args: generatorTLS.Args(addr, f), Health: func(context.Context) error {
		if served("orders") != 0 {
			return errors.New("the generator does not answer its scraper yet")
		}
		return nil
	}})

	cdir := t.TempDir()
	cf := idclient.TLSFiles{Cert: filepath.Join(cdir, "client.crt"), Key: filepath.Join(cdir, "client.key"), CA: filepath.Join(cdir, "ca.pem"), ReloadEvery: time.Second}
	writeClient := func(cert tls.Certificate) {
		c, k := testenv.EncodePEM(t, cert)
		testenv.RenameInto(t, cf.Key, k)
		testenv.RenameInto(t, cf.Cert, c)
	}
	writeClient(ca.Client(t, hour, "spiffe://idgen.test/svc/orders"))
	testenv.RenameInto(t, cf.CA, ca.PEM)
	cl, err := idclient.New(idclient.Config{Endpoints: []string{"https://" + addr}, TLS: &cf, Batch: 10, LowWater: 5, HedgeAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cl.Collectors()...)
	next := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := cl.Next(ctx); err != nil {
			t.Fatalf("Next: %v", err)
		}
	}
	for range 20 {
		next()
	}
	if served("orders") < 10 {
		t.Fatalf("the generator counted %v IDs for orders", served("orders"))
	}

	billing := ca.Client(t, hour, "spiffe://idgen.test/svc/billing")
	began := time.Now()
	writeClient(billing)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		next()
		return served("billing") > 0, fmt.Sprintf("no IDs for billing yet (orders %v)", served("orders"))
	})
	took := time.Since(began)
	t.Logf("the renewed client certificate reached the generator %v after its rename", took.Round(time.Millisecond))
	if took > cf.ReloadEvery {
		t.Errorf("the client took %v to present the renewal, more than its reload interval %v", took, cf.ReloadEvery)
	}
	billingLeaf, _ := x509.ParseCertificate(billing.Certificate[0])
	if got := cl.ClientCertificateSerial(); got != billingLeaf.SerialNumber.String() {
		t.Errorf("client certificate serial %s, want the renewal's %s", got, billingLeaf.SerialNumber)
	}

	writeClient(ca.Client(t, time.Now().Add(-time.Minute), "spiffe://idgen.test/svc/orders"))
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return clientReloads(t, reg, "error") >= 1, "the expired client certificate is not counted"
	})
	before := served("billing")
	for range 30 {
		next()
	}
	if after := served("billing"); after <= before {
		t.Errorf("after the expired renewal the IDs are not billing's any more: %v then %v", before, after)
	}
	if got := cl.ClientCertificateSerial(); got != billingLeaf.SerialNumber.String() {
		t.Errorf("after an expired renewal the client uses serial %s, want %s", got, billingLeaf.SerialNumber)
	}
}

// clientReloads returns the client's idgen_tls_reloads_total{kind="client",outcome}: 0 before the first.
func clientReloads(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	return testenv.Gather(t, reg).Sum("idgen_tls_reloads_total", testenv.Labels{"kind": "client", "outcome": outcome})
}
