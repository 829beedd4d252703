package terraform

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idgen/idgen/infra/providerschema"
)

// awsSchema loads the AWS provider's schema from the npm package make setup installs (cached
// under .tools); without the package the test fails, as a missing server does.
func awsSchema(t *testing.T) *providerschema.Schema {
	t.Helper()
	root, err := providerschema.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	s, err := providerschema.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pinnedProvider matches the exact AWS provider version a root pins in versions.tf.
var pinnedProvider = regexp.MustCompile(`(?s)aws\s*=\s*\{[^}]*version\s*=\s*"=\s*([0-9.]+)"`)

// TestProviderSchemaIsThePinnedOne: the schema is read from the package version package-lock.json
// pins, and that package was generated from the provider version every root configuration pins.
func TestProviderSchemaIsThePinnedOne(t *testing.T) {
	s := awsSchema(t)
	b, err := os.ReadFile("../../package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	if v := lock.Packages["node_modules/"+providerschema.Package].Version; v == "" || v != s.PackageVersion {
		t.Errorf("package-lock.json pins %s %q; the schema is from %q (make setup installs the pinned one)", providerschema.Package, v, s.PackageVersion)
	}
	roots := 0
	for _, dir := range rootDirs {
		src, err := os.ReadFile(filepath.Join(dir, "versions.tf"))
		if err != nil {
			t.Fatal(err)
		}
		m := pinnedProvider.FindSubmatch(src)
		if m == nil {
			t.Errorf("%s/versions.tf pins no exact aws provider version", dir)
			continue
		}
		roots++
		if string(m[1]) != s.ProviderVersion {
			t.Errorf("%s pins hashicorp/aws %s; the schema is of %s (%s %s)", dir, m[1], s.ProviderVersion, s.Package, s.PackageVersion)
		}
	}
	if roots == 0 {
		t.Error("no root configuration pins the provider")
	}
}

// TestProviderSchema checks every .tf file of infra/terraform (modules, examples, roots) against
// the provider's schema.
func TestProviderSchema(t *testing.T) {
	s := awsSchema(t)
	findings, sum, err := s.CheckTree(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
	if sum.Modules < len(configDirs) || sum.Resources < 20 || sum.References < 50 {
		t.Errorf("checked too little to mean anything: %+v", sum)
	}
	t.Logf("%+v", sum)
}

// TestProviderSchemaCatch plants a misspelt argument, a misspelt block and a missing required
// argument in a copy of the region module, and expects exactly those three findings.
func TestProviderSchemaCatch(t *testing.T) {
	s := awsSchema(t)
	dir := filepath.Join(t.TempDir(), "region")
	if out, err := exec.Command("cp", "-r", regionDir, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	main := filepath.Join(dir, "main.tf")
	src, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	planted := string(src)
	for _, p := range []struct{ old, new string }{
		// In the lease table: billing_mode misspelt.
		{`name                        = "idgen-leases-v2"
  billing_mode `, `name                        = "idgen-leases-v2"
  billing_mod  `},
		// In the history table: the point_in_time_recovery block misspelt.
		{`  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  point_in_time_recovery {`, `  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  point_in_time_recovry {`},
		// In the first alarm: alarm_name, which the provider requires, left out.
		{`  alarm_name          = "idgen-${var.region}-fleet-healthy-hosts-low"
`, ""},
	} {
		if strings.Count(planted, p.old) != 1 {
			t.Fatalf("the plant %q is not in %s exactly once", p.old, main)
		}
		planted = strings.Replace(planted, p.old, p.new, 1)
	}
	if err := os.WriteFile(main, []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	findings, _, err := s.CheckTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range findings {
		got = append(got, f.String())
	}
	wantProblems(t, got,
		"aws_dynamodb_table.lease: no argument billing_mod in aws_dynamodb_table (did you mean billing_mode?)",
		"aws_dynamodb_table.history: no block point_in_time_recovry in aws_dynamodb_table (did you mean point_in_time_recovery?)",
		"aws_cloudwatch_metric_alarm.fleet_healthy_hosts: missing required argument alarm_name",
	)
}

// TestProviderSchemaCatchStrict plants, in a copy of the fleet module, one defect of each kind
// the schema check finds beyond names: a once-only block repeated, a literal of the wrong type,
// a required block left out, a computed-only attribute set, and an indexed and a splat
// reference to attributes that do not exist; and expects exactly those findings.
func TestProviderSchemaCatchStrict(t *testing.T) {
	s := awsSchema(t)
	dir := filepath.Join(t.TempDir(), "fleet")
	if out, err := exec.Command("cp", "-r", fleetDir, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	main := filepath.Join(dir, "main.tf")
	src, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	planted := string(src)
	for _, p := range []struct{ old, new string }{
		// In the NLB: a string where a bool is, which Terraform cannot convert ("true" it could).
		{`  enable_cross_zone_load_balancing = true
`, `  enable_cross_zone_load_balancing = "yes"
`},
		// In the NLB: dns_name, which the provider sets.
		{`  enable_deletion_protection       = var.deletion_protection
  tags                             = local.tags
}`, `  enable_deletion_protection       = var.deletion_protection
  tags                             = local.tags
  dns_name                         = var.dns_name
}`},
		// In the target group: a second health_check, which may appear once.
		{`    unhealthy_threshold = 3
  }
`, `    unhealthy_threshold = 3
  }

  health_check {
    enabled = false
  }
`},
		// In the listener: default_action, which the provider requires, left out.
		{`  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.this[0].arn
  }
`, ""},
		// In the alias record: an indexed reference to zone, which aws_lb does not have.
		{`    zone_id                = aws_lb.this[0].zone_id
`, `    zone_id                = aws_lb.this[0].zone
`},
		// In the Auto Scaling group: a splat reference to arns, which the target group does not have.
		{`aws_lb_target_group.this[*].arn :`, `aws_lb_target_group.this[*].arns :`},
	} {
		if strings.Count(planted, p.old) != 1 {
			t.Fatalf("the plant %q is not in %s exactly once", p.old, main)
		}
		planted = strings.Replace(planted, p.old, p.new, 1)
	}
	if err := os.WriteFile(main, []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	findings, _, err := s.CheckTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range findings {
		got = append(got, f.String())
	}
	// at returns "main.tf:N: " for the line n lines after the first that contains text.
	at := func(text string, n int) string {
		for i, l := range strings.Split(planted, "\n") {
			if strings.Contains(l, text) {
				return fmt.Sprintf("main.tf:%d: ", i+1+n)
			}
		}
		t.Fatalf("%q is not in the planted file", text)
		return ""
	}
	wantProblems(t, got,
		at(`= "yes"`, 0)+`aws_lb.this: enable_cross_zone_load_balancing = "yes": Terraform cannot convert a string to bool (a bool is required)`,
		at("dns_name                         = var.dns_name", 0)+"aws_lb.this: dns_name is a computed-only attribute of aws_lb: the provider sets it, it cannot be set",
		at("enabled = false", -1)+"aws_lb_target_group.this: block health_check may appear only once in aws_lb_target_group; it appears again here (first at line "+strings.TrimSuffix(strings.TrimPrefix(at("health_check {", 0), "main.tf:"), ": ")+")",
		at(`resource "aws_lb_listener" "this"`, 0)+"aws_lb_listener.this: missing required block default_action",
		at("aws_lb.this[0].zone", 0)+"aws_lb.this.zone: aws_lb has no attribute zone in hashicorp/aws 5.100.0",
		at("this[*].arns", 0)+"aws_lb_target_group.this.arns: aws_lb_target_group has no attribute arns in hashicorp/aws 5.100.0 (did you mean arn?)",
	)
}
