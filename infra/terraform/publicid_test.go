package terraform

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// The public-ID programs' contract with the hosts' boot script: where their store file is, the
// ports they listen on, the variables their Redis URLs come in.
const (
	storeFile   = "/etc/idgen/public-id/regions.json"
	storeFlag   = "--store regions:" + storeFile
	serviceEnv  = "/etc/idgen/service.env"
	gatewayPort = "8080"
	metricsPort = "9090"
)

// storeDoc is the store file the programs read.
type storeDoc struct {
	Region  string `json:"region"`
	Copies  int    `json:"copies"`
	Regions []struct {
		Name     string `json:"name"`
		Number   int    `json:"number"`
		Peer     string `json:"peer"`
		Endpoint string `json:"endpoint"`
		Table    string `json:"table"`
		Absent   bool   `json:"absent"`
	} `json:"regions"`
}

// topologyNumbers reads the numbers of the topology module's regions variable's default.
func topologyNumbers(t *testing.T) map[string]int {
	t.Helper()
	vars := parseDir(t, topologyDir).blocks("variable", "regions")
	v, err := literal(vars[0], "default")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for it := v.ElementIterator(); it.Next(); {
		k, r := it.Element()
		n, _ := r.GetAttr("number").AsBigFloat().Int64()
		out[k.AsString()] = int(n)
	}
	return out
}

// publicIDInstances returns the evaluated public-ID module instances of every root and example.
func publicIDInstances(t *testing.T) []*instance {
	t.Helper()
	var out []*instance
	for _, root := range evaluated(t) {
		root.walk(func(in *instance) {
			if in.dir == filepath.Clean(publicIDDir) {
				out = append(out, in)
			}
		})
	}
	if want := len(regionRootDirs) + 1; len(out) != want {
		t.Errorf("%d public-ID instances evaluated, want %d (five region roots and the example)", len(out), want)
	}
	return out
}

// childOf returns the instance of module call name below in.
func childOf(in *instance, name string) *instance {
	for _, c := range in.children {
		if c.addr == in.addr+".module."+name {
			return c
		}
	}
	return nil
}

var (
	inlineFile = regexp.MustCompile(`(?s)cat > '` + regexp.QuoteMeta(storeFile) + `' <<'IDGEN_FILE'\n(.*?)\nIDGEN_FILE\n`)
	execStart  = regexp.MustCompile(`(?m)^ExecStart=(/opt/idgen/bin/.*)$`)
	envLine    = regexp.MustCompile(`(?m)^printf '%s\\n' '(IDGEN_[A-Z_]+)=([^']*)'"\$secret"'([^']*)' >>` + regexp.QuoteMeta(serviceEnv) + `$`)
)

