package idclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ClientConfig is the topology's client_config output (infra/terraform/modules/topology): per
// region name, the endpoints that region's callers use, in order: the region's own, then its
// peer's. It is the JSON that `terraform output -json client_config` prints, and the file the
// local stack writes from the same module's plan:
//
//	{"eu-west-1": {"endpoints": ["https://idgen.eu-west-1.idgen.internal:443", "https://idgen.us-east-1.idgen.internal:443"]}, …}
//
// A caller is configured from its region's entry (ConfigFor), never from a list of its own, so the
// peer it fails over to is the one the regions are laid out with.
type ClientConfig map[string]RegionEndpoints

// RegionEndpoints is one region's entry of a ClientConfig.
type RegionEndpoints struct {
	// Endpoints: the region's own first, then its peer's.
	Endpoints []string `json:"endpoints"`
}

// ErrNoRegion is returned by ConfigFor for a region the client config does not name.
var ErrNoRegion = errors.New("idclient: region not in the client config")

// ParseClientConfig reads a client config and checks it: every region has its own endpoint and
// its peer's (two, different), each an http or https URL with a host, and no other fields.
func ParseClientConfig(b []byte) (ClientConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var cc ClientConfig
	if err := dec.Decode(&cc); err != nil {
		return nil, fmt.Errorf("idclient: client config: %w (want the JSON of `terraform output -json client_config`)", err)
	}
	if len(cc) == 0 {
		return nil, errors.New("idclient: client config: no regions")
	}
	for _, name := range cc.Regions() {
		eps := cc[name].Endpoints
		if len(eps) != 2 {
			return nil, fmt.Errorf("idclient: client config: region %s has %d endpoints, want 2 (its own, then its peer's)", name, len(eps))
		}
		if eps[0] == eps[1] {
			return nil, fmt.Errorf("idclient: client config: region %s has its own endpoint %s as its peer's too", name, eps[0])
		}
		for _, ep := range eps {
			u, err := url.Parse(ep)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("idclient: client config: region %s: endpoint %q is not an http(s) URL", name, ep)
			}
		}
	}
	return cc, nil
}

// ReadClientConfig reads and checks a client config file (ParseClientConfig).
func ReadClientConfig(path string) (ClientConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("idclient: %w", err)
	}
	cc, err := ParseClientConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return cc, nil
}

// Regions returns the region names, sorted.
func (cc ClientConfig) Regions() []string {
	names := make([]string, 0, len(cc))
	for name := range cc {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// ConfigFor returns base with the endpoints of region's callers (its own, then its peer's): the
// Config of a caller in that region. It fails, naming the regions there are, when region is not
// in cc, and when base already lists endpoints: a caller takes them from the topology only.
func (cc ClientConfig) ConfigFor(region string, base Config) (Config, error) {
	if len(base.Endpoints) > 0 {
		return Config{}, fmt.Errorf("idclient: endpoints given by hand (%s) and from the client config: take them from the client config only",
			strings.Join(base.Endpoints, ", "))
	}
	e, ok := cc[region]
	if !ok {
		return Config{}, fmt.Errorf("%w: %q (it has %s)", ErrNoRegion, region, strings.Join(cc.Regions(), ", "))
	}
	base.Endpoints = slices.Clone(e.Endpoints)
	return base, nil
}

// WriteFile writes cc to path as JSON, whole (a new file renamed into place), so a reader never
// sees half of it.
func (cc ClientConfig) WriteFile(path string) error {
	b, err := json.MarshalIndent(cc, "", "  ")
	if err != nil {
		return err
	}
	if _, err := ParseClientConfig(b); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".client-config-*")
	if err != nil {
		return fmt.Errorf("idclient: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("idclient: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("idclient: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("idclient: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}
