package terraform

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// The fleets' rules: a first apply that finishes (the groups wait for what the hosts need at
// boot, the boot retries, the vCPU quota is checked at plan time), fleets that roll only on
// purpose (a pinned image, capacity from the configuration, an instance refresh gated on alarms),
// and liveness apart from readiness (EC2 health checks, systemd keeping the service alive, the
// load balancer routing to ready hosts).

// asgBlock returns the fleet module's Auto Scaling group.
func asgBlock(c config) *hclsyntax.Block {
	for _, b := range c.blocks("resource", "aws_autoscaling_group") {
		if b.Labels[1] == "this" {
			return b
		}
	}
	return nil
}

// exprText is the source of a block's attribute, "" when it has none.
func exprText(c config, b *hclsyntax.Block, name string) string {
	if b == nil {
		return ""
	}
	a := b.Body.Attributes[name]
	if a == nil {
		return ""
	}
	return strings.TrimSpace(c.source(a.Expr.Range()))
}

// innerBlock returns the first nested block of a type.
func innerBlock(b *hclsyntax.Block, typ string) *hclsyntax.Block {
	if b == nil {
		return nil
	}
	for _, nb := range b.Body.Blocks {
		if nb.Type == typ {
			return nb
		}
	}
	return nil
}

// checkFleetGroup holds the fleet module's group and launch template to the rules: EC2 health
// checks and no wait for healthy targets (readiness is the load balancer's), capacity from
// var.capacity with nothing ignored, the image from var.ami_id with no lookup deciding it, an
// instance refresh in checkpoints gated on var.refresh_alarms with automatic rollback, and a
// group that waits for every security group rule of the module and for var.boot_dependencies.
func checkFleetGroup(c config) []string {
	var problems []string
	asg := asgBlock(c)
	if asg == nil {
		return []string{"no aws_autoscaling_group.this"}
	}
	if got := exprText(c, asg, "health_check_type"); got != `"EC2"` {
		problems = append(problems, fmt.Sprintf("health_check_type is %s, want \"EC2\": the group must replace only hosts EC2 finds impaired, never on the load balancer's /healthz", orNone(got)))
	}
	if exprText(c, asg, "wait_for_elb_capacity") != "" {
		problems = append(problems, "wait_for_elb_capacity: a first apply would wait for healthy targets, which a lease table without its rules never gives")
	}
	for attr, want := range map[string]string{"min_size": "var.capacity.min", "desired_capacity": "var.capacity.desired", "max_size": "var.capacity.max"} {
		if got := exprText(c, asg, attr); got != want {
			problems = append(problems, fmt.Sprintf("%s is %s, want %s", attr, orNone(got), want))
		}
	}
	if lc := innerBlock(asg, "lifecycle"); lc != nil && exprText(c, lc, "ignore_changes") != "" {
		problems = append(problems, "lifecycle ignore_changes on the group: its capacity is the configuration's")
	}
	pref := innerBlock(innerBlock(asg, "instance_refresh"), "preferences")
	switch {
	case pref == nil:
		problems = append(problems, "no instance_refresh preferences")
	default:
		if exprText(c, pref, "auto_rollback") != "true" {
			problems = append(problems, "instance refresh without auto_rollback = true")
		}
		if exprText(c, pref, "checkpoint_percentages") != "var.refresh_checkpoints" || exprText(c, pref, "checkpoint_delay") == "" {
			problems = append(problems, "instance refresh without checkpoint_percentages = var.refresh_checkpoints and a checkpoint_delay")
		}
		if exprText(c, innerBlock(pref, "alarm_specification"), "alarms") != "var.refresh_alarms" {
			problems = append(problems, "instance refresh without alarm_specification { alarms = var.refresh_alarms }")
		}
	}
	// The group waits for every rule of the module's security group.
	deps := exprText(c, asg, "depends_on")
	for _, typ := range []string{"aws_vpc_security_group_ingress_rule", "aws_vpc_security_group_egress_rule", "aws_iam_role_policy"} {
		for _, b := range c.blocks("resource", typ) {
			if !strings.Contains(deps, typ+"."+b.Labels[1]+",") && !strings.Contains(deps, typ+"."+b.Labels[1]+"\n") {
				problems = append(problems, fmt.Sprintf("the group does not wait for %s.%s (depends_on)", typ, b.Labels[1]))
			}
		}
	}
	waitsForBoot := false
	if lc := innerBlock(asg, "lifecycle"); lc != nil {
		for _, pc := range lc.Body.Blocks {
			if pc.Type == "precondition" && strings.Contains(exprText(c, pc, "condition"), "var.boot_dependencies") {
				waitsForBoot = true
			}
		}
	}
	if !waitsForBoot {
		problems = append(problems, "no precondition of the group reads var.boot_dependencies, so it does not wait for the VPC's endpoints")
	}
	for _, lt := range c.blocks("resource", "aws_launch_template") {
		if got := exprText(c, lt, "image_id"); got != "var.ami_id" {
			problems = append(problems, fmt.Sprintf("the launch template's image_id is %s, want var.ami_id (pinned)", orNone(got)))
		}
	}
	for _, b := range c.blocks("data", "aws_ssm_parameter") {
		problems = append(problems, fmt.Sprintf("data.aws_ssm_parameter.%s: an image looked up at plan time rolls the fleet whenever a new one is released", b.Labels[1]))
	}
	for _, b := range c.blocks("data", "aws_ami") {
		if exprText(c, b, "most_recent") == "true" {
			problems = append(problems, fmt.Sprintf("data.aws_ami.%s: most_recent decides the image", b.Labels[1]))
		}
	}
	return problems
}

