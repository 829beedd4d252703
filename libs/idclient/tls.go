package idclient

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/prometheus/client_golang/prometheus"
)

// TLSFiles are where a client's mutual-TLS material lives, PEM files: the certificate whose URI
// SAN names the caller (spiffe://<trust-domain>/svc/<name>), its key, and the CA bundle that
// verifies the generators' certificates. New refuses a certificate that is expired or not yet
// valid, or a key that is not the certificate's. Until Close, the files are re-read when their
// folder changes (certificate agents rename new files into place), every ReloadEvery, and on
// SIGHUP when asked: a good new certificate or bundle is used from the next call, on a new
// connection (calls in flight finish on theirs); a bad one is refused, logged and counted
// (idgen_tls_reloads_total{kind="client"|"server_ca"}), and the one in use stays.
// idgen_tls_certificate_expiry_timestamp_seconds{kind="client"} is the certificate's expiry
// (Collectors).
type TLSFiles struct {
	Cert, Key string
	// CA verifies the generators. Empty: the system's roots.
	CA string
	// ReloadEvery is the period of the re-read that catches what the folder watch misses.
	// Default: 30 s.
	ReloadEvery time.Duration
	// SIGHUP re-reads the files when the process gets SIGHUP, which then no longer ends it: for
	// an application that does not handle SIGHUP otherwise.
	SIGHUP bool
}

// openTLS reads cfg.TLS, when set, and puts its transport in cfg.HTTPClient.
func openTLS(cfg *Config) (*auth.ClientTLS, error) {
	f := cfg.TLS
	if f == nil {
		return nil, nil
	}
	if cfg.HTTPClient != nil {
		return nil, errors.New("idclient: TLS and HTTPClient exclude each other: TLS builds the HTTP client")
	}
	ct, err := auth.NewClientTLS(auth.ClientFiles{Cert: f.Cert, Key: f.Key, CA: f.CA},
		auth.Reload{Every: f.ReloadEvery, SIGHUP: f.SIGHUP, Log: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("idclient: %w", err)
	}
	cfg.HTTPClient = &http.Client{Transport: ct.Transport()}
	return ct, nil
}

func (c *Client) tlsCollectors() []prometheus.Collector {
	if c.tls == nil {
		return nil
	}
	return c.tls.Collectors()
}

// ClientCertificateSerial returns the serial number of the client certificate in use, in
// decimal ("" without TLS).
func (c *Client) ClientCertificateSerial() string {
	if c.tls == nil {
		return ""
	}
	return c.tls.Certificate().Leaf.SerialNumber.String()
}
