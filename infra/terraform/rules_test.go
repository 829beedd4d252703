package terraform

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/idgen/idgen/infra/providerschema"
)

// sgRule is one security group rule as EC2 sees it.
type sgRule struct {
	addr, kind, group, proto string
	from, to                 int64
	// dest is the other side: "cidr 10.0.0.0/16", "cidr6 ::/0", "prefix-list …" or "security-group …".
	dest string
}

func (r sgRule) String() string {
	return fmt.Sprintf("%s: %s %s %d-%d %s", r.addr, r.kind, r.proto, r.from, r.to, r.dest)
}

// ruleTypes are the rule resources and the direction each is.
var ruleTypes = map[string]string{
	"aws_vpc_security_group_ingress_rule": "ingress",
	"aws_vpc_security_group_egress_rule":  "egress",
}

// rulesOf evaluates every security group rule resource of an instance, each instance of it (for
// each, count) with its own each or count.
func rulesOf(in *instance) ([]sgRule, []string) {
	var rules []sgRule
	var problems []string
	for _, b := range in.cfg.blocks("resource", "") {
		kind, ok := ruleTypes[b.Labels[0]]
		if !ok {
			continue
		}
		addr := in.addr + "." + b.Labels[0] + "." + b.Labels[1]
		type inst struct {
			addr  string
			extra map[string]cty.Value
		}
		var insts []inst
		switch {
		case b.Body.Attributes["for_each"] != nil:
			fe := in.value(b.Body.Attributes["for_each"].Expr, nil, "")
			if !fe.IsWhollyKnown() || fe.IsNull() || !fe.CanIterateElements() {
				problems = append(problems, addr+": for_each is not known at plan time")
				continue
			}
			for it := fe.ElementIterator(); it.Next(); {
				k, v := it.Element()
				if fe.Type().IsSetType() {
					k = v
				}
				insts = append(insts, inst{fmt.Sprintf("%s[%q]", addr, k.AsString()),
					map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})}})
			}
		case b.Body.Attributes["count"] != nil:
			n := in.value(b.Body.Attributes["count"].Expr, nil, "")
			var c int64
			if !n.IsKnown() || n.IsNull() || gocty.FromCtyValue(n, &c) != nil {
				problems = append(problems, addr+": count is not known at plan time")
				continue
			}
			for i := range c {
				insts = append(insts, inst{fmt.Sprintf("%s[%d]", addr, i),
					map[string]cty.Value{"count": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(i)})}})
			}
		default:
			insts = append(insts, inst{addr, nil})
		}
		for _, i := range insts {
			r, err := evalRule(in, b, i.addr, kind, i.extra)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			rules = append(rules, r)
		}
	}
	return rules, problems
}

func evalRule(in *instance, b *hclsyntax.Block, addr, kind string, extra map[string]cty.Value) (sgRule, error) {
	r := sgRule{addr: addr, kind: kind}
	str := func(name string) (string, error) {
		a := b.Body.Attributes[name]
		if a == nil {
			return "", nil
		}
		v := in.value(a.Expr, extra, "")
		switch {
		case !v.IsKnown():
			return "", fmt.Errorf("%s: %s is not known at plan time", addr, name)
		case v.IsNull():
			return "", nil
		}
		v, err := convertString(v)
		if err != nil {
			return "", fmt.Errorf("%s: %s: %v", addr, name, err)
		}
		return v.AsString(), nil
	}
	num := func(name string) (int64, error) {
		s, err := str(name)
		if err != nil || s == "" {
			return -1, err
		}
		var n int64
		_, err = fmt.Sscan(s, &n)
		return n, err
	}
	var err error
	if r.group, err = str("security_group_id"); err != nil {
		return r, err
	}
	if r.proto, err = str("ip_protocol"); err != nil {
		return r, err
	}
	if r.from, err = num("from_port"); err != nil {
		return r, err
	}
	if r.to, err = num("to_port"); err != nil {
		return r, err
	}
	var dests []string
	for attr, prefix := range map[string]string{"cidr_ipv4": "cidr", "cidr_ipv6": "cidr6", "prefix_list_id": "prefix-list", "referenced_security_group_id": "security-group"} {
		s, err := str(attr)
		if err != nil {
			return r, err
		}
		if s == "" {
			continue
		}
		if prefix == "cidr" || prefix == "cidr6" {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return r, fmt.Errorf("%s: %s %q is not a CIDR", addr, attr, s)
			}
			s = p.Masked().String()
		}
		dests = append(dests, prefix+" "+s)
	}
	if len(dests) != 1 {
		return r, fmt.Errorf("%s: has %d destinations (%v), want exactly one", addr, len(dests), dests)
	}
	r.dest = dests[0]
	return r, nil
}

