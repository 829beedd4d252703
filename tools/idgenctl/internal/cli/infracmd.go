package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/idgen/idgen/tools/idgenctl/internal/infra"
	"github.com/spf13/cobra"
)

// infraOpts are the infra commands' own flags.
type infraOpts struct {
	*opts
	infraDir, terraform, tfDir, planFile string
	backendConfig, tfVars, stateRegion   string
	registryRoot, allRegions, override   bool // registryRoot: --registry, the registry's root
}

func (o *opts) infraCmd() *cobra.Command {
	f := &infraOpts{opts: o}
	mk := func(use, short string, run func(ctx context.Context, r *infra.Runner) error) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, _ []string) error {
				r, err := f.infraRunner()
				if err != nil {
					return err
				}
				return run(cmd.Context(), r)
			}}
	}
	fmtCmd := mk("fmt", "terraform fmt check over infra/terraform", func(ctx context.Context, r *infra.Runner) error { return r.Fmt(ctx) })
	validate := mk("validate --region R|--registry|--dir D", "init without a backend, validate (a root, or --dir relative to infra/terraform)",
		func(ctx context.Context, r *infra.Runner) error {
			dir, err := f.infraRoot(r, false)
			if err != nil {
				return err
			}
			return r.Validate(ctx, dir)
		})
	plan := mk("plan --region R|--registry|--dir D|--all", "init with the root's state (s3 backend, its own key), plan saved to --plan FILE and FILE.json, then the plan guard",
		func(ctx context.Context, r *infra.Runner) error { return f.infraPlan(ctx, r) })
	plan.Flags().BoolVar(&f.allRegions, "all", false, "every root of live/, in the order they are applied: the registry, then each region (each plan saved in its root)")
	plan.Flags().StringVar(&f.planFile, "plan", "", "where to save the plan (default: idgen.tfplan in the root's folder)")
	apply := mk("apply --plan FILE", "the plan guard, then apply (a refused plan needs "+infra.OverrideFlag+")", func(ctx context.Context, r *infra.Runner) error {
		dir, err := f.infraRoot(r, true)
		if err != nil {
			return err
		}
		return r.Apply(ctx, dir, f.planFile, f.override)
	})
	apply.Flags().StringVar(&f.planFile, "plan", "", "the saved plan (from infra plan); its folder is the root unless --region, --registry or --dir says otherwise")
	apply.Flags().BoolVar(&f.override, strings.TrimPrefix(infra.OverrideFlag, "--"), false, "apply a plan the guard refused")
	apply.PreRunE = func(*cobra.Command, []string) error {
		if f.planFile == "" {
			return usageError{"infra apply: --plan FILE (from infra plan): apply runs only a saved, guarded plan"}
		}
		return nil
	}
	for _, c := range []*cobra.Command{validate, plan, apply} {
		c.Flags().StringVar(&f.tfDir, "dir", "", "a configuration, relative to infra/terraform (bootstrap, live/registry, live/regions/R, a module)")
		c.Flags().BoolVar(&f.registryRoot, "registry", false, "the registry root ("+infra.RegistryRoot+")")
	}
	checkPlan := &cobra.Command{Use: "check-plan PLAN.json", Short: "the plan guard alone: exit 1 and one line per refused change", Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { return infra.CheckPlanFile(args[0], o.stdout) }}
	g := group("infra", "Terraform with the plan guard: fmt, validate, plan, apply, check-plan", fmtCmd, validate, plan, apply, checkPlan)
	g.PersistentFlags().StringVar(&f.infraDir, "infra-dir", "", "infra/terraform (default: found from the working directory up)")
	g.PersistentFlags().StringVar(&f.terraform, "terraform", "", "Terraform binary (default: .tools/bin/terraform, Terraform 1.5.7, else PATH)")
	g.PersistentFlags().StringVar(&f.backendConfig, "backend-config", "", "the s3 backend's settings (default: infra/terraform/"+infra.BackendFile("R")+" of the root's state region R, from that region's bootstrap root's backend_config output)")
	g.PersistentFlags().StringVar(&f.stateRegion, "state-region", "", "the region of the state bucket and lock table (default: --region R's own, the home region for --registry; required for --dir bootstrap, which is applied once per region)")
	g.PersistentFlags().StringVar(&f.tfVars, "var-file", "", "the roots' variables (default: infra/terraform/"+infra.VarFile+" when it exists); each root gets the ones it declares")
	return g
}

