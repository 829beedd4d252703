// Package e2e runs the registry binary as a real process: its mutual-TLS files re-read while it
// runs, and a start-up on a certificate outside its validity refused.
package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
)

// registryTLS is the registry with mutual TLS, built once for every test binary of the run
// (proc's cache), its store in the files' folder.
func registryTLS(t *testing.T) testenv.TLSService {
	t.Helper()
	return testenv.TLSService{
		Bin: proc.BuildT(t, "../cmd/registry")[0],
		Args: func(listen string, f testenv.TLSFiles) []string {
			return []string{"--listen", listen, "--store", "sqlite:" + filepath.Join(f.Dir, "registry.db"), "--drain", "1s",
				"--tls-cert", f.Cert, "--tls-key", f.Key, "--client-ca", f.ClientCA, "--callers", f.Callers}
		},
		Probe: func(c *http.Client, base string) (int, error) {
			resp, err := c.Get(base + "/v1/regions")
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		},
		Allowed: http.StatusOK,
		Refused: func(t *testing.T, f testenv.TLSFiles) {
			if _, err := os.Stat(filepath.Join(f.Dir, "registry.db")); err == nil {
				t.Errorf("the registry opened its store before refusing its certificate")
			}
		},
	}
}

// TestTLSReload: a registry process serves a certificate renewed on disk within its reload
// interval, refuses bad renewals while serving the previous pair, admits an added CA's and an
// added caller's requests, survives SIGHUP, and answers /healthz 503 once its certificate
// expires: the same process throughout.
func TestTLSReload(t *testing.T) {
	r := testenv.CheckTLSReload(t, registryTLS(t))
	t.Log(r)
}

// TestTLSStartRefused: a registry started on an expired or not yet valid certificate exits
// non-zero, saying why, before it opens its store.
func TestTLSStartRefused(t *testing.T) { testenv.CheckTLSStartRefused(t, registryTLS(t)) }

// TestTLSDistrust: a CA taken out of the registry's client CA bundle reaches the keep-alive
// connections its callers already have open (HTTP/1.1, HTTP/2, gRPC, idle, a health Watch
// stream): refused from their next request and closed within a second, while the other CA's
// callers are served on; a client certificate that expires on an open connection is refused on
// it the same way.
func TestTLSDistrust(t *testing.T) {
	r := testenv.CheckTLSDistrust(t, registryTLS(t))
	t.Log(r)
}
