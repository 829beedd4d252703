package terraform

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

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
		var names []string
		for _, r := range doc.Regions {
			names = append(names, r.Name)
			want := fmt.Sprintf("%d %s https://dynamodb.%s.amazonaws.com %s", numbers[r.Name], peers[r.Name], r.Name, publicIDTable)
			if got := fmt.Sprintf("%d %s %s %s", r.Number, r.Peer, r.Endpoint, r.Table); got != want {
				t.Errorf("%s: region %s is %q, want %q", in.addr, r.Name, got, want)
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
		want := map[string][]string{
			alb: {"egress tcp " + gatewayPort + "-" + gatewayPort + " security-group " + gwGroup,
				"ingress tcp 443-443 cidr 0.0.0.0/0", "ingress tcp 80-80 cidr 0.0.0.0/0"},
			cache: {"ingress tcp 6379-6379 security-group " + gwGroup, "ingress tcp 6379-6379 security-group " + pidGroup},
		}
		for g, w := range want {
			slices.Sort(got[g])
			slices.Sort(w)
			if !slices.Equal(got[g], w) {
				t.Errorf("%s: rules of %s:\n%q\nwant\n%q", in.addr, g, got[g], w)
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
