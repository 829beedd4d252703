package testenv

import (
	"crypto/tls"
	"path/filepath"
	"testing"
)

// WriteTLSFiles writes the files of a service's mutual-TLS edge to dir, each renamed into place:
// cert and its key (server.crt, server.key), the client CA bundle clientCAs (client-ca.pem) and
// the callers file callers (callers.json). It returns their paths.
func WriteTLSFiles(t testing.TB, dir string, cert tls.Certificate, clientCAs, callers []byte) TLSFiles {
	t.Helper()
	f := TLSFiles{Dir: dir, Cert: filepath.Join(dir, "server.crt"), Key: filepath.Join(dir, "server.key"),
		ClientCA: filepath.Join(dir, "client-ca.pem"), Callers: filepath.Join(dir, "callers.json")}
	certPEM, keyPEM := EncodePEM(t, cert)
	RenameInto(t, f.Key, keyPEM)
	RenameInto(t, f.Cert, certPEM)
	RenameInto(t, f.ClientCA, clientCAs)
	RenameInto(t, f.Callers, callers)
	return f
}

// EdgeFiles writes the common edge of a service to dir (WriteTLSFiles): a server certificate of
// c for 127.0.0.1, c as the only client CA, and callers as the callers file.
func (c *CA) EdgeFiles(t testing.TB, dir, callers string) TLSFiles {
	t.Helper()
	return WriteTLSFiles(t, dir, c.Server(t), c.PEM, []byte(callers))
}