func convertString(v cty.Value) (cty.Value, error) {
	if v.Type() == cty.Number {
		return cty.StringVal(v.AsBigFloat().Text('f', -1)), nil
	}
	if v.Type() != cty.String {
		return v, fmt.Errorf("a %s, not a string", v.Type().FriendlyName())
	}
	return v, nil
}

// checkRules: no two rules of one security group are the same rule for EC2 (same direction,
// protocol, ports and other side: InvalidPermission.Duplicate), and no rule opens to the whole
// internet (0.0.0.0/0 or ::/0).
func checkRules(rules []sgRule) []string {
	var problems []string
	seen := map[string]string{}
	for _, r := range rules {
		key := fmt.Sprintf("%s|%s|%s|%d|%d|%s", r.group, r.kind, r.proto, r.from, r.to, r.dest)
		if prev, ok := seen[key]; ok {
			problems = append(problems, fmt.Sprintf("%s duplicates %s: EC2 refuses it (InvalidPermission.Duplicate)", r, prev))
		}
		seen[key] = r.addr
		if strings.HasSuffix(r.dest, "/0") {
			problems = append(problems, fmt.Sprintf("%s: open to the whole internet", r))
		}
	}
	return problems
}

// checkFleetRules: a fleet instance's rules admit every caller on the service port and the VPC
// (the load balancer's health checks) on the health port, and let out HTTPS to exactly the
// gateway prefix lists, the endpoints' security group and the peers.
func checkFleetRules(in *instance, rules []sgRule) []string {
	var problems []string
	str := func(name string) string {
		v := in.vars[name]
		if !v.IsKnown() || v.IsNull() {
			return ""
		}
		if s, err := convertString(v); err == nil {
			return s.AsString()
		}
		return ""
	}
	list := func(name string) []string {
		var out []string
		v := in.vars[name]
		if !v.IsWhollyKnown() || v.IsNull() {
			problems = append(problems, fmt.Sprintf("%s: var.%s is not known", in.addr, name))
			return nil
		}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, e.AsString())
		}
		return out
	}
	canon := func(c string) string {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return c
		}
		return p.Masked().String()
	}
	has := func(kind string, port string, dest string) bool {
		return slices.ContainsFunc(rules, func(r sgRule) bool {
			return r.kind == kind && r.proto == "tcp" && fmt.Sprint(r.from) == port && fmt.Sprint(r.to) == port && r.dest == dest
		})
	}
	service := str("service_port")
	health := str("health_port")
	if health == "" {
		health = service
	}
	for _, c := range list("caller_cidrs") {
		if !has("ingress", service, "cidr "+canon(c)) {
			problems = append(problems, fmt.Sprintf("%s: caller %s is not admitted on port %s", in.addr, c, service))
		}
	}
	// Callers admitted by their security group (a load balancer that does not preserve client
	// addresses), and peers called on their own port by theirs.
	groups := func(name string) map[string]cty.Value {
		v := in.vars[name]
		if !v.IsWhollyKnown() || v.IsNull() {
			problems = append(problems, fmt.Sprintf("%s: var.%s is not known", in.addr, name))
			return nil
		}
		return v.AsValueMap()
	}
	for k, g := range groups("caller_security_groups") {
		if !has("ingress", service, "security-group "+g.AsString()) {
			problems = append(problems, fmt.Sprintf("%s: caller %s (%s) is not admitted on port %s", in.addr, k, g.AsString(), service))
		}
	}
	if !has("ingress", health, "cidr "+canon(str("vpc_cidr"))) {
		problems = append(problems, fmt.Sprintf("%s: the health checks from %s are not admitted on port %s", in.addr, str("vpc_cidr"), health))
	}
	// Egress, each as "port destination": HTTPS to the endpoints, the gateway prefix lists and the
	// peers, and each declared peer on its own port.
	want := []string{"443 security-group " + str("endpoints_security_group_id")}
	for _, svc := range []string{"dynamodb", "s3"} {
		want = append(want, fmt.Sprintf("443 prefix-list %s.data.aws_ec2_managed_prefix_list.gateway[%q].id", in.addr, svc))
	}
	for _, c := range list("peer_cidrs") {
		if !slices.Contains(want, "443 cidr "+canon(c)) {
			want = append(want, "443 cidr "+canon(c))
		}
	}
	for _, p := range groups("egress_peers") {
		port, _ := convertString(p.GetAttr("port"))
		if g := p.GetAttr("security_group_id"); !g.IsNull() {
			want = append(want, port.AsString()+" security-group "+g.AsString())
		} else {
			want = append(want, port.AsString()+" cidr "+canon(p.GetAttr("cidr_ipv4").AsString()))
		}
	}
	var egress []string
	for _, r := range rules {
		if r.kind == "egress" {
			if r.proto != "tcp" || r.from != r.to {
				problems = append(problems, fmt.Sprintf("%s: egress other than one TCP port", r))
			}
			egress = append(egress, fmt.Sprintf("%d %s", r.from, r.dest))
		}
	}
	slices.Sort(want)
	slices.Sort(egress)
	if !slices.Equal(egress, want) {
		problems = append(problems, fmt.Sprintf("%s: egress to %q, want %q", in.addr, egress, want))
	}
	return problems
}

