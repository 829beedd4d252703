package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/idcore/region"
)

// registryTimeout bounds the registry call that names regions: decoding an ID during an incident
// must not wait on a registry that does not answer.
const registryTimeout = 2 * time.Second

// regionNames maps region numbers to names, from the registry when it answers, else from the
// built-in list (region.Defaults).
type regionNames struct {
	list     []region.Region
	registry bool   // the list came from the registry
	source   string // "from the registry at URL" or "built-in list: the registry did not answer"
}

// names reads the regions from the registry (GET /v1/regions, registryTimeout), or falls back to
// the built-in list.
func (o *opts) names(ctx context.Context) regionNames {
	list, err := o.fetchRegions(ctx)
	if err != nil {
		return regionNames{list: region.Defaults(), source: "built-in list: the registry did not answer"}
	}
	return regionNames{list: list, registry: true, source: "from the registry at " + o.registry}
}

func (o *opts) fetchRegions(ctx context.Context) ([]region.Region, error) {
	hc, err := o.httpClient()
	if err != nil {
		return nil, err
	}
	hc.Timeout = registryTimeout
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(o.registry, "/")+"/v1/regions", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("registry %s: HTTP %d", o.registry, resp.StatusCode)
	}
	var doc struct {
		Regions []region.Region `json:"regions"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("registry %s: %w", o.registry, err)
	}
	if len(doc.Regions) == 0 {
		return nil, fmt.Errorf("registry %s: no regions", o.registry)
	}
	return doc.Regions, nil
}

// unassigned is the name shown for a number no region has.
const unassigned = "unassigned"

// name returns the region's name, or "unassigned".
func (rn regionNames) name(n int) string {
	if r, ok := region.ByNumber(rn.list, n); ok {
		return r.Name
	}
	return unassigned
}

// describe returns "eu-west-1 (2, from the registry at URL)", with "retired" for a retired region.
func (rn regionNames) describe(n int) string {
	r, ok := region.ByNumber(rn.list, n)
	if !ok {
		return fmt.Sprintf("%s (%d, %s)", unassigned, n, rn.source)
	}
	if r.Status == region.Retired {
		return fmt.Sprintf("%s (%d, retired, %s)", r.Name, n, rn.source)
	}
	return fmt.Sprintf("%s (%d, %s)", r.Name, n, rn.source)
}

// sourceWord is the JSON form of the source: "registry" or "built-in".
func (rn regionNames) sourceWord() string {
	if rn.registry {
		return "registry"
	}
	return "built-in"
}

var regionKey = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+=`)

// forRegion reads a flag that holds either values for every region (comma-separated) or
// REGION=VALUE pairs ("us-east-1=dynamodb:http://127.0.0.1:8000,eu-west-1=dynamodb:http://…"),
// and returns the values for region. perRegion says whether the flag was in the pair form.
func forRegion(v, regionName string) (vals []string, perRegion bool) {
	if v == "" {
		return nil, false
	}
	parts := strings.Split(v, ",")
	for _, p := range parts {
		if !regionKey.MatchString(p) {
			return parts, false
		}
	}
	for _, p := range parts {
		k, val, _ := strings.Cut(p, "=")
		if k == regionName {
			vals = append(vals, val)
		}
	}
	return vals, true
}
