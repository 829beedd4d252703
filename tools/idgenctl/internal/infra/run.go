package infra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/terraform-config-inspect/tfconfig"
	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/idgen/idgen/libs/topology"
)

// TerraformVersion is the Terraform the project pins (scripts/setup.sh installs it).
const TerraformVersion = topology.TerraformVersion

// ErrRefused: the plan guard refused a plan.
var ErrRefused = errors.New("infra: the plan guard refused this plan")

// The root configurations of infra/terraform, relative to it, each with a state of its own.
const (
	// BootstrapRoot holds the state bucket and the lock table.
	BootstrapRoot = "bootstrap"
	// RegistryRoot holds what the regions share, in the home region: applied first.
	RegistryRoot = "live/registry"
	// RegionRoots holds one root per region, live/regions/<region>.
	RegionRoots = "live/regions"
	// TopologyModule holds the home region (its home_region variable's default).
	TopologyModule = "modules/topology"
	// VarFile is the live roots' variables, one file for all of them; relative to infra/terraform.
	VarFile = "live/idgen.tfvars"
)

// BackendFile is the s3 backend's settings (bucket, region, lock table, KMS key) of the state
// bucket and lock table in region, written from that region's bootstrap root's backend_config
// output; relative to infra/terraform. Each region's roots keep their state in their own region:
// an outage of one region's S3 or DynamoDB leaves the other regions' roots plannable.
func BackendFile(region string) string { return "backend." + region + ".hcl" }

// StateKey is the s3 backend key of a root: its folder under infra/terraform.
func StateKey(root string) string {
	return filepath.ToSlash(filepath.Clean(root)) + "/terraform.tfstate"
}

// Runner runs Terraform on the repository's infra/terraform.
type Runner struct {
	// Dir is infra/terraform, absolute.
	Dir string
	// Terraform is the binary; it must be TerraformVersion.
	Terraform string
	// BackendConfig is the s3 backend's settings file for roots with an s3 backend; "" is
	// Dir/BackendFile(the root's state region). Its region must be the state region.
	BackendConfig string
	// StateRegion is the region of the state bucket and lock table a root's state is in; "" is
	// the root's own: live/regions/R's is R, the registry root's the home region. A root of its
	// own kind (bootstrap, applied once per region) needs it.
	StateRegion string
	// VarFile holds the variables of the roots; "" is Dir/VarFile when it exists. Each root is
	// given only the variables it declares.
	VarFile string
	Stdout  io.Writer
	Stderr  io.Writer
}

// FindDir finds infra/terraform in dir or a parent of it.
func FindDir(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "infra", "terraform", "live")); err == nil && st.IsDir() {
			return filepath.Join(d, "infra", "terraform"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("infra: no infra/terraform in %s or above it: run from the repository, or give --infra-dir", dir)
		}
	}
}

// FindTerraform returns the pinned binary: .tools/bin/terraform beside infra/, else terraform on PATH.
func FindTerraform(infraDir string) (string, error) {
	p, err := topology.FindTerraform(filepath.Join(infraDir, "..", ".."))
	if err != nil {
		return "", fmt.Errorf("infra: %w, or give --terraform", err)
	}
	return p, nil
}

func (r *Runner) tf(ctx context.Context, dir string) (*tfexec.Terraform, error) {
	dir, _ = r.abs(dir)
	tf, err := tfexec.NewTerraform(dir, r.Terraform)
	if err != nil {
		return nil, err
	}
	tf.SetStdout(r.Stdout)
	tf.SetStderr(r.Stderr)
	if err := topology.CheckVersion(ctx, tf); err != nil {
		return nil, fmt.Errorf("infra: %w", err)
	}
	return tf, nil
}

// Fmt checks that every file under infra/terraform is formatted; it lists the ones that are not.
func (r *Runner) Fmt(ctx context.Context) error {
	tf, err := r.tf(ctx, r.Dir)
	if err != nil {
		return err
	}
	ok, files, err := tf.FormatCheck(ctx, tfexec.Recursive(true))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("infra: not formatted (terraform fmt -recursive fixes them): %s", strings.Join(files, ", "))
	}
	fmt.Fprintln(r.Stdout, "infra: every file is formatted")
	return nil
}

