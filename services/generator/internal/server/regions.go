package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/idcore/region"
)

// loadRegions reads the regions once at start-up (never on the request path): from a registry
// URL (GET /v1/regions), a local registry file (the same JSON), or the built-in defaults.
func loadRegions(ctx context.Context, src string) ([]region.Region, error) {
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
		resp, err := http.DefaultClient.Do(req)
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
