package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// ErrValidity is what errors.Is finds in the error of a certificate that is expired or not yet
// valid.
var ErrValidity = errors.New("auth: certificate outside its validity period")

type validityError string

func (e validityError) Error() string      { return string(e) }
func (validityError) Is(target error) bool { return target == ErrValidity }

// CheckValidity returns an error (errors.Is ErrValidity) saying when, when cert is expired or
// not yet valid at now.
func CheckValidity(cert *x509.Certificate, now time.Time) error {
	switch {
	case now.Before(cert.NotBefore):
		return validityError(fmt.Sprintf("not valid before %s (it is %s)",
			cert.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	case !now.Before(cert.NotAfter):
		return validityError(fmt.Sprintf("expired at %s (it is %s)",
			cert.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	return nil
}

// ParseKeyPair parses a PEM certificate (with any intermediates after it) and its PEM key, and
// checks that the key is the certificate's and that the certificate is valid at now. The
// result's Leaf is set.
func ParseKeyPair(certPEM, keyPEM []byte, now time.Time) (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, err
		}
	}
	if err := CheckValidity(pair.Leaf, now); err != nil {
		return nil, err
	}
	return &pair, nil
}

// CABundle is a parsed CA bundle.
type CABundle struct {
	Pool  *x509.CertPool
	Certs []*x509.Certificate
	// Expiry is the earliest NotAfter of the bundle's certificates: when the first of them stops
	// verifying anything.
	Expiry time.Time
}

// ParseCABundle parses a PEM bundle of CA certificates. Every PEM block must be a certificate
// that parses, and at least one must be valid at now (a bundle of only expired or future CAs
// verifies nobody). Expired or not yet valid ones among valid ones stay in the pool, where they
// verify nothing outside their validity, and count in Expiry.
func ParseCABundle(b []byte, now time.Time) (*CABundle, error) {
	out := &CABundle{Pool: x509.NewCertPool()}
	var validErr error
	valid := 0
	for n := 1; ; n++ {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is a %s, not a CERTIFICATE", n, block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n, err)
		}
		if err := CheckValidity(c, now); err != nil {
			validErr = fmt.Errorf("certificate %d (%s): %w", n, c.Subject, err)
		} else {
			valid++
		}
		out.Pool.AddCert(c)
		out.Certs = append(out.Certs, c)
		if out.Expiry.IsZero() || c.NotAfter.Before(out.Expiry) {
			out.Expiry = c.NotAfter
		}
	}
	switch {
	case len(out.Certs) == 0:
		return nil, errors.New("no PEM certificate")
	case valid == 0:
		return nil, fmt.Errorf("no certificate of the bundle is valid now: %w", validErr)
	}
	return out, nil
}
