package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/svc/auth"
)

// registryClient is how the generator reads an https:// registry: with its own certificate (the
// registry, like every service, admits callers by mutual TLS) and trusting the CA of its edge,
// which issues the services' certificates. Both are re-read like the edge's (the returned
// ClientTLS, while it runs), so a renewal reaches the registry's connections too. Without TLS
// settings (development), the default client.
func registryClient(e auth.Edge, log *slog.Logger) (*http.Client, *auth.ClientTLS, error) {
	if e.CertFile == "" || e.KeyFile == "" {
		return http.DefaultClient, nil, nil
	}
	ct, err := auth.NewClientTLS(auth.ClientFiles{Cert: e.CertFile, Key: e.KeyFile, CA: e.ClientCA},
		auth.Reload{Every: e.ReloadEvery, Log: log.With("use", "registry client")})
	if err != nil {
		return nil, nil, fmt.Errorf("generator: registry client: %w", err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: ct.Transport()}, ct, nil
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