// fleetsOf evaluates a configuration from its literal inputs and returns its fleet instances.
func fleetsOf(t *testing.T, s *providerschema.Schema, dir string, inputs map[string]cty.Value, fleet string) []*instance {
	t.Helper()
	root, err := evalModule(dir, dir, inputs, s)
	if err != nil {
		t.Fatal(err)
	}
	var fleets []*instance
	root.walk(func(in *instance) {
		for _, p := range in.problems {
			t.Error(p)
		}
		if in.dir == filepath.Clean(fleet) {
			fleets = append(fleets, in)
		}
	})
	return fleets
}

// evaluatedConfigs are the registry root and every region root (from example.tfvars) and every
// example, evaluated once for the tests that read them.
var evaluatedConfigs = struct {
	sync.Once
	roots []*instance
	err   error
}{}

func evaluated(t *testing.T) []*instance {
	t.Helper()
	s := awsSchema(t)
	evaluatedConfigs.Do(func() {
		tfvars, err := readTfvars(exampleTfvars)
		if err != nil {
			evaluatedConfigs.err = err
			return
		}
		for _, dir := range append(append([]string{registryRootDir}, regionRootDirs...), exampleDirs...) {
			inputs := map[string]cty.Value{}
			if strings.HasPrefix(dir, liveDir+"/") {
				m, err := loadModule(dir)
				if err != nil {
					evaluatedConfigs.err = err
					return
				}
				for name := range m.Variables {
					if v, ok := tfvars[name]; ok {
						inputs[name] = v
					}
				}
			}
			root, err := evalModule(dir, dir, inputs, s)
			if err != nil {
				evaluatedConfigs.err = err
				return
			}
			evaluatedConfigs.roots = append(evaluatedConfigs.roots, root)
		}
	})
	if evaluatedConfigs.err != nil {
		t.Fatal(evaluatedConfigs.err)
	}
	return evaluatedConfigs.roots
}

// fleets returns the fleet instances of the evaluated configurations.
func fleets(t *testing.T) []*instance {
	t.Helper()
	var out []*instance
	for _, root := range evaluated(t) {
		root.walk(func(in *instance) {
			if in.dir == filepath.Clean(fleetDir) {
				out = append(out, in)
			}
		})
	}
	return out
}