// TestPublicIDStoreFile: both public-ID fleets of every region root and of the example write the
// same store file, of the contract's shape: the region's own name, two copies, and every region
// of the topology with its number, its peer, its DynamoDB endpoint and the table; and both
// programs are started on it.
func TestPublicIDStoreFile(t *testing.T) {
	peers, err := topologyRegions(parseDir(t, topologyDir))
	if err != nil {
		t.Fatal(err)
	}
	numbers := topologyNumbers(t)
	for _, in := range publicIDInstances(t) {
		region := in.vars["region"].AsString()
		v := in.locals["store_doc"]
		if !v.IsKnown() || v.Type() != cty.String {
			t.Errorf("%s: the store file is not known at plan time", in.addr)
			continue
		}
		var doc storeDoc
		dec := json.NewDecoder(strings.NewReader(v.AsString()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			t.Errorf("%s: the store file: %v", in.addr, err)
			continue
		}
		// The plan guard finds the region's Redis by its replication group ID's prefix
		// (infra.PublicIDCachePrefix in tools/idgenctl) and its table by name (infra.PublicIDTable).
		if got := in.locals["name"].AsString(); got != "idgen-public-id-"+region {
			t.Errorf("%s: the replication group is %q, want idgen-public-id-%s", in.addr, got, region)
		}
		if doc.Region != region || doc.Copies != 2 {
			t.Errorf("%s: region %q, copies %d; want %q and 2", in.addr, doc.Region, doc.Copies, region)
		}
		endpoints := wantEndpoints(t, in)
		var names []string
		for _, r := range doc.Regions {
			names = append(names, r.Name)
			want := fmt.Sprintf("%d %s %s %s", numbers[r.Name], peers[r.Name], endpoints[r.Name], publicIDTable)
			if got := fmt.Sprintf("%d %s %s %s", r.Number, r.Peer, r.Endpoint, r.Table); got != want {
				t.Errorf("%s: region %s is %q, want %q", in.addr, r.Name, got, want)
			}
			if notApplied := strings.HasSuffix(endpoints[r.Name], ".not-applied.invalid"); r.Absent != notApplied {
				t.Errorf("%s: region %s absent %v, want %v (absent exactly when its endpoint is not known)", in.addr, r.Name, r.Absent, notApplied)
			}
			// The hosts reach no public endpoint of DynamoDB but their own region's, through the
			// gateway endpoint, which the programs are not given: every table is named at an
			// interface endpoint.
			if publicDynamoDB.MatchString(r.Endpoint) {
				t.Errorf("%s: region %s's table is named at the public endpoint %s, which the hosts cannot reach", in.addr, r.Name, r.Endpoint)
			}
		}
		if want := sortedKeys(peers); !slices.Equal(names, want) {
			t.Errorf("%s: regions %v, want %v", in.addr, names, want)
		}
		for _, fleet := range []string{"public_id", "gateway"} {
			f := childOf(in, fleet)
			if f == nil {
				t.Errorf("%s: no module %s", in.addr, fleet)
				continue
			}
			script := f.locals["user_data"].AsString()
			m := inlineFile.FindStringSubmatch(script)
			if m == nil || m[1] != v.AsString() {
				t.Errorf("%s: the boot script does not write the store file at %s as it is", f.addr, storeFile)
			}
			if cmd := execStart.FindStringSubmatch(script); cmd == nil || !strings.Contains(cmd[1]+" ", " "+storeFlag+" ") {
				t.Errorf("%s: the unit does not start the program with %s", f.addr, storeFlag)
			}
		}
	}
}

var (
	publicDynamoDB = regexp.MustCompile(`^https://dynamodb\.[a-z0-9-]+\.amazonaws\.com`)
	// interfaceURL is a DynamoDB interface endpoint's URL: its Regional endpoint-specific name.
	interfaceURL = regexp.MustCompile(`^https://vpce-[0-9a-z]+-[0-9a-z]+\.dynamodb\.([a-z0-9-]+)\.vpce\.amazonaws\.com$`)
)

// ownEndpoint is the placeholder of a region root's own DynamoDB interface endpoint's URL: its
// module.endpoints', or in the home VPC the registry root's endpoint, looked up.
func ownEndpoint(root *instance) string {
	if root.locals["shares_home_vpc"].True() {
		return "https://" + root.addr + ".data.aws_vpc_endpoint.home_dynamodb[0].dns_entry[0].dns_name"
	}
	return "https://" + root.addr + ".module.endpoints[0].aws_vpc_endpoint.dynamodb[0].dns_entry[0].dns_name"
}

// wantEndpoints is, per region, the URL a public-ID instance's store file must name its table at:
// in a region root, its own region's interface endpoint and, for every other region, the URL
// example.tfvars gives (that region root's output), each an interface endpoint of that region; in
// the example, what it is given; a region given null is named at an address that never resolves.
func wantEndpoints(t *testing.T, in *instance) map[string]string {
	t.Helper()
	given := map[string]cty.Value{}
	if v := in.vars["dynamodb_endpoints"]; v.IsKnown() && !v.IsNull() {
		given = v.AsValueMap()
	}
	want := map[string]string{}
	for r := range topologyNumbers(t) {
		want[r] = "https://dynamodb." + r + ".not-applied.invalid"
		if v, ok := given[r]; ok && !v.IsNull() {
			want[r] = v.AsString()
		}
	}
	for _, root := range evaluated(t) {
		if childOf(root, "public_id") != in || !strings.HasPrefix(root.dir, filepath.Clean(regionRootsDir)) {
			continue
		}
		tfvars, err := readTfvars(exampleTfvars)
		if err != nil {
			t.Fatal(err)
		}
		region := in.vars["region"].AsString()
		for r, v := range tfvars["public_id_dynamodb_endpoints"].AsValueMap() {
			if r == region {
				continue
			}
			if m := interfaceURL.FindStringSubmatch(v.AsString()); m == nil || m[1] != r {
				t.Errorf("example.tfvars: public_id_dynamodb_endpoints[%q] = %s is not an interface endpoint of %s", r, v.AsString(), r)
			}
			if want[r] != v.AsString() {
				t.Errorf("%s: region %s at %s, not at the URL of example.tfvars %s", in.addr, r, want[r], v.AsString())
			}
		}
		if want[region] != ownEndpoint(root) {
			t.Errorf("%s: its own region at %s, want its own interface endpoint %s", in.addr, want[region], ownEndpoint(root))
		}
		if out := root.outputs["public_id_dynamodb_endpoint"]; !out.IsKnown() || out.Type() != cty.String || out.AsString() != ownEndpoint(root) {
			t.Errorf("%s: output public_id_dynamodb_endpoint is %#v, want %s (what the other roots are given)", root.addr, out, ownEndpoint(root))
		}
	}
	return want
}

// TestPublicIDStoreFileFirstApply: a region root applied before the others gets its own region's
// endpoint and an address that never resolves for each region given null (no public endpoint),
// and its plan stops when public_id_dynamodb_endpoints leaves a region out or names one that is
// not a region.
func TestPublicIDStoreFileFirstApply(t *testing.T) {
	dir := filepath.Join(regionRootsDir, "eu-west-1")
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	numbers := topologyNumbers(t)
	for _, tc := range []struct {
		name      string
		endpoints map[string]cty.Value
		problem   string
	}{
		{"others null", map[string]cty.Value{}, ""},
		{"a region left out", map[string]cty.Value{"us-east-1": cty.NullVal(cty.String)}, "missing: us-east-1"},
		{"not a region", map[string]cty.Value{"mars-1": cty.StringVal("https://vpce-0a-1b.dynamodb.mars-1.vpce.amazonaws.com")}, "not a region: mars-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]cty.Value{}
			for r := range numbers {
				if r != "eu-west-1" {
					m[r] = cty.NullVal(cty.String)
				}
			}
			for r, v := range tc.endpoints {
				if v.IsNull() {
					delete(m, r)
				} else {
					m[r] = v
				}
			}
			root := evalRoot(t, dir, tfvars, map[string]cty.Value{"public_id_dynamodb_endpoints": cty.MapVal(m)})
			for _, p := range root.problems {
				t.Errorf("problem: %s", p)
			}
			in := childOf(root, "public_id")
			if in == nil {
				t.Fatal("no module public_id")
			}
			failed := failedPreconditions(in, "aws_dynamodb_table", "public_ids", "dynamodb_endpoints")
			if tc.problem != "" {
				if len(failed) != 1 || !strings.Contains(failed[0], tc.problem) {
					t.Errorf("preconditions failed: %q, want one saying %q", failed, tc.problem)
				}
				return
			}
			if len(failed) > 0 {
				t.Errorf("preconditions failed: %q", failed)
			}
			var doc storeDoc
			if err := json.Unmarshal([]byte(in.locals["store_doc"].AsString()), &doc); err != nil {
				t.Fatal(err)
			}
			for _, r := range doc.Regions {
				want := "https://dynamodb." + r.Name + ".not-applied.invalid"
				if r.Name == "eu-west-1" {
					want = ownEndpoint(root)
				}
				if r.Endpoint != want {
					t.Errorf("region %s at %s, want %s", r.Name, r.Endpoint, want)
				}
				if r.Absent != (r.Name != "eu-west-1") {
					t.Errorf("region %s absent %v; want absent exactly when its endpoint is not known", r.Name, r.Absent)
				}
			}
			if len(doc.Regions) != len(numbers) {
				t.Errorf("%d regions in the store file, want every region of the topology (%d)", len(doc.Regions), len(numbers))
			}
		})
	}
}

