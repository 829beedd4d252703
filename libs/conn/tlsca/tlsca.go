// Package tlsca loads the CA certificates that verify a server's (or a client's) certificate.
package tlsca

import (
	"crypto/x509"
	"fmt"
	"os"
)

// Pool reads a PEM file of CA certificates into a pool; a file with none is an error.
func Pool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tlsca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tlsca: %s holds no PEM certificate", file)
	}
	return pool, nil
}