// TestEvaluate: the roots (from example.tfvars) and the examples evaluate from their literal
// inputs: every variable's validation passes, and every local, module argument and output that
// does not come from AWS is known.
func TestEvaluate(t *testing.T) {
	for _, root := range evaluated(t) {
		root.walk(func(in *instance) {
			for _, p := range in.problems {
				t.Error(p)
			}
		})
	}
}

// TestFleetRules evaluates the fleet module's rules for every fleet instance of every root of
// live (from example.tfvars) and of every example: no duplicate rule, nothing open to the
// internet, every caller and the health checks admitted, HTTPS out to exactly what the hosts call.
func TestFleetRules(t *testing.T) {
	all := fleets(t)
	for _, in := range all {
		rules, problems := rulesOf(in)
		problems = append(problems, checkRules(rules)...)
		problems = append(problems, checkFleetRules(in, rules)...)
		for _, p := range problems {
			t.Error(p)
		}
		t.Logf("%s: %d rules", in.addr, len(rules))
	}
	// The registry, five regions with their two public-ID fleets each, the fleet, region and
	// registry examples, and the public-ID example's two fleets.
	if want := 1 + 3*len(regionRootDirs) + 3 + 2; len(all) != want {
		t.Errorf("%d fleet instances evaluated, want %d", len(all), want)
	}
}

// TestFleetRulesInputs runs the fleet module on inputs chosen to collide: the VPC among the
// callers with TCP health checks on the service port (the registry's case), the same network
// spelt twice, a caller spelt off its network boundary, peers that repeat; and an HTTP health
// port.
func TestFleetRulesInputs(t *testing.T) {
	s := awsSchema(t)
	base := map[string]cty.Value{
		"name": cty.StringVal("idgen-x"), "service": cty.StringVal("registry"), "region": cty.StringVal("us-east-1"),
		"service_args":                cty.ListVal([]cty.Value{cty.StringVal("--listen"), cty.StringVal("0.0.0.0:443")}),
		"artifact_s3_uri":             cty.StringVal("s3://b-us-east-1/bin/registry"),
		"policy_json":                 cty.StringVal("{}"),
		"vpc_id":                      cty.StringVal("vpc-1"),
		"vpc_cidr":                    cty.StringVal("10.0.0.0/16"),
		"subnet_ids":                  cty.ListVal([]cty.Value{cty.StringVal("subnet-a"), cty.StringVal("subnet-b")}),
		"endpoints_security_group_id": cty.StringVal("sg-endpoints"),
		"capacity":                    cty.ObjectVal(map[string]cty.Value{"min": cty.NumberIntVal(2), "desired": cty.NumberIntVal(2), "max": cty.NumberIntVal(3)}),
		"ami_id":                      cty.StringVal("ami-0123456789abcdef0"),
		"refresh_alarms":              cty.ListVal([]cty.Value{cty.StringVal("idgen-x-unhealthy-hosts")}),
		"target_group_name":           cty.StringVal("idgen-x"),
		"zone_id":                     cty.StringVal("Z1"),
		"dns_name":                    cty.StringVal("x.idgen.internal"),
	}
	strs := func(ss ...string) cty.Value {
		var vs []cty.Value
		for _, s := range ss {
			vs = append(vs, cty.StringVal(s))
		}
		return cty.ListVal(vs)
	}
	for _, tt := range []struct {
		name   string
		inputs map[string]cty.Value
		rules  int
	}{
		{"registry: the VPC calls, TCP health checks on 443", map[string]cty.Value{"caller_cidrs": strs("10.0.0.0/16")}, 1 + 3},
		{"one network spelt three ways", map[string]cty.Value{"caller_cidrs": strs("10.0.0.0/16", "10.0.0.0/16", "10.0.7.9/16", "10.9.0.0/16")}, 2 + 3},
		{"HTTP health port", map[string]cty.Value{"caller_cidrs": strs("10.0.0.0/16"), "health_port": cty.NumberIntVal(8081)}, 2 + 3},
		{"health port equal to the service port", map[string]cty.Value{"caller_cidrs": strs("10.1.0.0/16"), "health_port": cty.NumberIntVal(443)}, 2 + 3},
		{"peers that repeat", map[string]cty.Value{"caller_cidrs": strs("10.0.0.0/16"), "peer_cidrs": strs("10.1.0.0/16", "10.1.3.0/16", "10.2.0.0/16")}, 1 + 3 + 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inputs := map[string]cty.Value{}
			for k, v := range base {
				inputs[k] = v
			}
			for k, v := range tt.inputs {
				inputs[k] = v
			}
			in, err := evalModule(fleetDir, "module.fleet", inputs, s)
			if err != nil {
				t.Fatal(err)
			}
			wantProblems(t, in.problems)
			rules, problems := rulesOf(in)
			problems = append(problems, checkRules(rules)...)
			problems = append(problems, checkFleetRules(in, rules)...)
			wantProblems(t, problems)
			if len(rules) != tt.rules {
				t.Errorf("%d rules, want %d: %v", len(rules), tt.rules, rules)
			}
		})
	}
	// The variables refuse the whole internet as a caller or a peer.
	for _, bad := range []map[string]cty.Value{
		{"caller_cidrs": strs("0.0.0.0/0")},
		{"caller_cidrs": strs("10.0.0.0/16"), "peer_cidrs": strs("0.0.0.0/0")},
		{"caller_cidrs": strs("::/0")},
	} {
		inputs := map[string]cty.Value{}
		for k, v := range base {
			inputs[k] = v
		}
		for k, v := range bad {
			inputs[k] = v
		}
		in, err := evalModule(fleetDir, "module.fleet", inputs, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(in.problems) != 1 || !strings.Contains(in.problems[0], "none of them /0") {
			t.Errorf("%v: problems %q, want the variable's validation to refuse it", bad, in.problems)
		}
	}
}