func orNone(s string) string {
	if s == "" {
		return "not set"
	}
	return s
}

func TestFleetGroup(t *testing.T) {
	wantProblems(t, checkFleetGroup(parseDir(t, fleetDir)))
}

// TestFleetGroupCatch plants each mistake in a copy of the fleet module.
func TestFleetGroupCatch(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(fleetDir, "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	good := string(src)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"ELB health checks", `health_check_type         = "EC2"`, `health_check_type         = "ELB"`, "health_check_type is \"ELB\""},
		{"waits for healthy targets", `wait_for_capacity_timeout = "15m"`, "wait_for_capacity_timeout = \"15m\"\n  wait_for_elb_capacity     = 2", "wait_for_elb_capacity"},
		{"fixed capacity", `desired_capacity = var.capacity.desired`, `desired_capacity = var.capacity.max`, "desired_capacity is var.capacity.max"},
		{"capacity ignored", "  lifecycle {\n    precondition {\n      condition     = var.capacity.min", "  lifecycle {\n    ignore_changes = [desired_capacity]\n\n    precondition {\n      condition     = var.capacity.min", "ignore_changes"},
		{"no rollback", `auto_rollback          = true`, `auto_rollback          = false`, "auto_rollback"},
		{"no alarm gate", `alarms = var.refresh_alarms`, `alarms = []`, "alarm_specification"},
		{"a rule not waited for", "    aws_vpc_security_group_egress_rule.https,\n", "", "aws_vpc_security_group_egress_rule.https"},
		{"endpoints not waited for", `alltrue([for id in var.boot_dependencies : id != null && id != ""])`, `true`, "var.boot_dependencies"},
		{"latest image", `image_id               = var.ami_id`, `image_id               = data.aws_ami.this.id`, "image_id is data.aws_ami.this.id"},
		{"an SSM lookup", `data "aws_ec2_instance_type" "this" {`, "data \"aws_ssm_parameter\" \"ami\" {\n  name = \"/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64\"\n}\n\ndata \"aws_ec2_instance_type\" \"this\" {", "aws_ssm_parameter.ami"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.old) {
				t.Fatalf("the fleet module no longer has %q", tc.old)
			}
			c := parse(t, "main.tf", strings.Replace(good, tc.old, tc.new, 1))
			wantProblems(t, checkFleetGroup(c), tc.want)
		})
	}
}

// fleetRegion returns the region a fleet instance runs in.
func fleetRegion(in *instance) string { return in.vars["region"].AsString() }

// capacityOf reads a capacity object.
func capacityOf(v cty.Value) (min, desired, max int64) {
	get := func(k string) int64 { n, _ := v.GetAttr(k).AsBigFloat().Int64(); return n }
	return get("min"), get("desired"), get("max")
}

// fleetKey names a fleet of example.tfvars' fleets by its service.
var fleetKey = map[string]string{"generator": "generator", "public-id": "public_id", "public-id-gateway": "gateway", "registry": "registry"}

