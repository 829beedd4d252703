package terraform

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// The configuration's directories, relative to this package.
const (
	fleetDir     = "modules/fleet"
	regionDir    = "modules/region"
	registryDir  = "modules/registry"
	topologyDir  = "modules/topology"
	endpointsDir = "modules/endpoints"
	publicIDDir  = "modules/public-id"
	customerDir  = "modules/customer-dns"
	transitDir   = "modules/transit"
	netCheckDir  = "modules/network-checks"
	// bootstrapDir is the root of the state bucket and lock table.
	bootstrapDir = "bootstrap"
	// liveDir holds the roots an SRE applies: the registry root and one root per region.
	liveDir         = "live"
	registryRootDir = liveDir + "/registry"
	regionRootsDir  = liveDir + "/regions"
	// exampleTfvars are the live roots' variables for five regions, as an SRE writes them.
	exampleTfvars = liveDir + "/example.tfvars"
	// thresholdsFile is the one source of alert thresholds.
	thresholdsFile = "../../deploy/alert-thresholds.json"
)

// The modules, the roots, and with their examples, every configuration.
var (
	// regionRootDirs are live/regions/<region>, one per region.
	regionRootDirs = mustGlob(regionRootsDir + "/*")
	// rootDirs are the root configurations an SRE applies, each with a state of its own.
	rootDirs    = append([]string{bootstrapDir, registryRootDir}, regionRootDirs...)
	moduleDirs  = append([]string{fleetDir, regionDir, registryDir, topologyDir, endpointsDir, publicIDDir, customerDir, transitDir, netCheckDir}, rootDirs...)
	exampleDirs = []string{fleetDir + "/examples/basic", regionDir + "/examples/basic", registryDir + "/examples/basic",
		topologyDir + "/examples/basic", endpointsDir + "/examples/basic", publicIDDir + "/examples/basic", customerDir + "/examples/basic",
		transitDir + "/examples/basic", netCheckDir + "/examples/basic"}
	configDirs = append(slices.Clone(moduleDirs), exampleDirs...)
)

func mustGlob(pattern string) []string {
	dirs, err := filepath.Glob(pattern)
	if err != nil || len(dirs) == 0 {
		panic(fmt.Sprintf("%s: nothing there (%v)", pattern, err))
	}
	sort.Strings(dirs)
	return dirs
}

// tfFile is one parsed .tf file and its source (for messages and source-text checks).
type tfFile struct {
	name string
	src  []byte
	body *hclsyntax.Body
}

// config is the parsed .tf files of one directory.
type config []tfFile

func parseDir(t *testing.T, dir string) config {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("%s: no .tf files (%v)", dir, err)
	}
	var c config
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c = append(c, parse(t, p, string(src))...)
	}
	return c
}

// parse parses one snippet of HCL as a config of one file.
func parse(t *testing.T, name, src string) config {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), name)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", name, diags.Error())
	}
	return config{{name: name, src: []byte(src), body: f.Body.(*hclsyntax.Body)}}
}

// blocks returns the top-level blocks of one type, and of one first label when label is not "".
func (c config) blocks(typ, label string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, f := range c {
		for _, b := range f.body.Blocks {
			if b.Type == typ && (label == "" || len(b.Labels) > 0 && b.Labels[0] == label) {
				out = append(out, b)
			}
		}
	}
	return out
}

// source returns the source text of a range of one of the config's files.
func (c config) source(r hcl.Range) string {
	for _, f := range c {
		if f.name == r.Filename {
			return string(r.SliceBytes(f.src))
		}
	}
	return ""
}

// nested returns a block's nested blocks of one type, including the content of dynamic blocks of
// that type.
func nested(b *hclsyntax.Block, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, n := range b.Body.Blocks {
		switch {
		case n.Type == typ:
			out = append(out, n)
		case n.Type == "dynamic" && len(n.Labels) == 1 && n.Labels[0] == typ:
			for _, content := range n.Body.Blocks {
				if content.Type == "content" {
					out = append(out, content)
				}
			}
		}
	}
	return out
}

// hasNested reports whether a block has a nested block of the type, plain or dynamic.
func hasNested(b *hclsyntax.Block, typ string) bool {
	for _, n := range b.Body.Blocks {
		if n.Type == typ || n.Type == "dynamic" && len(n.Labels) == 1 && n.Labels[0] == typ {
			return true
		}
	}
	return false
}

// literal evaluates an attribute that must be a constant (no references, no functions).
func literal(b *hclsyntax.Block, name string) (cty.Value, error) {
	a, ok := b.Body.Attributes[name]
	if !ok {
		return cty.NilVal, fmt.Errorf("no %s", name)
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return cty.NilVal, fmt.Errorf("%s is not a literal", name)
	}
	return v, nil
}

// literalString is literal for a string attribute; "" when it is missing or not a literal string.
func literalString(b *hclsyntax.Block, name string) string {
	v, err := literal(b, name)
	if err != nil || v.IsNull() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

// literalBool is literal for a bool attribute; false when it is missing or not a literal bool.
func literalBool(b *hclsyntax.Block, name string) bool {
	v, err := literal(b, name)
	return err == nil && !v.IsNull() && v.Type() == cty.Bool && v.True()
}

// literalStrings is literal for a list of strings.
func literalStrings(b *hclsyntax.Block, name string) ([]string, error) {
	v, err := literal(b, name)
	if err != nil {
		return nil, err
	}
	if v.IsNull() || !(v.Type().IsTupleType() || v.Type().IsListType()) {
		return nil, fmt.Errorf("%s is not a list", name)
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return nil, fmt.Errorf("%s holds a non-string", name)
		}
		out = append(out, e.AsString())
	}
	return out, nil
}

// traversalOf returns the traversal of an expression that is a plain reference, else nil.
func traversalOf(e hclsyntax.Expression) hcl.Traversal {
	if s, ok := e.(*hclsyntax.ScopeTraversalExpr); ok {
		return s.Traversal
	}
	return nil
}

// steps returns a traversal as strings: attribute names, and string or number index keys.
func steps(tr hcl.Traversal) []string {
	var out []string
	for _, s := range tr {
		switch s := s.(type) {
		case hcl.TraverseRoot:
			out = append(out, s.Name)
		case hcl.TraverseAttr:
			out = append(out, s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() == cty.String {
				out = append(out, s.Key.AsString())
			} else {
				out = append(out, "[index]")
			}
		case hcl.TraverseSplat:
			out = append(out, "[*]")
		}
	}
	return out
}

// traversals returns every reference in a body, nested blocks and expressions included.
func traversals(body *hclsyntax.Body) []hcl.Traversal {
	var out []hcl.Traversal
	_ = hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		if s, ok := n.(*hclsyntax.ScopeTraversalExpr); ok {
			out = append(out, s.Traversal)
		}
		return nil
	})
	return out
}

func at(b *hclsyntax.Block) string {
	return fmt.Sprintf("%s:%d: %s %s", filepath.ToSlash(b.DefRange().Filename), b.DefRange().Start.Line, b.Type, strings.Join(b.Labels, "."))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// wantProblems fails unless problems has exactly one entry per wanted substring, in any order.
func wantProblems(t *testing.T, problems []string, want ...string) {
	t.Helper()
	if len(want) == 0 {
		for _, p := range problems {
			t.Error(p)
		}
		return
	}
	for _, w := range want {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("no problem mentions %q; got %q", w, problems)
		}
	}
	if len(problems) != len(want) {
		t.Errorf("got %d problems, want %d: %q", len(problems), len(want), problems)
	}
}