// TestFleetRulesCatch runs the checks on the rules as they were before one rule per source: the
// registry's callers include its VPC, whose TCP health checks on 443 made the identical rule, and
// HTTPS went out to everywhere.
func TestFleetRulesCatch(t *testing.T) {
	s := awsSchema(t)
	dir := t.TempDir()
	files := map[string]string{
		"fleet/main.tf": `variable "caller_cidrs" { type = list(string) }
variable "vpc_cidr" { type = string }
variable "service_port" {
  type    = number
  default = 443
}
variable "health_port" {
  type    = number
  default = null
}
resource "aws_security_group" "this" {}
resource "aws_vpc_security_group_ingress_rule" "service" {
  for_each          = toset(var.caller_cidrs)
  security_group_id = aws_security_group.this.id
  ip_protocol       = "tcp"
  from_port         = var.service_port
  to_port           = var.service_port
  cidr_ipv4         = each.value
}
resource "aws_vpc_security_group_ingress_rule" "health" {
  security_group_id = aws_security_group.this.id
  ip_protocol       = "tcp"
  from_port         = coalesce(var.health_port, var.service_port)
  to_port           = coalesce(var.health_port, var.service_port)
  cidr_ipv4         = var.vpc_cidr
}
resource "aws_vpc_security_group_egress_rule" "https" {
  security_group_id = aws_security_group.this.id
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}
`,
		"root/main.tf": `module "fleet" {
  source       = "../fleet"
  caller_cidrs = ["10.0.0.0/8", "10.0.0.0/16"]
  vpc_cidr     = "10.0.0.0/16"
  health_port  = null
}
`,
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
	fleets := fleetsOf(t, s, filepath.Join(dir, "root"), nil, filepath.Join(dir, "fleet"))
	if len(fleets) != 1 {
		t.Fatalf("%d fleet instances", len(fleets))
	}
	rules, problems := rulesOf(fleets[0])
	wantProblems(t, problems)
	wantProblems(t, checkRules(rules),
		`aws_vpc_security_group_ingress_rule.health: ingress tcp 443-443 cidr 10.0.0.0/16 duplicates `+filepath.Join(dir, "root")+`.module.fleet.aws_vpc_security_group_ingress_rule.service["10.0.0.0/16"]`,
		"aws_vpc_security_group_egress_rule.https: egress tcp 443-443 cidr 0.0.0.0/0: open to the whole internet")
}
