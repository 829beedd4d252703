package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
)

func publicIDTLS(t *testing.T) testenv.TLSService {
	t.Helper()
	return testenv.TLSService{
		Bin: publicIDBin(t),
		Args: func(listen string, f testenv.TLSFiles) []string {
			return []string{"--listen", listen, "--store", "sqlite:" + filepath.Join(f.Dir, "public-ids.db"), "--drain", "1s",
				"--tls-cert", f.Cert, "--tls-key", f.Key, "--client-ca", f.ClientCA, "--callers", f.Callers}
		},
		Probe: func(c *http.Client, base string) (int, error) {
			resp, err := c.Post(base+"/v1/public-ids", "application/json", strings.NewReader(`{"internal_id": "1234567"}`))
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		},
		Allowed: http.StatusOK,
		Refused: func(t *testing.T, f testenv.TLSFiles) {
			if _, err := os.Stat(filepath.Join(f.Dir, "public-ids.db")); err == nil {
				t.Errorf("the public-ID service opened its store before refusing its certificate")
			}
		},
	}
}

// TestTLSReload: a public-ID process serves a certificate renewed on disk within its reload
// interval, refuses bad renewals while serving the previous pair, admits an added CA's and an
// added caller's requests, survives SIGHUP, and answers /healthz 503 once its certificate
// expires: the same process throughout.
func TestTLSReload(t *testing.T) {
	r := testenv.CheckTLSReload(t, publicIDTLS(t))
	t.Log(r)
}

// TestTLSDistrust: a CA taken out of the public-ID service's client CA bundle reaches the
// keep-alive connections its callers already have open: refused from their next request and
// closed within a second, while the other CA's callers are served on; a client certificate that
// expires on an open connection is refused on it the same way.
func TestTLSDistrust(t *testing.T) {
	r := testenv.CheckTLSDistrust(t, publicIDTLS(t))
	t.Log(r)
}

// TestTLSStartRefused: a public-ID service started on an expired or not yet valid certificate
// exits non-zero, saying why, before it opens its store.
func TestTLSStartRefused(t *testing.T) { testenv.CheckTLSStartRefused(t, publicIDTLS(t)) }