// Validate runs init without a backend, then validate, in dir (relative to infra/terraform).
func (r *Runner) Validate(ctx context.Context, dir string) error {
	abs, _ := r.abs(dir)
	tf, err := r.tf(ctx, abs)
	if err != nil {
		return err
	}
	if err := tf.Init(ctx, tfexec.Backend(false)); err != nil {
		return fmt.Errorf("infra: init %s: %w", dir, err)
	}
	out, err := tf.Validate(ctx)
	if err != nil {
		return err
	}
	for _, d := range out.Diagnostics {
		fmt.Fprintf(r.Stdout, "%s: %s: %s\n", d.Severity, d.Summary, d.Detail)
	}
	if !out.Valid {
		return fmt.Errorf("infra: %s is not valid (%d errors)", dir, out.ErrorCount)
	}
	fmt.Fprintf(r.Stdout, "infra: %s is valid\n", dir)
	return nil
}

// RegionRoot returns the root of a region, live/regions/<region>.
func (r *Runner) RegionRoot(region string) (string, error) {
	roots, err := r.regionRoots()
	if err != nil {
		return "", err
	}
	for _, root := range roots {
		if filepath.Base(root) == region {
			return root, nil
		}
	}
	names := make([]string, 0, len(roots))
	for _, root := range roots {
		names = append(names, filepath.Base(root))
	}
	return "", fmt.Errorf("infra: no region %s in %s (it has %s)", region, RegionRoots, strings.Join(names, ", "))
}

func (r *Runner) regionRoots() ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(r.Dir, RegionRoots, "*", "main.tf"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.ToSlash(filepath.Join(RegionRoots, filepath.Base(filepath.Dir(d)))))
	}
	sort.Strings(out)
	return out, nil
}

// LiveRoots returns the roots of live/ in the order they are applied: the registry root, then
// each region's.
func (r *Runner) LiveRoots() ([]string, error) {
	regions, err := r.regionRoots()
	if err != nil {
		return nil, err
	}
	return append([]string{RegistryRoot}, regions...), nil
}

// abs returns a configuration's directory, absolute, and its path relative to Dir ("" when it is
// outside Dir).
func (r *Runner) abs(dir string) (string, string) {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.Dir, dir)
	}
	rel, err := filepath.Rel(r.Dir, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		rel = ""
	}
	return dir, rel
}

// backendType returns the type of a configuration's backend block, "" for none (local state).
func backendType(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return "", err
	}
	p := hclparse.NewParser()
	for _, f := range files {
		if strings.HasSuffix(f, "_override.tf") {
			continue
		}
		file, diags := p.ParseHCLFile(f)
		if diags.HasErrors() {
			return "", diags
		}
		body, ok := file.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		for _, b := range body.Blocks {
			if b.Type != "terraform" {
				continue
			}
			for _, inner := range b.Body.Blocks {
				if inner.Type == "backend" && len(inner.Labels) == 1 {
					return inner.Labels[0], nil
				}
			}
		}
	}
	return "", nil
}

// HomeRegion is the topology's home region (the default of modules/topology's home_region):
// where the registry root is, and so its state.
func (r *Runner) HomeRegion() (string, error) {
	mod, diags := tfconfig.LoadModule(filepath.Join(r.Dir, TopologyModule))
	if diags.HasErrors() {
		return "", diags.Err()
	}
	v := mod.Variables["home_region"]
	if v == nil {
		return "", fmt.Errorf("infra: %s has no variable home_region", TopologyModule)
	}
	home, ok := v.Default.(string)
	if !ok || home == "" {
		return "", fmt.Errorf("infra: %s: home_region has no default region", TopologyModule)
	}
	return home, nil
}

