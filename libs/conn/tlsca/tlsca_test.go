package tlsca_test

import (
	"crypto/x509"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/idgen/idgen/libs/conn/tlsca"
	"github.com/idgen/idgen/libs/testenv"
)

func TestPool(t *testing.T) {
	dir := t.TempDir()
	authority := testenv.NewCA(t, "test CA")
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, authority.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("no certificate here\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	pool, err := tlsca.Pool(ca)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authority.Cert.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Errorf("the CA does not verify itself with the loaded pool: %v", err)
	}
	if _, err := tlsca.Pool(empty); err == nil {
		t.Error("a file with no certificate loaded")
	}
	if _, err := tlsca.Pool(filepath.Join(dir, "missing.pem")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
