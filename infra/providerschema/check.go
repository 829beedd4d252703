package providerschema

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Finding is one thing in a Terraform file that the provider's schema does not allow.
type Finding struct {
	File string // relative to the checked tree, with slashes
	Line int
	Msg  string
}

func (f Finding) String() string { return fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Msg) }

// Summary counts what a check looked at.
type Summary struct {
	Modules, Files, Resources, DataSources, Providers, References int
}

// CheckTree checks every .tf file under dir (each folder a module; .terraform folders skipped)
// and returns the findings in file and line order.
func (s *Schema) CheckTree(dir string) ([]Finding, Summary, error) {
	byDir := map[string][]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".terraform" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".tf") {
			byDir[filepath.Dir(p)] = append(byDir[filepath.Dir(p)], p)
		}
		return nil
	})
	if err != nil {
		return nil, Summary{}, err
	}
	var out []Finding
	var sum Summary
	for _, d := range sortedKeys(byDir) {
		var files []*hcl.File
		parser := hclparse.NewParser()
		for _, p := range byDir[d] {
			src, err := os.ReadFile(p)
			if err != nil {
				return nil, sum, err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return nil, sum, err
			}
			f, diags := parser.ParseHCL(src, filepath.ToSlash(rel))
			if diags.HasErrors() {
				return nil, sum, fmt.Errorf("providerschema: %s", diags.Error())
			}
			files = append(files, f)
		}
		sum.Modules++
		sum.Files += len(files)
		out = append(out, s.CheckModule(files, &sum)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, sum, nil
}

// Meta-arguments and meta-blocks Terraform itself handles in resource, data and provider blocks.
var (
	resourceMetaArgs   = set("count", "for_each", "provider", "depends_on")
	resourceMetaBlocks = set("lifecycle", "provisioner", "connection")
	providerMetaArgs   = set("alias", "version")
)

// CheckModule checks the files of one module. sum, when not nil, counts what was checked.
func (s *Schema) CheckModule(files []*hcl.File, sum *Summary) []Finding {
	if sum == nil {
		sum = &Summary{}
	}
	c := &checker{s: s, declared: map[string]string{}}
	var bodies []*hclsyntax.Body
	for _, f := range files {
		body, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		bodies = append(bodies, body)
		for _, b := range body.Blocks {
			if (b.Type == "resource" || b.Type == "data") && len(b.Labels) == 2 {
				c.declared[addr(b.Type, b.Labels[0], b.Labels[1])] = b.Labels[0]
			}
		}
	}
	for _, body := range bodies {
		for _, b := range body.Blocks {
			switch {
			case b.Type == "resource" && len(b.Labels) == 2 && isAWS(b.Labels[0]):
				sum.Resources++
				c.checkTop(b, "resource", c.s.Resources)
			case b.Type == "data" && len(b.Labels) == 2 && isAWS(b.Labels[0]):
				sum.DataSources++
				c.checkTop(b, "data source", c.s.DataSources)
			case b.Type == "provider" && len(b.Labels) == 1 && b.Labels[0] == "aws":
				sum.Providers++
				c.checkBody(b.Body, c.s.ProviderConfig, "provider aws", "the aws provider", "", providerMetaArgs, nil)
			}
		}
		sum.References += c.checkRefs(body)
	}
	return c.out
}

type checker struct {
	s *Schema
	// declared: the module's resources and data sources ("aws_x.name", "data.aws_x.name") and
	// their types.
	declared map[string]string
	out      []Finding
}

func (c *checker) add(r hcl.Range, format string, args ...any) {
	c.out = append(c.out, Finding{File: r.Filename, Line: r.Start.Line, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) provider() string {
	return fmt.Sprintf("%s %s", strings.TrimPrefix(c.s.Provider, "registry.terraform.io/"), c.s.ProviderVersion)
}

func (c *checker) checkTop(b *hclsyntax.Block, kind string, types map[string]*Block) {
	typ := b.Labels[0]
	sch, ok := types[typ]
	if !ok {
		c.add(b.LabelRanges[0], "%s type %s does not exist in %s%s", kind, typ, c.provider(), suggest(typ, keys(types)))
		return
	}
	c.checkBody(b.Body, sch, addr(b.Type, typ, b.Labels[1]), typ, "", resourceMetaArgs, resourceMetaBlocks)
}

// checkBody checks one body against its block's schema: every argument and block exists at this
// level, the content of each dynamic block is that block's, and every required argument and
// block is there. where names the block in the configuration (aws_lb.this.health_check); typ is
// the resource type (or "the aws provider") and path the nested block's path in it ("" at the
// top, health_check, health_check.inner).
func (c *checker) checkBody(body *hclsyntax.Body, sch *Block, where, typ, path string, metaArgs, metaBlocks map[string]bool) {
	of := typ
	if path != "" {
		of = typ + "'s " + path + " block"
	}
	for _, name := range sortedKeys(body.Attributes) {
		a := body.Attributes[name]
		switch {
		case metaArgs[name]:
		case hasKey(sch.Args, name):
		case sch.Blocks[name] != nil:
			c.add(a.NameRange, "%s: %s is a block, not an argument: write %s { … }", where, name, name)
		default:
			c.add(a.NameRange, "%s: no argument %s in %s%s", where, name, of, suggest(name, append(keys(sch.Args), keys(sch.Blocks)...)))
		}
	}
	present := map[string]bool{}
	for _, nb := range body.Blocks {
		name, content := nb.Type, nb.Body
		if metaBlocks[name] {
			continue
		}
		if name == "dynamic" {
			if len(nb.Labels) != 1 {
				continue
			}
			name, content = nb.Labels[0], nil
			for _, inner := range nb.Body.Blocks {
				if inner.Type == "content" {
					content = inner.Body
				}
			}
		}
		present[name] = true
		nested := sch.Blocks[name]
		switch {
		case nested != nil:
			if content != nil {
				c.checkBody(content, &nested.Block, where+"."+name, typ, strings.TrimPrefix(path+"."+name, "."), nil, nil)
			}
		case hasKey(sch.Args, name):
			c.add(nb.DefRange(), "%s: %s is an argument, not a block: write %s = …", where, name, name)
		default:
			c.add(nb.DefRange(), "%s: no block %s in %s%s", where, name, of, suggest(name, append(keys(sch.Blocks), keys(sch.Args)...)))
		}
	}
	for _, name := range sortedKeys(sch.Args) {
		if sch.Args[name] && body.Attributes[name] == nil {
			c.add(body.SrcRange, "%s: missing required argument %s", where, name)
		}
	}
	for _, name := range sortedKeys(sch.Blocks) {
		if sch.Blocks[name].Required && !present[name] {
			c.add(body.SrcRange, "%s: missing required block %s", where, name)
		}
	}
}

// checkRefs checks every reference to a resource or data source of the module's: it is declared
// here, and the attribute it reads is one its type has. It returns how many it checked.
func (c *checker) checkRefs(body *hclsyntax.Body) int {
	n := 0
	check := func(tr hcl.Traversal, rest hcl.Traversal) {
		prefix, name, attr, r, ok := split(tr, rest)
		if !ok {
			return
		}
		a := addr(prefix, name[0], name[1])
		typ, declared := c.declared[a]
		n++
		if !declared {
			c.add(tr.SourceRange(), "%s is not declared in this module", a)
			return
		}
		if attr == "" {
			return
		}
		types := c.s.Resources
		if prefix == "data" {
			types = c.s.DataSources
		}
		sch, ok := types[typ]
		if !ok {
			return // the type itself is reported where it is declared
		}
		if !sch.HasAttr(attr) {
			c.add(r, "%s.%s: %s has no attribute %s in %s%s", a, attr, typ, attr, c.provider(), suggest(attr, sch.Attrs))
		}
	}
	splatSources := map[*hclsyntax.ScopeTraversalExpr]bool{}
	_ = hclsyntax.VisitAll(body, func(node hclsyntax.Node) hcl.Diagnostics {
		switch e := node.(type) {
		case *hclsyntax.ScopeTraversalExpr:
			if !splatSources[e] {
				check(e.Traversal, nil)
			}
		case *hclsyntax.SplatExpr:
			// aws_x.name[*].attr: the source is aws_x.name, the attribute is in Each (a splat is
			// visited before its source).
			if src, ok := e.Source.(*hclsyntax.ScopeTraversalExpr); ok {
				splatSources[src] = true
				var each hcl.Traversal
				if rel, ok := e.Each.(*hclsyntax.RelativeTraversalExpr); ok {
					each = rel.Traversal
				}
				check(src.Traversal, append(hcl.Traversal{hcl.TraverseSplat{}}, each...))
			}
		}
		return nil
	})
	return n
}

// split reads a reference to an AWS resource (aws_x.name…) or data source (data.aws_x.name…):
// its prefix ("resource" or "data"), type and name, and the first attribute it reads after an
// optional index or splat ("" for the whole object). rest continues the traversal (a splat's).
func split(tr, rest hcl.Traversal) (prefix string, name [2]string, attr string, r hcl.Range, ok bool) {
	var steps []string
	var ranges []hcl.Range
	for _, s := range append(append(hcl.Traversal{}, tr...), rest...) {
		switch s := s.(type) {
		case hcl.TraverseRoot:
			steps, ranges = append(steps, s.Name), append(ranges, s.SrcRange)
		case hcl.TraverseAttr:
			steps, ranges = append(steps, s.Name), append(ranges, s.SrcRange)
		case hcl.TraverseIndex, hcl.TraverseSplat:
			steps, ranges = append(steps, "[]"), append(ranges, hcl.Range{})
		}
	}
	prefix = "resource"
	if len(steps) > 0 && steps[0] == "data" {
		prefix, steps, ranges = "data", steps[1:], ranges[1:]
	}
	if len(steps) < 2 || !isAWS(steps[0]) || steps[1] == "[]" {
		return "", name, "", r, false
	}
	name = [2]string{steps[0], steps[1]}
	i := 2
	if i < len(steps) && steps[i] == "[]" {
		i++
	}
	if i < len(steps) && steps[i] != "[]" {
		attr, r = steps[i], ranges[i]
	}
	return prefix, name, attr, r, true
}

func addr(prefix, typ, name string) string {
	if prefix == "data" {
		return "data." + typ + "." + name
	}
	return typ + "." + name
}

func isAWS(typ string) bool { return strings.HasPrefix(typ, "aws_") }

// suggest names the closest known name, when one is close enough to be a misspelling.
func suggest(name string, known []string) string {
	best, dist := "", 4
	for _, k := range known {
		if d := levenshtein.Distance(name, k, nil); d < dist {
			best, dist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string { return keys(m) }
