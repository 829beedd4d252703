package terraform

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// topologyRegions reads the default of the topology module's regions variable: name => peer.
func topologyRegions(c config) (map[string]string, error) {
	vars := c.blocks("variable", "regions")
	if len(vars) != 1 {
		return nil, fmt.Errorf("want one variable regions, have %d", len(vars))
	}
	v, err := literal(vars[0], "default")
	if err != nil {
		return nil, err
	}
	if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return nil, fmt.Errorf("regions default is not a map")
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, r := it.Element()
		peer := ""
		if r.Type().IsObjectType() && r.Type().HasAttribute("peer") && r.GetAttr("peer").Type() == cty.String {
			peer = r.GetAttr("peer").AsString()
		}
		out[k.AsString()] = peer
	}
	return out, nil
}

// checkPeers: every region's peer is another region of the map.
func checkPeers(regions map[string]string) []string {
	var problems []string
	for _, name := range sortedKeys(regions) {
		peer := regions[name]
		if _, ok := regions[peer]; !ok || peer == name {
			problems = append(problems, fmt.Sprintf("region %s has peer %q, which is not another region of the topology", name, peer))
		}
	}
	return problems
}

func TestTopologyPeers(t *testing.T) {
	regions, err := topologyRegions(parseDir(t, topologyDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(regions) != 5 {
		t.Errorf("topology has %d regions, want 5: %v", len(regions), regions)
	}
	wantProblems(t, checkPeers(regions))
}

func TestTopologyPeersCatch(t *testing.T) {
	c := parse(t, "snippet.tf", `variable "regions" {
  type = map(object({ number = number, peer = string }))
  default = {
    "us-east-1" = { number = 0, peer = "us-west-2" }
    "us-west-2" = { number = 1, peer = "us-west-2" }
    "eu-west-1" = { number = 2, peer = "eu-central-1" }
  }
}`)
	regions, err := topologyRegions(c)
	if err != nil {
		t.Fatal(err)
	}
	wantProblems(t, checkPeers(regions), "region eu-west-1 has peer \"eu-central-1\"", "region us-west-2 has peer \"us-west-2\"")
}

// liveIdent is a region's name as a Terraform identifier (module region_<ident>, provider alias).
func liveIdent(region string) string { return strings.ReplaceAll(region, "-", "_") }

// checkLiveRegions: live has one module region_<name> per topology region, each with its own
// provider, its name, its number, peer and endpoint taken from module.topology.regions[name] and
// its failover callers from local.failover_callers[name]; and no region module beyond them.
func checkLiveRegions(c config, regions map[string]string) []string {
	var problems []string
	seen := map[string]bool{}
	for _, b := range c.blocks("module", "") {
		label := b.Labels[0]
		if !strings.HasPrefix(label, "region_") {
			continue
		}
		name := literalString(b, "region")
		if _, ok := regions[name]; !ok || label != "region_"+liveIdent(name) {
			problems = append(problems, fmt.Sprintf("%s: region %q is not the topology's region of this module", at(b), name))
			continue
		}
		seen[name] = true
		for _, field := range []string{"number", "peer", "endpoint"} {
			a := b.Body.Attributes[field]
			want := []string{"module", "topology", "regions", name, field}
			var got []string
			if a != nil {
				got = steps(traversalOf(a.Expr))
			}
			if strings.Join(got, ".") != strings.Join(want, ".") {
				problems = append(problems, fmt.Sprintf("%s: %s must be module.topology.regions[%q].%s", at(b), field, name, field))
			}
		}
		// The callers that fail over here: those of the regions whose peer this one is.
		var got []string
		if a := b.Body.Attributes["failover_caller_cidrs"]; a != nil {
			got = steps(traversalOf(a.Expr))
		}
		if strings.Join(got, ".") != "local.failover_callers."+name {
			problems = append(problems, fmt.Sprintf("%s: failover_caller_cidrs must be local.failover_callers[%q]", at(b), name))
		}
		p := ""
		if a := b.Body.Attributes["providers"]; a != nil {
			p = c.source(a.Expr.Range())
		}
		if !regexp.MustCompile(`\baws\s*=\s*aws\.` + liveIdent(name) + `\b`).MatchString(p) {
			problems = append(problems, fmt.Sprintf("%s: must be given provider aws.%s", at(b), liveIdent(name)))
		}
	}
	for _, name := range sortedKeys(regions) {
		if !seen[name] {
			problems = append(problems, fmt.Sprintf("topology region %s has no module region_%s", name, liveIdent(name)))
		}
	}
	return problems
}

func TestLiveRegionsFromTopology(t *testing.T) {
	regions, err := topologyRegions(parseDir(t, topologyDir))
	if err != nil {
		t.Fatal(err)
	}
	live := parseDir(t, liveDir)
	wantProblems(t, checkLiveRegions(live, regions))

	// The providers' aliases name their regions, so aws.<ident> is the region's own.
	for _, p := range live.blocks("provider", "aws") {
		if alias, region := literalString(p, "alias"), literalString(p, "region"); alias != liveIdent(region) {
			t.Errorf("%s: alias %q for region %q", at(p), alias, region)
		}
	}
}

func TestLiveRegionsFromTopologyCatch(t *testing.T) {
	regions := map[string]string{"us-east-1": "us-west-2", "us-west-2": "us-east-1"}
	c := parse(t, "snippet.tf", `module "region_us_east_1" {
  source    = "../modules/region"
  providers = { aws = aws.us_west_2 }
  region    = "us-east-1"
  number    = 0
  peer      = module.topology.regions["us-east-1"].peer
  endpoint  = module.topology.regions["us-west-2"].endpoint
}`)
	wantProblems(t, checkLiveRegions(c, regions),
		"number must be", "endpoint must be", "failover_caller_cidrs must be", "provider aws.us_east_1", "region us-west-2 has no module")
}
