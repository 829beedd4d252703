package cli

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/idgen/idgen/tools/idgenctl/internal/infra"
	"github.com/spf13/cobra"
)

func (o *opts) infraCmd() *cobra.Command {
	mk := func(use, short string, run func(ctx context.Context, r *infra.Runner) error) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, _ []string) error {
				r, err := o.infraRunner()
				if err != nil {
					return err
				}
				return run(cmd.Context(), r)
			}}
	}
	fmtCmd := mk("fmt", "terraform fmt check over infra/terraform", func(ctx context.Context, r *infra.Runner) error { return r.Fmt(ctx) })
	validate := mk("validate", "init without a backend, validate (--dir, relative to infra/terraform; default live)",
		func(ctx context.Context, r *infra.Runner) error { return r.Validate(ctx, o.tfDir) })
	plan := mk("plan --region R|--all", "init, plan saved to --plan FILE and FILE.json, then the plan guard", o.infraPlan)
	plan.Flags().BoolVar(&o.allRegions, "all", false, "every region")
	plan.Flags().StringVar(&o.planFile, "plan", "", "where to save the plan (default: idgen.tfplan in the configuration's folder)")
	apply := mk("apply --plan FILE", "the plan guard, then apply (a refused plan needs "+infra.OverrideFlag+")", func(ctx context.Context, r *infra.Runner) error {
		return r.Apply(ctx, o.tfDir, o.planFile, o.override)
	})
	apply.Flags().StringVar(&o.planFile, "plan", "", "the saved plan (from infra plan)")
	apply.Flags().BoolVar(&o.override, strings.TrimPrefix(infra.OverrideFlag, "--"), false, "apply a plan the guard refused")
	apply.PreRunE = func(*cobra.Command, []string) error {
		if o.planFile == "" {
			return usageError{"infra apply: --plan FILE (from infra plan): apply runs only a saved, guarded plan"}
		}
		return nil
	}
	for _, c := range []*cobra.Command{validate, plan, apply} {
		c.Flags().StringVar(&o.tfDir, "dir", "live", "configuration, relative to infra/terraform")
	}
	checkPlan := &cobra.Command{Use: "check-plan PLAN.json", Short: "the plan guard alone: exit 1 and one line per refused change", Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { return infra.CheckPlanFile(args[0], o.stdout) }}
	g := group("infra", "Terraform with the plan guard: fmt, validate, plan, apply, check-plan", fmtCmd, validate, plan, apply, checkPlan)
	g.PersistentFlags().StringVar(&o.infraDir, "infra-dir", "", "infra/terraform (default: found from the working directory up)")
	g.PersistentFlags().StringVar(&o.terraform, "terraform", "", "Terraform binary (default: .tools/bin/terraform, Terraform 1.5.7, else PATH)")
	return g
}

// infraRunner finds infra/terraform and the Terraform binary.
func (o *opts) infraRunner() (*infra.Runner, error) {
	dir := o.infraDir
	if dir == "" {
		var err error
		if dir, err = infra.FindDir("."); err != nil {
			return nil, err
		}
	} else if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	bin := o.terraform
	if bin == "" {
		var err error
		if bin, err = infra.FindTerraform(dir); err != nil {
			return nil, err
		}
	}
	return &infra.Runner{Dir: dir, Terraform: bin, Stdout: o.stdout, Stderr: o.stderr}, nil
}

func (o *opts) infraPlan(ctx context.Context, r *infra.Runner) error {
	var targets []string
	switch {
	case o.regionSet && o.allRegions:
		return usageError{"infra plan: --region or --all, not both"}
	case o.regionSet:
		var err error
		if targets, err = r.Targets([]string{o.region}); err != nil {
			return err
		}
	case !o.allRegions && o.tfDir == "live":
		return usageError{"infra plan: say which: --region R or --all"}
	}
	plan := o.planFile
	if plan == "" {
		plan = filepath.Join(r.Dir, o.tfDir, "idgen.tfplan")
	}
	return r.Plan(ctx, o.tfDir, plan, targets, nil)
}
