package infra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"
	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"
)

// TerraformVersion is the Terraform the project pins (scripts/setup.sh installs it).
const TerraformVersion = "1.5.7"

// ErrRefused: the plan guard refused a plan.
var ErrRefused = errors.New("infra: the plan guard refused this plan")

// Runner runs Terraform on the repository's infra/terraform.
type Runner struct {
	// Dir is infra/terraform, absolute.
	Dir string
	// Terraform is the binary; it must be TerraformVersion.
	Terraform string
	Stdout    io.Writer
	Stderr    io.Writer
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
	local := filepath.Join(infraDir, "..", "..", ".tools", "bin", "terraform")
	if _, err := os.Stat(local); err == nil {
		return filepath.Abs(local)
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		return "", fmt.Errorf("infra: no terraform: run make setup (it installs Terraform %s), or give --terraform", TerraformVersion)
	}
	return p, nil
}

func (r *Runner) tf(ctx context.Context, dir string) (*tfexec.Terraform, error) {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.Dir, dir)
	}
	tf, err := tfexec.NewTerraform(dir, r.Terraform)
	if err != nil {
		return nil, err
	}
	tf.SetStdout(r.Stdout)
	tf.SetStderr(r.Stderr)
	v, _, err := tf.Version(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("infra: terraform version: %w", err)
	}
	if v.String() != TerraformVersion {
		return nil, fmt.Errorf("infra: %s is Terraform %s; the project pins %s (make setup installs it)", r.Terraform, v, TerraformVersion)
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
	tf, err := r.tf(ctx, dir)
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

// Targets returns the -target addresses of regions in the live configuration: each region is one
// module call named region_<name> (dashes as underscores). An empty list means every region.
func (r *Runner) Targets(regions []string) ([]string, error) {
	mod, diags := tfconfig.LoadModule(filepath.Join(r.Dir, "live"))
	if diags.HasErrors() {
		return nil, diags.Err()
	}
	known := map[string]string{}
	for name := range mod.ModuleCalls {
		if rest, ok := strings.CutPrefix(name, "region_"); ok {
			known[strings.ReplaceAll(rest, "_", "-")] = "module." + name
		}
	}
	var out []string
	for _, region := range regions {
		t, ok := known[region]
		if !ok {
			names := make([]string, 0, len(known))
			for k := range known {
				names = append(names, k)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("infra: no region %s in live/ (it has %s)", region, strings.Join(names, ", "))
		}
		out = append(out, t)
	}
	return out, nil
}

// Plan runs init and plan in dir, saves the plan to out and its JSON to out+".json", and runs the
// guard on it. It returns ErrRefused when the guard refuses the plan.
func (r *Runner) Plan(ctx context.Context, dir, out string, targets []string, vars []string) error {
	tf, err := r.tf(ctx, dir)
	if err != nil {
		return err
	}
	if err := tf.Init(ctx); err != nil {
		return fmt.Errorf("infra: init %s: %w", dir, err)
	}
	opts := []tfexec.PlanOption{tfexec.Out(out)}
	for _, t := range targets {
		opts = append(opts, tfexec.Target(t))
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
	tf, err := r.tf(ctx, dir)
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
