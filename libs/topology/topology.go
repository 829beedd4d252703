// Package topology plans the topology module (infra/terraform/modules/topology) with Terraform
// and returns what it lays out: the regions with their numbers, peers and endpoints, the home
// region, and client_config, the endpoints each region's callers use (libs/idclient). The module
// has no provider, so the plan runs offline, anywhere the pinned Terraform does; the result is
// cached by the module's files, the variables and Terraform's version, so planning again the
// same module costs a file read.
//
// The local stack and the game day (tools/gameday) configure their callers from this plan, so a
// caller's peer there is the one Terraform lays out in production, never a second list. Local
// endpoints are loopback addresses, not the module's names: Localize keeps the plan's order and
// peers and puts each region's local address in place of its endpoint, and
// localstack.WriteClientConfig (libs/localstack) writes the result for the callers.
package topology

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/idgen/idgen/libs/idclient"
)

// TerraformVersion is the Terraform the project pins (.tools/bin/terraform from make setup).
const TerraformVersion = "1.5.7"

// FindTerraform returns the pinned Terraform: root's .tools/bin/terraform when root is given and
// has one, else terraform on PATH (CheckVersion tells whether it is the pinned one).
func FindTerraform(root string) (string, error) {
	if root != "" {
		if p := filepath.Join(root, ".tools", "bin", "terraform"); fileExists(p) {
			return filepath.Abs(p)
		}
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		return "", fmt.Errorf("no terraform: run make setup (it installs Terraform %s)", TerraformVersion)
	}
	return p, nil
}

// CheckVersion refuses a Terraform other than TerraformVersion.
func CheckVersion(ctx context.Context, tf *tfexec.Terraform) error {
	v, _, err := tf.Version(ctx, true)
	if err != nil {
		return fmt.Errorf("terraform version: %w", err)
	}
	if v.String() != TerraformVersion {
		return fmt.Errorf("%s is Terraform %s; the project pins %s (make setup installs it)", tf.ExecPath(), v, TerraformVersion)
	}
	return nil
}

// Region is one region of the plan's regions output.
type Region struct {
	Number     int    `json:"number"`
	Peer       string `json:"peer"`
	PeerNumber int    `json:"peer_number"`
	Endpoint   string `json:"endpoint"`
}

// Topology is what a plan of the topology module yields.
type Topology struct {
	Regions      map[string]Region     `json:"regions"`
	ClientConfig idclient.ClientConfig `json:"client_config"`
	HomeRegion   string                `json:"home_region"`
	RegistryURL  string                `json:"registry_url"`
}

// Options says what to plan. Zero values take the defaults in the comments.
type Options struct {
	// Module is the topology module's folder. Default: infra/terraform/modules/topology of the
	// repository above the working directory.
	Module string
	// Vars are the module's variables, as JSON values (a *.tfvars.json file): for example
	// "regions" as map[string]any{"eu-west-1": map[string]any{"number": 2, "peer": "us-east-1"}}.
	// Default: none (the module's defaults).
	Vars map[string]any
	// Terraform is the binary. Default: .tools/bin/terraform of the repository, else terraform
	// on PATH; it must be TerraformVersion.
	Terraform string
	// CacheDir keeps planned results. Default: .tools/topology of the repository, else the
	// user's cache folder; "-" turns the cache off.
	CacheDir string
	// Log gets Terraform's output. Default: discarded.
	Log io.Writer
}

// ErrPlan is wrapped by the error of a plan Terraform refused (a precondition: a bad number, a
// peer that is not a region, …); the error's text is Terraform's message.
var ErrPlan = errors.New("topology: the plan was refused")