// stateRegion is the region whose state bucket and lock table hold a root's state: StateRegion
// when set, else live/regions/R's own region R, the registry root's home region.
func (r *Runner) stateRegion(rel string) (string, error) {
	if r.StateRegion != "" {
		return r.StateRegion, nil
	}
	rel = filepath.ToSlash(filepath.Clean(rel))
	switch {
	case strings.HasPrefix(rel, RegionRoots+"/") && !strings.Contains(strings.TrimPrefix(rel, RegionRoots+"/"), "/"):
		return strings.TrimPrefix(rel, RegionRoots+"/"), nil
	case rel == RegistryRoot:
		return r.HomeRegion()
	}
	return "", fmt.Errorf("infra: %s keeps its state in the region it is applied to: say which with --state-region R (the bootstrap root: once per region, each into its own region's bucket)", rel)
}

// backendRegion reads the region of an s3 backend settings file.
func backendRegion(path string) (string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	file, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return "", diags
	}
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return "", fmt.Errorf("infra: %s is not HCL", path)
	}
	a := body.Attributes["region"]
	if a == nil {
		return "", fmt.Errorf("infra: %s names no region", path)
	}
	var region string
	if diags := gohcl.DecodeExpression(a.Expr, nil, &region); diags.HasErrors() {
		return "", fmt.Errorf("infra: %s: region is not a string: %w", path, diags)
	}
	return region, nil
}

// initOptions are init's options for a configuration: for an s3 backend, the settings file of
// the root's state region and the root's own key (partial configuration: nothing in the
// repository names the account).
func (r *Runner) initOptions(dir, rel string) ([]tfexec.InitOption, error) {
	typ, err := backendType(dir)
	if err != nil || typ == "" {
		return nil, err
	}
	if typ != "s3" {
		return nil, fmt.Errorf("infra: %s has a %s backend; the roots use s3", dir, typ)
	}
	if rel == "" {
		return nil, fmt.Errorf("infra: %s is not under %s, so it has no state key", dir, r.Dir)
	}
	region, err := r.stateRegion(rel)
	if err != nil {
		return nil, err
	}
	cfg := r.BackendConfig
	if cfg == "" {
		cfg = filepath.Join(r.Dir, BackendFile(region))
	}
	if _, err := os.Stat(cfg); err != nil {
		return nil, fmt.Errorf("infra: no backend settings %s (%v): apply the bootstrap root in %s and write them from it (cd infra/terraform/bootstrap && terraform output -raw backend_config > ../%s), or give --backend-config", cfg, err, region, BackendFile(region))
	}
	cfg, err = filepath.Abs(cfg)
	if err != nil {
		return nil, err
	}
	got, err := backendRegion(cfg)
	if err != nil {
		return nil, err
	}
	if got != region {
		return nil, fmt.Errorf("infra: %s: state bucket and lock table in %s, but %s keeps its state in %s (its own region's %s)", cfg, got, rel, region, BackendFile(region))
	}
	fmt.Fprintf(r.Stdout, "infra: %s: state in %s, s3 key %s, settings from %s\n", rel, region, StateKey(rel), cfg)
	return []tfexec.InitOption{tfexec.BackendConfig(cfg), tfexec.BackendConfig("key=" + StateKey(rel))}, nil
}

// varFile writes the variables of the var file that the configuration declares to a file of
// their own, and returns it ("" when there is no var file): one file serves every root, and
// Terraform would warn of each value a root does not declare.
func (r *Runner) varFile(dir, tmp string) (string, error) {
	path := r.VarFile
	if path == "" {
		path = filepath.Join(r.Dir, VarFile)
		if _, err := os.Stat(path); err != nil {
			return "", nil
		}
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	file, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return "", diags
	}
	mod, mdiags := tfconfig.LoadModule(dir)
	if mdiags.HasErrors() {
		return "", mdiags.Err()
	}
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return "", fmt.Errorf("infra: %s is not HCL", path)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "# The variables of %s that %s declares.\n", path, dir)
	names := make([]string, 0, len(body.Attributes))
	for name := range body.Attributes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if mod.Variables[name] != nil {
			out.Write(body.Attributes[name].SrcRange.SliceBytes(src))
			out.WriteString("\n")
		}
	}
	f := filepath.Join(tmp, "idgen.tfvars")
	return f, os.WriteFile(f, []byte(out.String()), 0o600)
}