// TestFleetsFromTfvars: every fleet of the roots runs its region's pinned image and the capacity
// example.tfvars gives it (min <= desired <= max); every region of the topology has an image.
func TestFleetsFromTfvars(t *testing.T) {
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	fleetsVar := tfvars["fleets"]
	for region := range topologyNumbers(t) {
		if !fleetsVar.Type().HasAttribute(region) {
			t.Errorf("example.tfvars: fleets has no entry for %s (its pinned image)", region)
		}
	}
	n := 0
	for _, root := range evaluated(t) {
		if !strings.HasPrefix(root.dir, liveDir+"/") {
			continue
		}
		root.walk(func(in *instance) {
			if in.dir != filepath.Clean(fleetDir) {
				return
			}
			n++
			region, service := fleetRegion(in), in.vars["service"].AsString()
			want := fleetsVar.GetAttr(region)
			if got := in.vars["ami_id"].AsString(); got != want.GetAttr("ami_id").AsString() {
				t.Errorf("%s: ami_id %s, want %s's pinned %s", in.addr, got, region, want.GetAttr("ami_id").AsString())
			}
			min, desired, max := capacityOf(in.vars["capacity"])
			if min > desired || desired > max {
				t.Errorf("%s: capacity %d/%d/%d", in.addr, min, desired, max)
			}
			if want.Type().HasAttribute(fleetKey[service]) {
				wmin, wdesired, wmax := capacityOf(want.GetAttr(fleetKey[service]))
				if min != wmin || desired != wdesired || max != wmax {
					t.Errorf("%s: capacity %d/%d/%d, want example.tfvars' %d/%d/%d", in.addr, min, desired, max, wmin, wdesired, wmax)
				}
			}
			for _, p := range failedPreconditions(in, "aws_launch_template", "this", "arm64") {
				t.Errorf("%s: %s", in.addr, p)
			}
		})
	}
	if want := 1 + 3*len(regionRootDirs); n != want {
		t.Errorf("%d fleets in the roots, want %d", n, want)
	}
}

// TestFleetInputsCatch: the fleet module refuses a capacity out of order, an AMI ID that is not
// one, no alarm for the instance refresh; and an image of another architecture fails the plan.
func TestFleetInputsCatch(t *testing.T) {
	base := fleetBase()
	for _, tc := range []struct {
		name  string
		input map[string]cty.Value
		want  string
	}{
		{"desired above max", map[string]cty.Value{"capacity": capacityVal(2, 4, 3)}, "min <= desired <= max"},
		{"not an AMI", map[string]cty.Value{"ami_id": cty.StringVal("al2023-latest")}, "must be an AMI ID"},
		{"no alarms", map[string]cty.Value{"refresh_alarms": cty.ListValEmpty(cty.String)}, "refresh_alarms must name at least one alarm"},
		{"checkpoints not ending at 100", map[string]cty.Value{"refresh_checkpoints": cty.ListVal([]cty.Value{cty.NumberIntVal(50), cty.NumberIntVal(20)})}, "refresh_checkpoints must be increasing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := evalModule(fleetDir, "module.fleet", withInputs(base, tc.input), awsSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			wantProblems(t, in.problems, tc.want)
		})
	}
	t.Run("x86_64 image", func(t *testing.T) {
		defer func(a string) { standInArch = a }(standInArch)
		standInArch = "x86_64"
		in, err := evalModule(fleetDir, "module.fleet", base, awsSchema(t))
		if err != nil {
			t.Fatal(err)
		}
		wantProblems(t, failedPreconditions(in, "aws_launch_template", "this", "arm64"), "is a x86_64 image, not arm64")
	})
}

func capacityVal(min, desired, max int64) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"min": cty.NumberIntVal(min), "desired": cty.NumberIntVal(desired), "max": cty.NumberIntVal(max)})
}