// Plan plans the module and returns its topology, from the cache when the same module, variables
// and Terraform were planned before.
func Plan(ctx context.Context, o Options) (*Topology, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	files, err := moduleFiles(o.Module)
	if err != nil {
		return nil, err
	}
	varsJSON, err := json.Marshal(o.Vars) // map keys sorted: the same vars, the same bytes
	if err != nil {
		return nil, fmt.Errorf("topology: vars: %w", err)
	}
	key := cacheKey(files, varsJSON)
	cached := ""
	if o.CacheDir != "-" {
		cached = filepath.Join(o.CacheDir, key+".json")
		if b, err := os.ReadFile(cached); err == nil {
			var t Topology
			if json.Unmarshal(b, &t) == nil && t.check() == nil {
				return &t, nil
			}
		}
	}
	t, err := plan(ctx, o, files, varsJSON)
	if err != nil {
		return nil, err
	}
	if cached != "" {
		if err := writeWhole(cached, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// ClientConfigFromTopology plans the module at moduleDir ("" for the repository's) with vars
// (nil for its defaults) and returns its client_config.
func ClientConfigFromTopology(ctx context.Context, moduleDir string, vars map[string]any) (idclient.ClientConfig, error) {
	t, err := Plan(ctx, Options{Module: moduleDir, Vars: vars})
	if err != nil {
		return nil, err
	}
	return t.ClientConfig, nil
}

// Localize returns the client config with each endpoint replaced by the local address of the
// region whose endpoint it is (addrs: region name → base URL, such as http://127.0.0.2:7101):
// the order and the peers stay the plan's. Every region of the plan needs an address.
func (t *Topology) Localize(addrs map[string]string) (idclient.ClientConfig, error) {
	byEndpoint := map[string]string{}
	for name, r := range t.Regions {
		byEndpoint[r.Endpoint] = name
	}
	out := idclient.ClientConfig{}
	for name, e := range t.ClientConfig {
		var eps []string
		for _, ep := range e.Endpoints {
			region, ok := byEndpoint[ep]
			if !ok {
				return nil, fmt.Errorf("topology: region %s's endpoint %s is no region's endpoint in the plan", name, ep)
			}
			a, ok := addrs[region]
			if !ok {
				return nil, fmt.Errorf("topology: no local address for region %s (region %s's callers use it)", region, name)
			}
			eps = append(eps, a)
		}
		out[name] = idclient.RegionEndpoints{Endpoints: eps}
	}
	return out, nil
}

// RegionNames returns the plan's region names, sorted.
func (t *Topology) RegionNames() []string {
	var names []string
	for n := range t.Regions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (t *Topology) check() error {
	if len(t.Regions) == 0 || len(t.ClientConfig) != len(t.Regions) {
		return fmt.Errorf("topology: the plan has %d regions and %d client_config entries", len(t.Regions), len(t.ClientConfig))
	}
	b, _ := json.Marshal(t.ClientConfig)
	_, err := idclient.ParseClientConfig(b)
	return err
}

func (o *Options) defaults() error {
	if o.Module == "" {
		root, err := repoRoot(".")
		if err != nil {
			return fmt.Errorf("topology: no module given and %w", err)
		}
		o.Module = filepath.Join(root, "infra", "terraform", "modules", "topology")
	}
	abs, err := filepath.Abs(o.Module)
	if err != nil {
		return err
	}
	o.Module = abs
	root, rootErr := repoRoot(o.Module)
	if o.Terraform == "" {
		if rootErr != nil {
			root = ""
		}
		p, err := FindTerraform(root)
		if err != nil {
			return fmt.Errorf("topology: %w", err)
		}
		o.Terraform = p
	}
	if o.CacheDir == "" {
		if rootErr == nil {
			o.CacheDir = filepath.Join(root, ".tools", "topology")
		} else if d, err := os.UserCacheDir(); err == nil {
			o.CacheDir = filepath.Join(d, "idgen", "topology")
		} else {
			o.CacheDir = "-"
		}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

type file struct {
	name string
	data []byte
}

// moduleFiles reads the module's own files (its folder's, not examples/ or .terraform/).
func moduleFiles(dir string) ([]file, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	var files []file
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".tf") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("topology: %w", err)
		}
		files = append(files, file{e.Name(), b})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("topology: no .tf file in %s", dir)
	}
	return files, nil
}

// cacheKey hashes what decides the plan: the files (sorted by name), the variables and the
// Terraform version the project pins (another version is refused before planning).
func cacheKey(files []file, vars []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "terraform %s\n", TerraformVersion)
	for _, f := range files {
		fmt.Fprintf(h, "%s %d\n", f.name, len(f.data))
		h.Write(f.data)
	}
	fmt.Fprintf(h, "vars %d\n", len(vars))
	h.Write(vars)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// plan copies the module's files to a temporary folder (Terraform's working files stay out of
// the repository), runs init without a backend, plans with the variables and reads the outputs.
func plan(ctx context.Context, o Options, files []file, varsJSON []byte) (*Topology, error) {
	work, err := os.MkdirTemp("", "idgen-topology-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(work, f.name), f.data, 0o644); err != nil {
			return nil, err
		}
	}
	tf, err := tfexec.NewTerraform(work, o.Terraform)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	var stderr strings.Builder
	tf.SetStdout(o.Log)
	tf.SetStderr(io.MultiWriter(o.Log, &stderr))
	// No ~/.terraformrc, no plugin cache, no checkpoint call: the module has no provider.
	env := map[string]string{"TF_CLI_CONFIG_FILE": os.DevNull, "CHECKPOINT_DISABLE": "1"}
	if err := tf.SetEnv(env); err != nil {
		return nil, err
	}
	if err := CheckVersion(ctx, tf); err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	if err := tf.Init(ctx, tfexec.Backend(false)); err != nil {
		return nil, fmt.Errorf("topology: terraform init: %w: %s", err, squash(stderr.String()))
	}
	opts := []tfexec.PlanOption{tfexec.Out(filepath.Join(work, "plan")), tfexec.Refresh(false)}
	if len(o.Vars) > 0 {
		vf := filepath.Join(work, "vars.tfvars.json")
		if err := os.WriteFile(vf, varsJSON, 0o644); err != nil {
			return nil, err
		}
		opts = append(opts, tfexec.VarFile(vf))
	}
	stderr.Reset()
	if _, err := tf.Plan(ctx, opts...); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s", ErrPlan, squash(stderr.String()+" "+err.Error()))
	}
	p, err := tf.ShowPlanFile(ctx, filepath.Join(work, "plan"))
	if err != nil {
		return nil, fmt.Errorf("topology: terraform show: %w", err)
	}
	out := map[string]any{}
	for _, name := range []string{"regions", "client_config", "home_region", "registry_url"} {
		v, ok := p.PlannedValues.Outputs[name]
		if !ok || v == nil {
			return nil, fmt.Errorf("topology: the plan has no %s output: is %s the topology module?", name, o.Module)
		}
		out[name] = v.Value
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var t Topology
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("topology: the plan's outputs: %w", err)
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return &t, nil
}

// squash makes Terraform's boxed, wrapped message one line.
func squash(s string) string {
	s = strings.NewReplacer("│", " ", "╷", " ", "╵", " ").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

func writeWhole(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func repoRoot(from string) (string, error) {
	dir, err := filepath.Abs(from)
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.work")) && fileExists(filepath.Join(dir, "infra", "terraform")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no repository root above " + from)
		}
		dir = parent
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// PeerOf returns region's peer in the plan ("" for a region not in it).
func (t *Topology) PeerOf(region string) string { return t.Regions[region].Peer }