// Plan runs init and plan in dir (relative to Dir, or absolute), saves the plan to out and its
// JSON to out+".json", and runs the guard on it. A root with an s3 backend is initialized with the
// shared settings and its own key; the variables come from the var file. It returns ErrRefused
// when the guard refuses the plan.
func (r *Runner) Plan(ctx context.Context, dir, out string, targets []string, vars []string) error {
	abs, rel := r.abs(dir)
	tf, err := r.tf(ctx, abs)
	if err != nil {
		return err
	}
	initOpts, err := r.initOptions(abs, rel)
	if err != nil {
		return err
	}
	if err := tf.Init(ctx, initOpts...); err != nil {
		return fmt.Errorf("infra: init %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp("", "idgen-infra-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	opts := []tfexec.PlanOption{tfexec.Out(out)}
	vf, err := r.varFile(abs, tmp)
	if err != nil {
		return err
	}
	if vf != "" {
		opts = append(opts, tfexec.VarFile(vf))
	}
	for _, t := range targets {
		opts = append(opts, tfexec.Target(t))
	}
	if filepath.ToSlash(filepath.Clean(rel)) == BootstrapRoot {
		// The bootstrap root makes the state bucket and lock table of the region it is planned for.
		region, err := r.stateRegion(rel)
		if err != nil {
			return err
		}
		opts = append(opts, tfexec.Var("region="+region))
	}
	for _, v := range vars {
		opts = append(opts, tfexec.Var(v))
	}
	if _, err := tf.Plan(ctx, opts...); err != nil {
		return fmt.Errorf("infra: plan %s: %w", dir, err)
	}
	plan, err := tf.ShowPlanFile(ctx, out)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out+".json", b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(r.Stdout, "infra: plan saved to %s, its JSON to %s.json\n", out, out)
	return r.guard(plan)
}

// Apply applies a saved plan after the guard passes it; override applies a refused plan anyway.
func (r *Runner) Apply(ctx context.Context, dir, planFile string, override bool) error {
	abs, _ := r.abs(dir)
	tf, err := r.tf(ctx, abs)
	if err != nil {
		return err
	}
	plan, err := tf.ShowPlanFile(ctx, planFile)
	if err != nil {
		return err
	}
	if err := r.guard(plan); err != nil {
		if !override {
			return fmt.Errorf("%w: not applied (%s overrides it, and should not be needed)", err, OverrideFlag)
		}
		fmt.Fprintf(r.Stderr, "infra: %s given: applying a plan the guard refused\n", OverrideFlag)
	}
	return tf.Apply(ctx, tfexec.DirOrPlan(planFile))
}

// OverrideFlag applies a plan the guard refused.
const OverrideFlag = "--i-accept-that-ids-may-repeat"

func (r *Runner) guard(plan *tfjson.Plan) error {
	refusals, checked := CheckPlan(plan)
	if len(refusals) > 0 {
		fmt.Fprint(r.Stdout, Report(refusals))
		return fmt.Errorf("%w (%d changes refused)", ErrRefused, len(refusals))
	}
	fmt.Fprintln(r.Stdout, checked.Summary())
	return nil
}

// CheckPlanFile runs the guard on a plan's JSON (terraform show -json PLAN).
func CheckPlanFile(path string, stdout io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var plan tfjson.Plan
	if err := json.Unmarshal(b, &plan); err != nil {
		return fmt.Errorf("infra: %s is not a plan's JSON (terraform show -json PLAN): %w", path, err)
	}
	return (&Runner{Stdout: stdout}).guard(&plan)
}