// infraRunner finds infra/terraform and the Terraform binary.
func (f *infraOpts) infraRunner() (*infra.Runner, error) {
	dir := f.infraDir
	if dir == "" {
		var err error
		if dir, err = infra.FindDir("."); err != nil {
			return nil, err
		}
	} else if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	bin := f.terraform
	if bin == "" {
		var err error
		if bin, err = infra.FindTerraform(dir); err != nil {
			return nil, err
		}
	}
	r := &infra.Runner{Dir: dir, Terraform: bin, StateRegion: f.stateRegion, Stdout: f.stdout, Stderr: f.stderr}
	for _, p := range []struct {
		dst *string
		v   string
	}{{&r.BackendConfig, f.backendConfig}, {&r.VarFile, f.tfVars}} {
		if p.v != "" {
			abs, err := filepath.Abs(p.v)
			if err != nil {
				return nil, err
			}
			*p.dst = abs
		}
	}
	return r, nil
}

// infraRoot is the configuration a command works on: --region's root, the registry root, --dir,
// or (for apply, fromPlan) the folder of the plan file when it is under infra/terraform.
func (f *infraOpts) infraRoot(r *infra.Runner, fromPlan bool) (string, error) {
	n := 0
	for _, set := range []bool{f.regionSet, f.registryRoot, f.tfDir != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return "", usageError{"infra: one of --region, --registry and --dir"}
	case f.regionSet:
		return r.RegionRoot(f.region)
	case f.registryRoot:
		return infra.RegistryRoot, nil
	case f.tfDir != "":
		return f.tfDir, nil
	case fromPlan && f.planFile != "":
		abs, err := filepath.Abs(f.planFile)
		if err != nil {
			return "", err
		}
		if rel, err := filepath.Rel(r.Dir, filepath.Dir(abs)); err == nil && !strings.HasPrefix(rel, "..") && rel != "." {
			return rel, nil
		}
		return "", usageError{"infra apply: the plan is not in a root of infra/terraform: say which root, with --region, --registry or --dir"}
	}
	return "", usageError{"infra: say which root: --region R, --registry or --dir D"}
}

func (f *infraOpts) infraPlan(ctx context.Context, r *infra.Runner) error {
	if f.allRegions {
		if f.regionSet || f.registryRoot || f.tfDir != "" || f.planFile != "" || f.stateRegion != "" || f.backendConfig != "" {
			return usageError{"infra plan --all: not with --region, --registry, --dir, --plan, --state-region or --backend-config (each plan is saved in its root, each state is in its root's region)"}
		}
		roots, err := r.LiveRoots()
		if err != nil {
			return err
		}
		var refused []string
		for _, root := range roots {
			fmt.Fprintf(f.stdout, "infra: %s\n", root)
			err := r.Plan(ctx, root, filepath.Join(r.Dir, root, "idgen.tfplan"), nil, nil)
			switch {
			case errors.Is(err, infra.ErrRefused):
				refused = append(refused, root)
			case err != nil:
				return err
			}
		}
		if len(refused) > 0 {
			return fmt.Errorf("%w: %s", infra.ErrRefused, strings.Join(refused, ", "))
		}
		return nil
	}
	dir, err := f.infraRoot(r, false)
	if err != nil {
		return err
	}
	plan := f.planFile
	if plan == "" {
		abs := dir
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(r.Dir, dir)
		}
		if _, err := os.Stat(abs); err != nil {
			return err
		}
		plan = filepath.Join(abs, "idgen.tfplan")
	}
	return r.Plan(ctx, dir, plan, nil, nil)
}