// fleetBase are the inputs of a small fleet evaluated on its own.
func fleetBase() map[string]cty.Value {
	return map[string]cty.Value{
		"name": cty.StringVal("idgen-x"), "service": cty.StringVal("registry"), "region": cty.StringVal("us-east-1"),
		"service_args":                cty.ListVal([]cty.Value{cty.StringVal("--listen"), cty.StringVal("0.0.0.0:443")}),
		"artifact_s3_uri":             cty.StringVal("s3://b-us-east-1/bin/registry"),
		"policy_json":                 cty.StringVal("{}"),
		"vpc_id":                      cty.StringVal("vpc-1"),
		"vpc_cidr":                    cty.StringVal("10.0.0.0/16"),
		"subnet_ids":                  cty.ListVal([]cty.Value{cty.StringVal("subnet-a"), cty.StringVal("subnet-b")}),
		"caller_cidrs":                cty.ListVal([]cty.Value{cty.StringVal("10.0.0.0/16")}),
		"endpoints_security_group_id": cty.StringVal("sg-endpoints"),
		"instance_type":               cty.StringVal("c7g.large"),
		"capacity":                    capacityVal(2, 2, 3),
		"ami_id":                      cty.StringVal("ami-0123456789abcdef0"),
		"refresh_alarms":              cty.ListVal([]cty.Value{cty.StringVal("idgen-x-unhealthy-hosts")}),
		"target_group_name":           cty.StringVal("idgen-x"),
		"zone_id":                     cty.StringVal("Z1"),
		"dns_name":                    cty.StringVal("x.idgen.internal"),
	}
}

