package infra_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/tools/idgenctl/internal/infra"
)

// FakeTerraform writes a stand-in for Terraform 1.5.7 into dir and returns it with the file it
// logs to: one line per command, "<folder relative to root>: <arguments>", and the content of
// every -var-file it is given. plan writes its -out file; show prints an empty plan.
func FakeTerraform(t *testing.T, dir, root string) (bin, log string) {
	t.Helper()
	bin, log = filepath.Join(dir, "terraform"), filepath.Join(dir, "terraform.log")
	script := `#!/bin/bash
set -eu
if [ "$1" = version ]; then
  echo '{"terraform_version":"1.5.7","platform":"linux_amd64","provider_selections":{},"terraform_outdated":false}'
  exit 0
fi
echo "${PWD#` + root + `/}: $*" >> ` + log + `
for a in "$@"; do
  case "$a" in
    -var-file=*) sed 's/^/  var-file: /' "${a#-var-file=}" >> ` + log + ` ;;
    -out=*) echo plan > "${a#-out=}" ;;
  esac
done
if [ "$1" = show ]; then
  echo '{"format_version":"1.2","terraform_version":"1.5.7","resource_changes":[]}'
fi
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// FakeInfra lays out an infra/terraform of the shape the roots have: the bootstrap root, the
// registry root and two region roots, each with an s3 backend, and a module without one.
func FakeInfra(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "infra", "terraform")
	root := `terraform {
  backend "s3" {}
}
variable "networks" {
  type = map(string)
}
variable "schedule" {
  type    = string
  default = "v2"
}
`
	files := map[string]string{
		"bootstrap/main.tf":               "terraform {\n  backend \"s3\" {}\n}\n",
		"live/registry/main.tf":           root + "variable \"v1_table\" {\n  type    = bool\n  default = false\n}\n",
		"live/regions/eu-west-1/main.tf":  root,
		"live/regions/us-east-1/main.tf":  root,
		"modules/topology/main.tf":        "variable \"regions\" {\n  type    = map(string)\n  default = {}\n}\n",
		"live/idgen.tfvars":               "networks = { \"eu-west-1\" = \"vpc-1\" }\nschedule = \"v1-v2\"\nv1_table = true\n",
		"backend.us-east-1.hcl":           "bucket = \"b\"\nregion = \"us-east-1\"\ndynamodb_table = \"idgen-terraform-locks\"\n",
		"backend.eu-west-1.hcl":           "bucket = \"b-eu\"\nregion = \"eu-west-1\"\ndynamodb_table = \"idgen-terraform-locks\"\n",
		"modules/topology/variables.tf":   "variable \"home_region\" {\n  type    = string\n  default = \"us-east-1\"\n}\n",
		"live/regions/eu-west-1/notes.md": "not a configuration\n",
	}
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readLog(t *testing.T, log string) string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.Remove(log); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestPlanPassesBackendAndVariables: a root with an s3 backend is initialized with the shared
// settings file and its own key (its folder), and planned with only the variables it declares
// from the one var file; a module without a backend gets neither; without the settings file the
// plan stops before Terraform runs, saying where they come from.
func TestPlanPassesBackendAndVariables(t *testing.T) {
	dir := FakeInfra(t)
	bin, log := FakeTerraform(t, t.TempDir(), dir)
	var out bytes.Buffer
	r := &infra.Runner{Dir: dir, Terraform: bin, Stdout: &out, Stderr: &out}
	ctx := context.Background()

	root, err := r.RegionRoot("eu-west-1")
	if err != nil || root != "live/regions/eu-west-1" {
		t.Fatalf("RegionRoot: %q %v", root, err)
	}
	if _, err := r.RegionRoot("mars-1"); err == nil || !strings.Contains(err.Error(), "it has eu-west-1, us-east-1") {
		t.Fatalf("RegionRoot(mars-1): %v", err)
	}
	if roots, err := r.LiveRoots(); err != nil || strings.Join(roots, " ") != "live/registry live/regions/eu-west-1 live/regions/us-east-1" {
		t.Fatalf("LiveRoots: %v %v", roots, err)
	}

	plan := filepath.Join(dir, root, "idgen.tfplan")
	if err := r.Plan(ctx, root, plan, nil, nil); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := readLog(t, log)
	for _, want := range []string{
		"live/regions/eu-west-1: init ",
		"-backend-config=" + filepath.Join(dir, "backend.eu-west-1.hcl") + " ",
		"-backend-config=key=live/regions/eu-west-1/terraform.tfstate",
		"live/regions/eu-west-1: plan ",
		`  var-file: networks = { "eu-west-1" = "vpc-1" }`,
		`  var-file: schedule = "v1-v2"`,
		"live/regions/eu-west-1: show -json",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("terraform was not run with %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "v1_table") {
		t.Errorf("the region root was given the registry root's v1_table:\n%s", got)
	}
	if !strings.Contains(out.String(), "nothing refused") {
		t.Errorf("the guard did not run:\n%s", out.String())
	}

	// The registry root gets its own key and its own variable.
	if err := r.Plan(ctx, infra.RegistryRoot, filepath.Join(dir, infra.RegistryRoot, "idgen.tfplan"), nil, nil); err != nil {
		t.Fatal(err)
	}
	got = readLog(t, log)
	if !strings.Contains(got, "-backend-config="+filepath.Join(dir, "backend.us-east-1.hcl")+" ") || !strings.Contains(got, "-backend-config=key=live/registry/terraform.tfstate") || !strings.Contains(got, "  var-file: v1_table = true") {
		t.Errorf("registry root:\n%s", got)
	}

	// A module without a backend: no backend settings, and no variables it does not declare.
	if err := r.Plan(ctx, "modules/topology", filepath.Join(t.TempDir(), "p"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if got = readLog(t, log); strings.Contains(got, "-backend-config") || strings.Contains(got, "var-file: networks") {
		t.Errorf("module without a backend:\n%s", got)
	}

	// Without the settings file.
	if err := os.Remove(filepath.Join(dir, "backend.eu-west-1.hcl")); err != nil {
		t.Fatal(err)
	}
	err = r.Plan(ctx, root, plan, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "apply the bootstrap root in eu-west-1") || !strings.Contains(err.Error(), "terraform output -raw backend_config > ../backend.eu-west-1.hcl") {
		t.Fatalf("without backend.eu-west-1.hcl: %v", err)
	}
	if got = readLog(t, log); got != "" {
		t.Errorf("terraform ran without the backend settings:\n%s", got)
	}
	// Given explicitly, elsewhere.
	elsewhere := filepath.Join(t.TempDir(), "prod.hcl")
	if err := os.WriteFile(elsewhere, []byte("bucket = \"b\"\nregion = \"eu-west-1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.BackendConfig = elsewhere
	if err := r.Plan(ctx, root, plan, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got = readLog(t, log); !strings.Contains(got, "-backend-config="+elsewhere+" ") {
		t.Errorf("--backend-config not passed:\n%s", got)
	}
}
