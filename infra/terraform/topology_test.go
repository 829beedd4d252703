package terraform

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
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

// checkRegionRoot: the root live/regions/<name> is the topology region <name>'s: its local region
// is that name, its provider is in local.region, and its module region takes the region, number,
// peer and endpoint from module.topology.regions[local.region], the callers that fail over here
// from local.failover_callers and the registry from the topology: values, not another root's plan.
func checkRegionRoot(name string, c config, regions map[string]string) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("region root %s: ", name)+fmt.Sprintf(format, args...))
	}
	if _, ok := regions[name]; !ok {
		bad("%s is not a region of the topology", name)
	}
	region := ""
	for _, l := range c.blocks("locals", "") {
		if v := literalString(l, "region"); v != "" {
			region = v
		}
	}
	if region != name {
		bad("local.region is %q, not its folder's name", region)
	}
	src := func(b *hclsyntax.Block, attr string) string {
		if a := b.Body.Attributes[attr]; a != nil {
			return strings.Join(strings.Fields(c.source(a.Expr.Range())), "")
		}
		return ""
	}
	providers := c.blocks("provider", "aws")
	if len(providers) != 1 || src(providers[0], "region") != "local.region" || literalString(providers[0], "alias") != "" {
		bad("needs one aws provider, without an alias, in local.region")
	}
	mods := c.blocks("module", "region")
	if len(mods) != 1 {
		bad("has %d module region blocks, want 1", len(mods))
		return problems
	}
	m := mods[0]
	want := map[string]string{
		"region":                "local.region",
		"number":                "module.topology.regions[local.region].number",
		"peer":                  "module.topology.regions[local.region].peer",
		"endpoint":              "module.topology.regions[local.region].endpoint",
		"failover_caller_cidrs": "local.failover_callers",
		"registry_url":          "module.topology.registry_url",
	}
	for _, attr := range sortedKeys(want) {
		if got := src(m, attr); got != want[attr] {
			bad("module region's %s is %q, want %s", attr, got, want[attr])
		}
	}
	for _, b := range c.blocks("module", "") {
		if b.Body.Attributes["depends_on"] != nil {
			bad("module %s has depends_on: a root takes what it needs as values, so it plans on its own", b.Labels[0])
		}
	}
	return problems
}

func TestRegionRootsFromTopology(t *testing.T) {
	regions, err := topologyRegions(parseDir(t, topologyDir))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, dir := range regionRootDirs {
		name := filepath.Base(dir)
		seen[name] = true
		wantProblems(t, checkRegionRoot(name, parseDir(t, dir), regions))
	}
	for _, name := range sortedKeys(regions) {
		if !seen[name] {
			t.Errorf("topology region %s has no root %s/%s", name, regionRootsDir, name)
		}
	}
}

// TestRegionRootsAlike: every region root is the first one's files with its own region's name.
func TestRegionRootsAlike(t *testing.T) {
	first := regionRootDirs[0]
	name0 := filepath.Base(first)
	files, err := filepath.Glob(filepath.Join(first, "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range regionRootDirs[1:] {
		name := filepath.Base(dir)
		others, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
		if len(others) != len(files) {
			t.Errorf("%s has %d .tf files, %s has %d", dir, len(others), first, len(files))
		}
		for _, f := range files {
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, filepath.Base(f)))
			if err != nil {
				t.Error(err)
				continue
			}
			if string(got) != strings.ReplaceAll(string(want), name0, name) {
				t.Errorf("%s/%s is not %s with %s for %s", dir, filepath.Base(f), f, name, name0)
			}
		}
	}
}

// TestNoDependsOnRoots: no module call of any root waits on another (a depends_on defers the
// data sources of everything it names to apply time).
func TestNoDependsOnRoots(t *testing.T) {
	for _, dir := range rootDirs {
		c := parseDir(t, dir)
		for _, b := range c.blocks("module", "") {
			if b.Body.Attributes["depends_on"] != nil {
				t.Errorf("%s: has depends_on", at(b))
			}
		}
	}
}

func TestRegionRootsFromTopologyCatch(t *testing.T) {
	regions := map[string]string{"us-east-1": "us-west-2", "us-west-2": "us-east-1"}
	c := parse(t, "snippet.tf", `locals {
  region = "us-west-2"
}
provider "aws" {
  alias  = "x"
  region = "us-east-1"
}
module "topology" {
  source = "./topology"
}
module "region" {
  source                = "./region"
  region                = local.region
  number                = 0
  peer                  = module.topology.regions[local.region].peer
  endpoint              = module.topology.regions["us-west-2"].endpoint
  failover_caller_cidrs = []
  registry_url          = module.registry.url
  depends_on            = [module.topology]
}`)
	wantProblems(t, checkRegionRoot("us-east-1", c, regions),
		`local.region is "us-west-2"`, "one aws provider", "number is", "endpoint is", "failover_caller_cidrs is", "registry_url is", "has depends_on")
	wantProblems(t, checkRegionRoot("mars-1", parse(t, "s.tf", `locals {
  region = "mars-1"
}`), regions), "mars-1 is not a region", "one aws provider", "0 module region blocks")
}