func withInputs(base, extra map[string]cty.Value) map[string]cty.Value {
	out := map[string]cty.Value{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// TestRefreshAlarms: every fleet's instance refresh is gated on alarms of the module that calls
// it (the region's generator alarms, the public-ID fleets' own, the registry's), each of them an
// alarm that module makes.
func TestRefreshAlarms(t *testing.T) {
	n := 0
	for _, root := range evaluated(t) {
		root.walk(func(parent *instance) {
			for _, in := range parent.children {
				if in.dir != filepath.Clean(fleetDir) || strings.HasPrefix(parent.dir, "modules/fleet/examples") {
					continue
				}
				n++
				alarms := map[string]bool{}
				for _, b := range parent.cfg.blocks("resource", "aws_cloudwatch_metric_alarm") {
					alarms[parent.addr+".aws_cloudwatch_metric_alarm."+b.Labels[1]+".alarm_name"] = true
				}
				v := in.vars["refresh_alarms"]
				if !v.IsWhollyKnown() || v.LengthInt() == 0 {
					t.Errorf("%s: no refresh alarms", in.addr)
					continue
				}
				for it := v.ElementIterator(); it.Next(); {
					_, a := it.Element()
					if !alarms[a.AsString()] {
						t.Errorf("%s: refresh alarm %s is not an alarm of %s", in.addr, a.AsString(), parent.dir)
					}
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no fleet checked")
	}
}

// peakVCPUs is what a fleet of this capacity and type needs at its peak (the module's rule:
// max size plus the refresh's headroom, max_healthy_percentage 110).
func peakVCPUs(t *testing.T, maxSize int64, instanceType string) int64 {
	t.Helper()
	v, ok := instanceVCPUs[instanceType]
	if !ok {
		t.Fatalf("no stand-in vCPUs for %s", instanceType)
	}
	headroom := max(1, int64(math.Ceil(float64(maxSize)*10/100)))
	return (maxSize + headroom) * v
}

// TestVCPUQuota: each root's plan stops, before any group is created, when the region's quota
// of running On-Demand Standard vCPUs does not hold its fleets at their peak with what
// vcpus_elsewhere names; the message names the region, what is needed and the quota. Each root
// is planned with a quota of exactly its need (it passes) and one less (it fails).
func TestVCPUQuota(t *testing.T) {
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := func(key string) int64 {
		m := tfvars["vcpus_elsewhere"]
		if !m.Type().HasAttribute(key) {
			return 0
		}
		n, _ := m.GetAttr(key).AsBigFloat().Int64()
		return n
	}
	defer func(q int64) { standInQuota = q }(standInQuota)
	for _, dir := range append([]string{registryRootDir}, regionRootDirs...) {
		region, key := filepath.Base(dir), filepath.Base(dir)
		if dir == registryRootDir {
			region, key = "us-east-1", "registry"
		}
		// The fleets the root makes, from the evaluated root: the check must count every one.
		var need int64
		var checker string
		for _, root := range evaluated(t) {
			if root.dir != filepath.Clean(dir) {
				continue
			}
			root.walk(func(in *instance) {
				if in.dir != filepath.Clean(fleetDir) {
					return
				}
				_, _, max := capacityOf(in.vars["capacity"])
				need += peakVCPUs(t, max, in.vars["instance_type"].AsString())
			})
		}
		need += elsewhere(key)
		for _, tc := range []struct {
			quota int64
			fails bool
		}{{need, false}, {need - 1, true}} {
			standInQuota = tc.quota
			root := evalRoot(t, dir, tfvars, nil)
			var failed []string
			checked := 0
			root.walk(func(in *instance) {
				if in.dir != filepath.Clean(fleetDir) {
					return
				}
				checked++
				for _, p := range failedPreconditions(in, "aws_autoscaling_group", "this", "L-1216C47A") {
					failed = append(failed, p)
					checker = in.addr
				}
			})
			if checked == 0 {
				t.Fatalf("%s: no fleet", dir)
			}
			switch {
			case !tc.fails && len(failed) > 0:
				t.Errorf("%s: the quota check fails with a quota of exactly the need (%d): %q", dir, tc.quota, failed)
			case tc.fails && len(failed) == 0:
				t.Errorf("%s: with a quota of %d, one less than the %d vCPUs its fleets and vcpus_elsewhere need, no group's precondition fails", dir, tc.quota, need)
			case tc.fails:
				msg := failed[len(failed)-1]
				for _, want := range []string{region + ":", fmt.Sprintf("is %d vCPUs", tc.quota), fmt.Sprintf("but %d are needed", need)} {
					if !strings.Contains(msg, want) {
						t.Errorf("%s (%s): the quota message does not say %q: %s", dir, checker, want, msg)
					}
				}
			}
		}
	}
}

// TestBootDependencies: in a region root that makes its VPC's endpoints, every fleet's group
// waits for them (the endpoints and their security group's rule); in the home VPC, the registry
// root's fleet waits for the endpoints it makes, and the home region root's find them made.
func TestBootDependencies(t *testing.T) {
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	homeVPC := tfvars["networks"].GetAttr("us-east-1").GetAttr("vpc_id").AsString()
	for _, root := range evaluated(t) {
		if !strings.HasPrefix(root.dir, liveDir+"/") {
			continue
		}
		root.walk(func(in *instance) {
			if in.dir != filepath.Clean(fleetDir) {
				return
			}
			v := in.vars["boot_dependencies"]
			var deps []string
			for it := v.ElementIterator(); it.Next(); {
				_, d := it.Element()
				deps = append(deps, d.AsString())
			}
			ownEndpoints := root.dir == filepath.Clean(registryRootDir) || in.vars["vpc_id"].AsString() != homeVPC
			if !ownEndpoints {
				if len(deps) != 0 {
					t.Errorf("%s: boot dependencies %v in the home VPC, whose endpoints another root made", in.addr, deps)
				}
				return
			}
			for _, want := range []string{`aws_vpc_endpoint.gateway["s3"].id`, `aws_vpc_endpoint.gateway["dynamodb"].id`, `aws_vpc_endpoint.interface["ssm"].id`, "aws_vpc_security_group_ingress_rule.https.id"} {
				if !slices.ContainsFunc(deps, func(d string) bool { return strings.Contains(d, ".module.endpoints") && strings.HasSuffix(d, want) }) {
					t.Errorf("%s: the group does not wait for the VPC's %s: %v", in.addr, want, deps)
				}
			}
		})
	}
}

// TestRegistryHealthCheck: the registry is checked over HTTP on a plaintext health port that
// it serves (--health-listen, a flag the registry has), not by TCP on its mTLS port; every fleet
// with a health port listens on it.
func TestRegistryHealthCheck(t *testing.T) {
	src, err := os.ReadFile("../../services/registry/internal/config/config.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `"health-listen"`) {
		t.Fatal("the registry has no --health-listen flag")
	}
	registries := 0
	for _, in := range fleets(t) {
		hp := in.vars["health_port"]
		if in.vars["service"].AsString() == "registry" && !strings.HasPrefix(in.addr, "modules/fleet/") {
			registries++
			if hp.IsNull() {
				t.Errorf("%s: the registry has no health port: its load balancer would check TCP only, and an expired certificate stays healthy", in.addr)
				continue
			}
		}
		if hp.IsNull() || in.vars["load_balancer"].AsString() != "internal-nlb" {
			continue
		}
		port, _ := hp.AsBigFloat().Int64()
		args := in.vars["service_args"]
		var list []string
		for it := args.ElementIterator(); it.Next(); {
			_, a := it.Element()
			list = append(list, a.AsString())
		}
		if i := slices.Index(list, "--health-listen"); i < 0 || i+1 >= len(list) || list[i+1] != fmt.Sprintf("0.0.0.0:%d", port) {
			t.Errorf("%s: the load balancer checks HTTP on %d, but the service is not given --health-listen 0.0.0.0:%d: %v", in.addr, port, port, list)
		}
	}
	if registries != 2 {
		t.Errorf("%d registry fleets checked, want 2 (the registry root's and the example's)", registries)
	}
}

var (
	retryFunc    = regexp.MustCompile(`(?s)\nretry\(\) \{\n.*?\n\}\n`)
	backoffBlock = regexp.MustCompile(`(?s)cat > /usr/local/sbin/idgen-restart-backoff <<'BACKOFF'\n(.*?)\nBACKOFF\n`)
	awsCall      = regexp.MustCompile(`(?m)^(.*)\baws --region `)
)

// checkBootRetries: every AWS call of the boot script outside the refresher (the S3 copies, the
// SSM reads) and the refresher's first run go through retry; the unit is restarted whenever it
// exits, never given up on, with the backoff before each start.
func checkBootRetries(script string) []string {
	var problems []string
	if !retryFunc.MatchString(script) {
		problems = append(problems, "no retry function")
	}
	outside := refresherBlock.ReplaceAllString(script, "")
	for _, m := range awsCall.FindAllStringSubmatch(outside, -1) {
		if !strings.Contains(m[1], "retry ") {
			problems = append(problems, "an AWS call at boot without retry: "+strings.TrimSpace(m[0]))
		}
	}
	if strings.Contains(script, "idgen-cert-refresh <<'REFRESH'") && !regexp.MustCompile(`(?m)^retry "[^"]*" /usr/local/sbin/idgen-cert-refresh `).MatchString(script) {
		problems = append(problems, "the refresher's first run is not retried")
	}
	var unit []string
	for _, m := range regexp.MustCompile(`(?s)cat > /etc/systemd/system/(idgen-[a-z-]+)\.service <<'UNIT'\n(.*?)\nUNIT\n`).FindAllStringSubmatch(script, -1) {
		if m[1] != "idgen-cert-refresh" {
			unit = m
		}
	}
	if unit == nil {
		return append(problems, "no service unit")
	}
	for _, want := range []string{"Restart=always", "StartLimitIntervalSec=0", "ExecStartPre=+/usr/local/sbin/idgen-restart-backoff "} {
		if !strings.Contains(unit[2], "\n"+want) {
			problems = append(problems, fmt.Sprintf("the unit has no %s", want))
		}
	}
	if !backoffBlock.MatchString(script) {
		problems = append(problems, "no idgen-restart-backoff script")
	}
	return problems
}

func TestBootRetries(t *testing.T) {
	scripts := renderedUserData(t)
	for addr, script := range scripts {
		for _, p := range checkBootRetries(script) {
			t.Errorf("%s: %s", addr, p)
		}
	}
	var script string
	for _, s := range scripts {
		if strings.Contains(s, "idgen-cert-refresh <<'REFRESH'") {
			script = s
			break
		}
	}
	if script == "" {
		t.Fatal("no fleet with certificate files")
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"a bare copy", "retry \"copying ", "true \"copying ", "without retry"},
		{"the refresher's first run", "retry \"fetching the certificate files\" /usr/local/sbin/idgen-cert-refresh", "/usr/local/sbin/idgen-cert-refresh", "not retried"},
		{"a unit that gives up", "StartLimitIntervalSec=0\n", "", "StartLimitIntervalSec=0"},
		{"no backoff", "ExecStartPre=+/usr/local/sbin/idgen-restart-backoff ", "ExecStartPre=/bin/true ", "idgen-restart-backoff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(script, tc.old) {
				t.Fatalf("the boot script has no %q", tc.old)
			}
			wantProblems(t, checkBootRetries(strings.Replace(script, tc.old, tc.new, 1)), tc.want)
		})
	}

	// The retry function, run: a command that fails twice then succeeds is tried three times with
	// 2 s and 4 s between; one that never succeeds is tried 20 times, the waits doubling to 60 s.
	fn := retryFunc.FindString(script)
	dir := t.TempDir()
	run := func(body string) (string, error) {
		cmd := exec.Command("bash", "-c", "set -euo pipefail\nsleep() { echo \"sleep $1\" >>"+filepath.Join(dir, "sleeps")+"; }\n"+fn+body)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		sleeps, _ := os.ReadFile(filepath.Join(dir, "sleeps"))
		os.Remove(filepath.Join(dir, "sleeps"))
		return string(out) + "--\n" + string(sleeps), err
	}
	out, err := run(`n=0; flaky() { n=$((n + 1)); [ "$n" -ge 3 ]; }; retry "copying x" flaky; echo "tries $n"`)
	if err != nil || !strings.Contains(out, "tries 3") || !strings.HasSuffix(out, "--\nsleep 2\nsleep 4\n") || !strings.Contains(out, "copying x failed (try 2 of 20)") {
		t.Errorf("a command failing twice: %v\n%s", err, out)
	}
	out, err = run(`retry "copying y" false || echo "gave up"`)
	want := "--\nsleep 2\nsleep 4\nsleep 8\nsleep 16\nsleep 32\n" + strings.Repeat("sleep 60\n", 15)
	if err != nil || !strings.Contains(out, "gave up") || !strings.HasSuffix(out, want) {
		t.Errorf("a command that never succeeds: %v\n%s", err, out)
	}

	// The restart backoff, run: nothing at the first start, 2, 4, … 60 s for starts that follow
	// within 10 minutes of the one before, nothing again after a run of 10 minutes.
	backoff := backoffBlock.FindStringSubmatch(script)[1]
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "sleep"), []byte("#!/bin/sh\necho \"slept $1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "idgen-restart-backoff"), []byte(backoff+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	now := int64(1_800_000_000)
	start := func() string {
		cmd := exec.Command(filepath.Join(bin, "idgen-restart-backoff"), "idgen-generator")
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "IDGEN_BACKOFF_DIR="+state, fmt.Sprintf("IDGEN_NOW=%d", now))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("idgen-restart-backoff: %v\n%s", err, out)
		}
		return regexp.MustCompile(`slept (\d+)`).FindString(string(out))
	}
	var got []string
	for range 8 {
		s := start()
		got = append(got, s)
		now += 5 // the service fails within seconds of each start
		if d := strings.TrimPrefix(s, "slept "); d != "" {
			var n int64
			fmt.Sscan(d, &n)
			now += n
		}
	}
	now += 700 // then it runs for more than 10 minutes before it exits
	got = append(got, start())
	if want := []string{"", "slept 2", "slept 4", "slept 8", "slept 16", "slept 32", "slept 60", "slept 60", ""}; !slices.Equal(got, want) {
		t.Errorf("restart waits %q, want %q", got, want)
	}
}

// TestLeaseRulesNotApplied: no configuration writes a lease table's metadata row: the row names
// the table's DynamoDB TableId, which aws_dynamodb_table does not expose (so an item written by
// Terraform would name none, and read as a restored table), and idgenctl leases init, which
// writes it, also checks that the table is new and records the rules in the history. The hosts
// wait for it instead (the keeper retries its claims, unready; systemd restarts what exits).
func TestLeaseRulesNotApplied(t *testing.T) {
	s := awsSchema(t)
	table := s.Resources["aws_dynamodb_table"]
	if table == nil {
		t.Fatal("no aws_dynamodb_table in the schema")
	}
	for _, a := range table.AttrNames() {
		if strings.Contains(a, "table_id") {
			t.Errorf("aws_dynamodb_table has %s now: the apply could write the lease table's metadata row as idgenctl leases init does", a)
		}
	}
	for _, dir := range configDirs {
		c := parseDir(t, dir)
		for _, b := range c.blocks("resource", "aws_dynamodb_table_item") {
			t.Errorf("%s: aws_dynamodb_table_item.%s: a lease table's metadata row is idgenctl leases init's to write", dir, b.Labels[1])
		}
	}
}