// evalRoot evaluates a live root from tfvars with some variables replaced.
func evalRoot(t *testing.T, dir string, tfvars, override map[string]cty.Value) *instance {
	t.Helper()
	m, err := loadModule(dir)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]cty.Value{}
	for name := range m.Variables {
		if v, ok := override[name]; ok {
			inputs[name] = v
		} else if v, ok := tfvars[name]; ok {
			inputs[name] = v
		}
	}
	root, err := evalModule(dir, dir, inputs, awsSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// failedPreconditions evaluates the preconditions of a resource whose error message mentions
// about, and returns the messages of those that fail (or cannot be evaluated).
func failedPreconditions(in *instance, typ, name, about string) []string {
	var failed []string
	for _, b := range in.cfg.blocks("resource", typ) {
		if b.Labels[1] != name {
			continue
		}
		for _, lc := range b.Body.Blocks {
			if lc.Type != "lifecycle" {
				continue
			}
			for _, pc := range lc.Body.Blocks {
				if pc.Type != "precondition" {
					continue
				}
				msg := in.value(pc.Body.Attributes["error_message"].Expr, nil, "precondition")
				if !msg.IsKnown() || msg.Type() != cty.String || !strings.Contains(msg.AsString(), about) {
					continue
				}
				cond := in.value(pc.Body.Attributes["condition"].Expr, nil, "precondition")
				if !cond.IsKnown() || cond.IsNull() || cond.Type() != cty.Bool || !cond.True() {
					failed = append(failed, msg.AsString())
				}
			}
		}
	}
	return failed
}

// TestDynamoDBEndpoints: every VPC's DynamoDB interface endpoint (the registry root's in the home
// VPC, each other region root's, the example's) is an interface endpoint of its region's DynamoDB
// without private DNS, in the hosts' subnets, with a policy on its region's public-ID table only;
// its security group admits HTTPS from each other region's VPC, one rule each, and nothing else
// by CIDR; and the region roots give it exactly the other regions' VPCs.
func TestDynamoDBEndpoints(t *testing.T) {
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	networks := tfvars["networks"].AsValueMap()
	seen := 0
	for _, root := range evaluated(t) {
		root.walk(func(in *instance) {
			if in.dir != filepath.Clean(endpointsDir) {
				return
			}
			seen++
			region := in.vars["region"].AsString()
			vpc := in.vars["vpc_cidr"].AsString()
			var b *hclsyntax.Block
			for _, e := range in.cfg.blocks("resource", "aws_vpc_endpoint") {
				if e.Labels[1] == "dynamodb" {
					b = e
				}
			}
			if b == nil {
				t.Fatalf("%s: no aws_vpc_endpoint.dynamodb", in.addr)
			}
			attr := func(name string) cty.Value {
				a := b.Body.Attributes[name]
				if a == nil {
					return cty.NullVal(cty.DynamicPseudoType)
				}
				return in.value(a.Expr, map[string]cty.Value{"count": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(0)})}, name)
			}
			if got := attr("service_name"); !got.IsKnown() || got.AsString() != "com.amazonaws."+region+".dynamodb" {
				t.Errorf("%s: service_name %#v", in.addr, got)
			}
			if got := attr("vpc_endpoint_type"); got.IsNull() || got.AsString() != "Interface" {
				t.Errorf("%s: vpc_endpoint_type %#v, want Interface", in.addr, got)
			}
			if got := attr("private_dns_enabled"); got.IsNull() || got.True() {
				t.Errorf("%s: private_dns_enabled %#v, want false (the gateway endpoint keeps the service's name in the VPC)", in.addr, got)
			}
			if got := attr("subnet_ids"); !got.RawEquals(in.vars["subnet_ids"]) {
				t.Errorf("%s: subnet_ids %#v, want the hosts' subnets %#v", in.addr, got, in.vars["subnet_ids"])
			}
			if got := attr("policy"); got.IsNull() || got.AsString() != in.addr+".data.aws_iam_policy_document.dynamodb.json" {
				t.Errorf("%s: policy %#v, want the module's policy document", in.addr, got)
			}
			var arns []string
			for it := in.locals["dynamodb_table_arns"].ElementIterator(); it.Next(); {
				_, v := it.Element()
				arns = append(arns, v.AsString())
			}
			if want := []string{fmt.Sprintf("arn:%s.data.aws_partition.current.partition:dynamodb:%s:%s.data.aws_caller_identity.current.account_id:table/%s", in.addr, region, in.addr, publicIDTable)}; !slices.Equal(arns, want) {
				t.Errorf("%s: the endpoint's policy is on %q, want %q", in.addr, arns, want)
			}
			if got, want := in.outputs["dynamodb_endpoint_url"], "https://"+in.addr+".aws_vpc_endpoint.dynamodb[0].dns_entry[0].dns_name"; !got.IsKnown() || got.AsString() != want {
				t.Errorf("%s: dynamodb_endpoint_url %#v, want %s", in.addr, got, want)
			}

			rules, problems := rulesOf(in)
			for _, p := range problems {
				t.Error(p)
			}
			group := in.addr + ".aws_security_group.dynamodb[0].id"
			var got []string
			for _, r := range rules {
				if r.group == group {
					got = append(got, fmt.Sprintf("%s %s %d-%d %s", r.kind, r.proto, r.from, r.to, r.dest))
				}
			}
			var want []string
			for _, c := range in.vars["dynamodb_peer_cidrs"].AsValueSlice() {
				if c.AsString() != vpc {
					want = append(want, "ingress tcp 443-443 cidr "+c.AsString())
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			want = slices.Compact(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s: rules of the DynamoDB endpoint's security group:\n%q\nwant\n%q", in.addr, got, want)
			}
			if strings.HasPrefix(root.dir, liveDir+"/") {
				var others []string
				for _, n := range networks {
					if c := n.GetAttr("vpc_cidr").AsString(); c != vpc {
						others = append(others, "ingress tcp 443-443 cidr "+c)
					}
				}
				slices.Sort(others)
				if others = slices.Compact(others); !slices.Equal(got, others) {
					t.Errorf("%s: the DynamoDB endpoint admits\n%q\nwant every other region's VPC\n%q", in.addr, got, others)
				}
			}
		})
	}
	// The registry root's (the home VPC), the four other region roots', the example's.
	if want := len(regionRootDirs) + 1; seen != want {
		t.Errorf("%d endpoints instances evaluated, want %d", seen, want)
	}
}

// TestPublicIDProgramsGiven: the flags, ports and environment the programs are started with, as
// the module's README states them: the internal API on 443 with mutual TLS and its cache's URL;
// the gateway on its customer and operator ports, trusting the VPC (the ALB) as proxies, making
// every request ID, with its cache's and rate limit's URLs; each URL TLS, with the AUTH token read
// at boot and the replication group's primary endpoint.
func TestPublicIDProgramsGiven(t *testing.T) {
	for _, in := range publicIDInstances(t) {
		region := in.vars["region"].AsString()
		vpc := in.vars["vpc_cidr"].AsString()
		redisURL := [2]string{"rediss://:", "@" + in.addr + ".aws_elasticache_replication_group.cache.primary_endpoint_address:6379"}
		for _, tc := range []struct {
			fleet, binary string
			args          []string
			env           []string
		}{
			{"public_id", "public-id", []string{"--listen 0.0.0.0:443", "--region " + region, storeFlag,
				"--callers /etc/idgen/callers.json", "--tls-cert /etc/idgen/tls.crt", "--tls-key /etc/idgen/tls.key", "--client-ca /etc/idgen/client-ca.pem"},
				[]string{"IDGEN_CACHE_REDIS"}},
			{"gateway", "public-id-gateway", []string{"--listen 0.0.0.0:" + gatewayPort, "--metrics-listen 0.0.0.0:" + metricsPort, "--region " + region,
				"--routes /etc/idgen/routes.json", storeFlag, "--trusted-proxies " + vpc, "--request-id-header="},
				[]string{"IDGEN_CACHE_REDIS", "IDGEN_RATE_REDIS"}},
		} {
			f := childOf(in, tc.fleet)
			if f == nil {
				t.Errorf("%s: no module %s", in.addr, tc.fleet)
				continue
			}
			script := f.locals["user_data"].AsString()
			cmd := execStart.FindStringSubmatch(script)
			if cmd == nil || !strings.HasPrefix(cmd[1], "/opt/idgen/bin/"+tc.binary+" ") {
				t.Errorf("%s: the unit does not run /opt/idgen/bin/%s", f.addr, tc.binary)
				continue
			}
			for _, a := range tc.args {
				if !strings.Contains(cmd[1]+" ", " "+a+" ") {
					t.Errorf("%s: the program is not given %q: %s", f.addr, a, cmd[1])
				}
			}
			if strings.Contains(cmd[1], "redis") {
				t.Errorf("%s: a Redis URL on the command line: %s", f.addr, cmd[1])
			}
			if !strings.Contains(script, "\nEnvironmentFile="+serviceEnv+"\n") {
				t.Errorf("%s: the unit does not read %s", f.addr, serviceEnv)
			}
			var env []string
			for _, m := range envLine.FindAllStringSubmatch(script, -1) {
				env = append(env, m[1])
				if m[2] != redisURL[0] || m[3] != redisURL[1] {
					t.Errorf("%s: %s is %s<token>%s, want %s<token>%s", f.addr, m[1], m[2], m[3], redisURL[0], redisURL[1])
				}
			}
			if !slices.Equal(env, tc.env) {
				t.Errorf("%s: environment %v, want %v", f.addr, env, tc.env)
			}
		}
	}
}

// TestPublicIDRules: the ALB takes 80 and 443 from the internet and sends only to the gateways'
// customer port; the gateways take that port from the ALB alone and their operator port from the
// VPC alone; Redis takes 6379 from the two fleets and nothing else, and sends nothing.
func TestPublicIDRules(t *testing.T) {
	for _, in := range publicIDInstances(t) {
		rules, problems := rulesOf(in)
		for _, p := range problems {
			t.Error(p)
		}
		gw, pid := childOf(in, "gateway"), childOf(in, "public_id")
		if gw == nil || pid == nil {
			t.Fatalf("%s: the fleets were not evaluated", in.addr)
		}
		alb := in.addr + ".aws_security_group.alb.id"
		cache := in.addr + ".aws_security_group.cache.id"
		gwGroup := gw.addr + ".aws_security_group.this.id"
		pidGroup := pid.addr + ".aws_security_group.this.id"
		got := map[string][]string{}
		for _, r := range rules {
			got[r.group] = append(got[r.group], fmt.Sprintf("%s %s %d-%d %s", r.kind, r.proto, r.from, r.to, r.dest))
		}
		dynamo := in.vars["dynamodb_endpoint_security_group_id"].AsString()
		want := map[string][]string{
			alb: {"egress tcp " + gatewayPort + "-" + gatewayPort + " security-group " + gwGroup,
				"ingress tcp 443-443 cidr 0.0.0.0/0", "ingress tcp 80-80 cidr 0.0.0.0/0"},
			cache: {"ingress tcp 6379-6379 security-group " + gwGroup, "ingress tcp 6379-6379 security-group " + pidGroup},
			// The region's DynamoDB interface endpoint admits both fleets (the other regions' VPCs
			// by CIDR: TestDynamoDBEndpoints).
			dynamo: {"ingress tcp 443-443 security-group " + gwGroup, "ingress tcp 443-443 security-group " + pidGroup},
		}
		for g, w := range want {
			slices.Sort(got[g])
			slices.Sort(w)
			if !slices.Equal(got[g], w) {
				t.Errorf("%s: rules of %s:\n%q\nwant\n%q", in.addr, g, got[g], w)
			}
		}
		// Both fleets send HTTPS to the region's DynamoDB interface endpoint and to every other
		// region's VPC, where that region's is (over the Transit Gateway).
		for _, f := range []*instance{gw, pid} {
			fr, problems := rulesOf(f)
			for _, p := range problems {
				t.Error(p)
			}
			var egress []string
			for _, r := range fr {
				if r.kind == "egress" && r.from == 443 {
					egress = append(egress, r.dest)
				}
			}
			need := []string{"security-group " + dynamo}
			for _, c := range in.vars["peer_vpc_cidrs"].AsValueSlice() {
				need = append(need, "cidr "+c.AsString())
			}
			for _, n := range need {
				if !slices.Contains(egress, n) {
					t.Errorf("%s: no HTTPS egress to %s (egress on 443: %q)", f.addr, n, egress)
				}
			}
		}
		gwRules, problems := rulesOf(gw)
		for _, p := range problems {
			t.Error(p)
		}
		var ingress []string
		for _, r := range gwRules {
			if r.kind == "ingress" {
				ingress = append(ingress, fmt.Sprintf("%d %s", r.from, r.dest))
			}
		}
		slices.Sort(ingress)
		if w := []string{gatewayPort + " security-group " + alb, metricsPort + " cidr " + in.vars["vpc_cidr"].AsString()}; !slices.Equal(ingress, w) {
			t.Errorf("%s: ingress %q, want %q", gw.addr, ingress, w)
		}
	}
}

// TestRegionRootsPublicID: every region root gives the public-ID module its own region and the
// topology's regions, and its latency record its own region and the module's ALB.
func TestRegionRootsPublicID(t *testing.T) {
	for _, dir := range regionRootDirs {
		c := parseDir(t, dir)
		src := func(module, attr string) string {
			for _, b := range c.blocks("module", module) {
				if a := b.Body.Attributes[attr]; a != nil {
					return strings.Join(strings.Fields(c.source(a.Expr.Range())), "")
				}
			}
			return ""
		}
		for _, w := range []struct{ module, attr, want string }{
			{"public_id", "region", "local.region"},
			{"public_id", "regions", "module.topology.regions"},
			{"customer_dns", "region", "local.region"},
			{"customer_dns", "lb_dns_name", "module.public_id.lb_dns_name"},
			{"customer_dns", "lb_zone_id", "module.public_id.lb_zone_id"},
		} {
			if got := src(w.module, w.attr); got != w.want {
				t.Errorf("%s: module %s's %s is %q, want %s", dir, w.module, w.attr, got, w.want)
			}
		}
	}
}
