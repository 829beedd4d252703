package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/tools/idgenctl/internal/cli"
)

// infraFixture is an infra/terraform with the roots' shape and a stand-in Terraform that logs
// "<root>: <command>" per run.
func infraFixture(t *testing.T) (dir, bin, log string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "infra", "terraform")
	root := "terraform {\n  backend \"s3\" {}\n}\n"
	for name, src := range map[string]string{
		"bootstrap/main.tf":              root,
		"live/registry/main.tf":          root,
		"live/regions/eu-west-1/main.tf": root,
		"live/regions/us-east-1/main.tf": root,
		"backend.us-east-1.hcl":          "bucket = \"b-us-east-1\"\nregion = \"us-east-1\"\n",
		"backend.eu-west-1.hcl":          "bucket = \"b-eu-west-1\"\nregion = \"eu-west-1\"\n",
		"modules/topology/variables.tf":  "variable \"home_region\" {\n  type    = string\n  default = \"us-east-1\"\n}\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin, log = filepath.Join(t.TempDir(), "terraform"), filepath.Join(t.TempDir(), "terraform.log")
	script := `#!/bin/bash
set -eu
if [ "$1" = version ]; then
  echo '{"terraform_version":"1.5.7","platform":"linux_amd64","provider_selections":{},"terraform_outdated":false}'
  exit 0
fi
key="" cfg="" var=""
for a in "$@"; do
  case "$a" in
    -backend-config=key=*) key=" ${a#-backend-config=}" ;;
    -backend-config=*) cfg=" ${a##*/}" ;;
    region=*) var=" var $a" ;;
    -out=*) echo plan > "${a#-out=}" ;;
  esac
done
echo "${PWD#` + dir + `/}: $1$cfg$key$var" >> ` + log + `
if [ "$1" = show ]; then
  echo '{"format_version":"1.2","terraform_version":"1.5.7","resource_changes":[]}'
fi
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin, log
}

// TestInfraRoots: idgenctl infra plan and apply pick one root (--region, --registry, --dir, or
// for apply the plan's folder), plan --all plans the registry root and then each region's, each
// with its own state key, and a command that does not say which root is refused.
func TestInfraRoots(t *testing.T) {
	dir, bin, log := infraFixture(t)
	infraRun := func(args ...string) (int, string) {
		var stdout, stderr strings.Builder
		args = append([]string{"infra", "--infra-dir", dir, "--terraform", bin}, args...)
		code := cli.Run(context.Background(), args, &stdout, &stderr, func(string) string { return "" })
		b, _ := os.ReadFile(log)
		if err := os.Remove(log); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return code, string(b) + stdout.String() + stderr.String()
	}
	for _, tt := range []struct {
		args []string
		code int
		want []string
	}{
		// Each region's state in its own region's bucket; the registry's in the home region's.
		{[]string{"plan", "--region", "eu-west-1"}, 0, []string{
			"live/regions/eu-west-1: init backend.eu-west-1.hcl key=live/regions/eu-west-1/terraform.tfstate\nlive/regions/eu-west-1: plan\nlive/regions/eu-west-1: show",
			"plan saved to " + filepath.Join(dir, "live/regions/eu-west-1/idgen.tfplan"), "nothing refused", "state in eu-west-1"}},
		{[]string{"plan", "--registry"}, 0, []string{"live/registry: init backend.us-east-1.hcl key=live/registry/terraform.tfstate\n"}},
		// The bootstrap root, once per region: its state into that region's bucket, which it makes.
		{[]string{"plan", "--dir", "bootstrap", "--state-region", "eu-west-1"}, 0, []string{
			"bootstrap: init backend.eu-west-1.hcl key=bootstrap/terraform.tfstate\nbootstrap: plan var region=eu-west-1\n"}},
		{[]string{"plan", "--dir", "bootstrap"}, 1, []string{"say which with --state-region R"}},
		{[]string{"plan", "--region", "us-east-1", "--backend-config", filepath.Join(dir, "backend.eu-west-1.hcl")}, 1, []string{
			"state bucket and lock table in eu-west-1, but live/regions/us-east-1 keeps its state in us-east-1"}},
		{[]string{"plan", "--region", "ap-south-1"}, 1, []string{"no region ap-south-1"}},
		{[]string{"plan", "--all"}, 0, []string{
			"live/registry: init backend.us-east-1.hcl key=live/registry/terraform.tfstate\nlive/registry: plan\nlive/registry: show\n" +
				"live/regions/eu-west-1: init backend.eu-west-1.hcl key=live/regions/eu-west-1/terraform.tfstate\nlive/regions/eu-west-1: plan\nlive/regions/eu-west-1: show\n" +
				"live/regions/us-east-1: init backend.us-east-1.hcl key=live/regions/us-east-1/terraform.tfstate\n"}},
		{[]string{"plan", "--all", "--state-region", "eu-west-1"}, 2, []string{"not with --region, --registry, --dir, --plan, --state-region"}},
		{[]string{"apply", "--plan", filepath.Join(dir, "live/regions/eu-west-1/idgen.tfplan")}, 0, []string{
			"live/regions/eu-west-1: show\nlive/regions/eu-west-1: apply\n", "nothing refused"}},
		{[]string{"apply", "--region", "us-east-1", "--plan", filepath.Join(dir, "live/regions/us-east-1/idgen.tfplan")}, 0, []string{"live/regions/us-east-1: apply\n"}},
		{[]string{"plan"}, 2, []string{"say which root: --region R, --registry or --dir D"}},
		{[]string{"plan", "--region", "eu-west-1", "--registry"}, 2, []string{"one of --region, --registry and --dir"}},
		{[]string{"plan", "--all", "--region", "eu-west-1"}, 2, []string{"not with --region"}},
		{[]string{"plan", "--region", "mars-1"}, 1, []string{"no region mars-1 in live/regions (it has eu-west-1, us-east-1)"}},
		{[]string{"apply", "--plan", filepath.Join(t.TempDir(), "x.tfplan")}, 2, []string{"the plan is not in a root"}},
	} {
		code, out := infraRun(tt.args...)
		if code != tt.code {
			t.Errorf("infra %v: exit %d, want %d\n%s", tt.args, code, tt.code, out)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("infra %v: output does not say %q:\n%s", tt.args, w, out)
			}
		}
	}
}
