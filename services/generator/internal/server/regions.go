package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/svc/auth"
)

// registryClient is how the generator reads an https:// registry: with its own certificate (the
// registry, like every service, admits callers by mutual TLS) and trusting the CA of its edge,
// which issues the services' certificates. Without TLS settings (development), the default client.
func registryClient(e auth.Edge) (*http.Client, error) {
	if e.CertFile == "" || e.KeyFile == "" {
		return http.DefaultClient, nil
	}
	cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("generator: registry client certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if e.ClientCA != "" {
		if cfg.RootCAs, err = auth.CertPool(e.ClientCA); err != nil {
			return nil, fmt.Errorf("generator: registry CA: %w", err)
		}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}, nil
}

// loadRegions reads the regions once at start-up (never on the request path): from a registry
// URL (GET /v1/regions), a local registry file (the same JSON), or the built-in defaults.
func loadRegions(ctx context.Context, src string, client *http.Client) ([]region.Region, error) {
	var body []byte
	switch {
	case src == "":
		return region.Defaults(), nil
	case strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://"):
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(src, "/")+"/v1/regions", nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("generator: registry %s: %w", src, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("generator: registry %s: %s", src, resp.Status)
		}
		if body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20)); err != nil {
			return nil, err
		}
	default:
		var err error
		if body, err = os.ReadFile(src); err != nil {
			return nil, fmt.Errorf("generator: registry file: %w", err)
		}
	}
	var doc struct {
		Regions []region.Region `json:"regions"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("generator: registry %s: %w", src, err)
	}
	if len(doc.Regions) == 0 {
		return nil, fmt.Errorf("generator: registry %s lists no regions", src)
	}
	return doc.Regions, nil
}
