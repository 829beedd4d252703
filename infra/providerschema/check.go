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
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
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
	c := &checker{s: s, declared: map[string]declared{}, src: map[string][]byte{}}
	var bodies []*hclsyntax.Body
	for _, f := range files {
		body, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		c.src[body.SrcRange.Filename] = f.Bytes
		bodies = append(bodies, body)
		for _, b := range body.Blocks {
			if (b.Type == "resource" || b.Type == "data") && len(b.Labels) == 2 {
				a := addr(b.Type, b.Labels[0], b.Labels[1])
				if prev, dup := c.declared[a]; dup {
					c.add(b.DefRange(), "%s is declared twice in this module (first at %s:%d)", a, prev.at.Filename, prev.at.Start.Line)
					continue
				}
				d := declared{typ: b.Labels[0], at: b.DefRange()}
				for _, meta := range []string{"count", "for_each"} {
					if b.Body.Attributes[meta] != nil {
						d.repeat = meta
					}
				}
				if b.Body.Attributes["count"] != nil && b.Body.Attributes["for_each"] != nil {
					c.add(b.Body.Attributes["for_each"].NameRange, "%s: count and for_each exclude each other", a)
				}
				c.declared[a] = d
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
	// declared: the module's resources and data sources ("aws_x.name", "data.aws_x.name").
	declared map[string]declared
	// src: each file's text, by name.
	src map[string][]byte
	out []Finding
}

// declared is a resource or data source of the module: its type, and "count" or "for_each"
// when it has one.
type declared struct {
	typ, repeat string
	at          hcl.Range
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
	where := addr(b.Type, typ, b.Labels[1])
	c.checkBody(b.Body, sch, where, typ, "", resourceMetaArgs, resourceMetaBlocks)
	if a := b.Body.Attributes["depends_on"]; a != nil {
		c.checkDependsOn(a, where)
	}
	for _, lc := range b.Body.Blocks {
		if lc.Type == "lifecycle" {
			c.checkLifecycle(lc.Body, sch, where, typ, b.Type == "data")
		}
	}
}

// checkDependsOn checks that depends_on lists whole objects (aws_x.name, module.m, data.aws_x.name,
// maybe with an instance key), as Terraform requires, not attributes of them.
func (c *checker) checkDependsOn(a *hclsyntax.Attribute, where string) {
	tuple, ok := a.Expr.(*hclsyntax.TupleConsExpr)
	if !ok {
		return
	}
	for _, e := range tuple.Exprs {
		tr, diags := hcl.AbsTraversalForExpr(e)
		if diags.HasErrors() {
			continue
		}
		whole := 2 // aws_x.name, module.m, var.v, local.l
		if tr.RootName() == "data" {
			whole = 3
		}
		if len(tr) > whole {
			if _, isKey := tr[whole].(hcl.TraverseIndex); isKey {
				whole++
			}
		}
		if len(tr) > whole && (isAWS(tr.RootName()) || tr.RootName() == "data") {
			c.add(e.Range(), "%s: depends_on names %s, an attribute: it takes whole resources and data sources", where, c.source(e.Range()))
		}
	}
}

// Terraform's own lifecycle arguments and blocks (a data source's lifecycle has only the blocks).
var (
	lifecycleArgs   = set("create_before_destroy", "prevent_destroy", "ignore_changes", "replace_triggered_by")
	lifecycleBlocks = set("precondition", "postcondition")
)

// checkLifecycle checks a lifecycle block: its arguments and blocks are Terraform's, and every
// ignore_changes entry names an attribute or block of the resource type.
func (c *checker) checkLifecycle(body *hclsyntax.Body, sch *Block, where, typ string, data bool) {
	where += ".lifecycle"
	for _, name := range sortedKeys(body.Attributes) {
		a := body.Attributes[name]
		if data || !lifecycleArgs[name] {
			c.add(a.NameRange, "%s: no argument %s in a lifecycle block%s", where, name, suggest(name, keys(lifecycleArgs)))
			continue
		}
		if name != "ignore_changes" {
			continue
		}
		tuple, ok := a.Expr.(*hclsyntax.TupleConsExpr)
		if !ok {
			continue // all, or not a list: Terraform reports it
		}
		for _, e := range tuple.Exprs {
			tr, diags := hcl.AbsTraversalForExpr(e)
			if diags.HasErrors() || len(tr) == 0 {
				continue
			}
			name := tr.RootName()
			if !sch.HasAttr(name) {
				c.add(e.Range(), "%s: ignore_changes names %s, which %s does not have%s", where, name, typ, suggest(name, sch.AttrNames()))
			}
		}
	}
	for _, nb := range body.Blocks {
		if !lifecycleBlocks[nb.Type] {
			c.add(nb.DefRange(), "%s: no block %s in a lifecycle block%s", where, nb.Type, suggest(nb.Type, keys(lifecycleBlocks)))
		}
	}
}

// checkBody checks one body against its block's schema: every argument and block exists at
// this level, no computed-only attribute is set, each literal value is one Terraform can
// convert to the argument's type, a block that may appear once does not appear twice, the
// content of each dynamic block is that block's, and every required argument and block is
// there. where names the block in the configuration (aws_lb.this.health_check); typ is the
// resource type (or "the aws provider") and path the nested block's path in it ("" at the top,
// health_check, health_check.inner).
func (c *checker) checkBody(body *hclsyntax.Body, sch *Block, where, typ, path string, metaArgs, metaBlocks map[string]bool) {
	if sch.Opaque {
		return
	}
	of := typ
	if path != "" {
		of = typ + "'s " + path + " block"
	}
	present := map[string]bool{}
	for _, name := range sortedKeys(body.Attributes) {
		a := body.Attributes[name]
		attr := sch.Attr(name)
		switch {
		case metaArgs[name]:
		case attr != nil && attr.Computed:
			present[name] = true
			c.add(a.NameRange, "%s: %s is a computed-only attribute of %s: the provider sets it, it cannot be set", where, name, of)
		case attr != nil && attr.Object != nil:
			present[name] = true
			c.checkObjectsValue(a, attr.Object, where, of+"'s "+name)
		case attr != nil:
			present[name] = true
			c.checkValue(a, attr.Type, where)
		case sch.Blocks[name] != nil:
			c.add(a.NameRange, "%s: %s is a block, not an argument: write %s { … }", where, name, name)
		default:
			c.add(a.NameRange, "%s: no argument %s in %s%s", where, name, of, suggest(name, append(settable(sch), keys(sch.Blocks)...)))
		}
	}
	first := map[string]int{} // a once-only block's first static occurrence: its line
	for _, nb := range body.Blocks {
		name, content := nb.Type, nb.Body
		if metaBlocks[name] {
			continue
		}
		dynamic := name == "dynamic"
		if dynamic {
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
		attr := sch.Attr(name)
		inner := strings.TrimPrefix(path+"."+name, ".")
		switch {
		case nested != nil:
			if nested.MaxOne && !dynamic {
				if line, ok := first[name]; ok {
					c.add(nb.DefRange(), "%s: block %s may appear only once in %s; it appears again here (first at line %d)", where, name, of, line)
				} else {
					first[name] = nb.DefRange().Start.Line
				}
			}
			if content != nil {
				c.checkBody(content, &nested.Block, where+"."+name, typ, inner, nil, nil)
			}
		case attr != nil && attr.Computed:
			c.add(nb.DefRange(), "%s: %s is a computed-only attribute of %s: the provider sets it, it cannot be set", where, name, of)
		case attr != nil && attr.Object != nil:
			// An attribute of a list or set of objects may be written as blocks, one per object.
			if content != nil {
				c.checkBody(content, attr.Object, where+"."+name, typ, inner, nil, nil)
			}
		case attr != nil:
			c.add(nb.DefRange(), "%s: %s is an argument, not a block: write %s = …", where, name, name)
		default:
			c.add(nb.DefRange(), "%s: no block %s in %s%s", where, name, of, suggest(name, append(keys(sch.Blocks), settable(sch)...)))
		}
	}
	for _, name := range sortedKeys(sch.Attrs) {
		if sch.Attrs[name].Required && !present[name] {
			c.add(body.SrcRange, "%s: missing required argument %s", where, name)
		}
	}
	for _, name := range sortedKeys(sch.Blocks) {
		if sch.Blocks[name].Required && !present[name] {
			c.add(body.SrcRange, "%s: missing required block %s", where, name)
		}
	}
}

// settable returns the names of the block's arguments: its attributes but the computed-only.
func settable(b *Block) []string {
	var out []string
	for _, n := range keys(b.Attrs) {
		if !b.Attrs[n].Computed {
			out = append(out, n)
		}
	}
	return out
}

// checkValue checks an argument's value against its type, as far as the value is literal: the
// expression is evaluated with every variable, resource and function result unknown (of any
// type), so what is left known is its literal structure, and that must convert to the type by
// Terraform's rules (go-cty's convert, which Terraform uses): "5" is a number, "abc" is not, a
// list is not a string, an object is not a list.
func (c *checker) checkValue(a *hclsyntax.Attribute, ty cty.Type, where string) {
	if ty == cty.DynamicPseudoType {
		return
	}
	v, ok := literal(a.Expr)
	if !ok || v.IsNull() {
		return
	}
	if _, err := convert.Convert(v, ty); err != nil {
		c.add(a.Expr.Range(), "%s: %s = %s: Terraform cannot convert %s to %s (%s)", where, a.Name, c.source(a.Expr.Range()), describe(v), ty.FriendlyName(), err)
	}
}

// checkObjectsValue checks the value of an attribute of objects (or of a list or set of them)
// written in attribute syntax, as far as it is literal: it is an object or a list of them, each
// object's attributes are the type's, and each literal attribute value converts to its type.
// (Which attributes an object must have is not known: cdktf marks them all optional.)
func (c *checker) checkObjectsValue(a *hclsyntax.Attribute, ob *Block, where, of string) {
	v, ok := literal(a.Expr)
	if !ok || v.IsNull() || !v.IsKnown() {
		return
	}
	bad := func(format string, args ...any) {
		c.add(a.Expr.Range(), "%s: %s = %s: %s", where, a.Name, c.source(a.Expr.Range()), fmt.Sprintf(format, args...))
	}
	var objects []cty.Value
	switch t := v.Type(); {
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		objects = v.AsValueSlice()
	case t.IsObjectType() || t.IsMapType():
		objects = []cty.Value{v}
	default:
		bad("Terraform cannot convert %s to objects", describe(v))
		return
	}
	for _, o := range objects {
		if o.IsNull() || !o.IsKnown() {
			continue
		}
		if t := o.Type(); !t.IsObjectType() && !t.IsMapType() {
			bad("Terraform cannot convert %s to an object", describe(o))
			continue
		}
		for _, k := range sortedKeys(o.AsValueMap()) {
			fv := o.GetAttr(k)
			f := ob.Attr(k)
			switch {
			case f == nil:
				bad("no attribute %s in the objects of %s%s", k, of, suggest(k, settable(ob)))
			case f.Computed:
				bad("%s is a computed-only attribute of the objects of %s: the provider sets it, it cannot be set", k, of)
			case f.Type != cty.DynamicPseudoType && !fv.IsNull():
				if _, err := convert.Convert(fv, f.Type); err != nil {
					bad("%s: Terraform cannot convert %s to %s (%s)", k, describe(fv), f.Type.FriendlyName(), err)
				}
			}
		}
	}
}

// literal evaluates an expression with every variable, resource and function result unknown
// (of any type), so that what is left known is its literal structure. ok is false when it
// cannot be evaluated so (not decidable here, or an error Terraform reports by itself).
func literal(e hclsyntax.Expression) (cty.Value, bool) {
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: map[string]function.Function{}}
	for _, tr := range e.Variables() {
		ctx.Variables[tr.RootName()] = cty.DynamicVal
	}
	_ = hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		if f, ok := n.(*hclsyntax.FunctionCallExpr); ok {
			ctx.Functions[f.Name] = unknownFunc
		}
		return nil
	})
	v, diags := e.Value(ctx)
	return v, !diags.HasErrors()
}

// unknownFunc stands for every function in checkValue: any arguments, a result of unknown type.
var unknownFunc = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "args", Type: cty.DynamicPseudoType, AllowNull: true, AllowUnknown: true, AllowDynamicType: true, AllowMarked: true},
	Type:     function.StaticReturnType(cty.DynamicPseudoType),
	Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
		return cty.DynamicVal, nil
	},
})

// describe names a value's kind for a finding: a string, a number, a list (tuple), an object.
func describe(v cty.Value) string {
	t := v.Type()
	switch {
	case t == cty.String:
		return "a string"
	case t == cty.Number:
		return "a number"
	case t == cty.Bool:
		return "a bool"
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		return "a list"
	case t.IsObjectType() || t.IsMapType():
		return "an object"
	}
	return t.FriendlyName()
}

// source returns the text of a range (cut short when long), for findings.
func (c *checker) source(r hcl.Range) string {
	b := c.src[r.Filename]
	if r.End.Byte > len(b) || r.Start.Byte > r.End.Byte {
		return "…"
	}
	s := strings.Join(strings.Fields(string(b[r.Start.Byte:r.End.Byte])), " ")
	if len(s) > 40 {
		s = s[:37] + "…"
	}
	return s
}

// step is one step of a reference after its root: an attribute's name, or an index or splat.
type step struct {
	name  string // "" for an index or a splat
	splat bool
	r     hcl.Range
}

// chain reads an expression that is a reference with indexes, splats and attributes after it
// (aws_x.name[0].attr, aws_x.name[*].attr, aws_x.name[count.index].attr): its root traversal's
// steps, and the expressions that make it up. ok is false for anything else.
func chain(e hclsyntax.Expression) (steps []step, parts []hclsyntax.Expression, ok bool) {
	switch e := e.(type) {
	case *hclsyntax.ScopeTraversalExpr:
		return traversalSteps(e.Traversal), []hclsyntax.Expression{e}, true
	case *hclsyntax.RelativeTraversalExpr:
		steps, parts, ok = chain(e.Source)
		return append(steps, traversalSteps(e.Traversal)...), append(parts, e), ok
	case *hclsyntax.IndexExpr:
		steps, parts, ok = chain(e.Collection)
		return append(steps, step{r: e.Key.Range()}), append(parts, e), ok
	case *hclsyntax.SplatExpr:
		steps, parts, ok = chain(e.Source)
		steps = append(steps, step{splat: true, r: e.MarkerRange})
		// Each applies to every element: a chain from the splat's anonymous symbol.
		each, eachParts, eachOK := chain(e.Each)
		if eachOK {
			steps, parts = append(steps, each...), append(parts, eachParts...)
		}
		return steps, append(parts, e), ok
	case *hclsyntax.AnonSymbolExpr:
		return nil, []hclsyntax.Expression{e}, true
	}
	return nil, nil, false
}

func traversalSteps(tr hcl.Traversal) []step {
	var out []step
	for _, s := range tr {
		switch s := s.(type) {
		case hcl.TraverseRoot:
			out = append(out, step{name: s.Name, r: s.SrcRange})
		case hcl.TraverseAttr:
			out = append(out, step{name: s.Name, r: s.SrcRange})
		case hcl.TraverseIndex:
			out = append(out, step{r: s.SrcRange})
		case hcl.TraverseSplat:
			out = append(out, step{splat: true, r: s.SrcRange})
		}
	}
	return out
}

// checkRefs checks every reference to a resource or data source of the module's: it is declared
// here, and the attribute path it reads (through indexes and splats, into nested blocks and
// objects) is one its type has; and it is indexed if and only if the resource has count or
// for_each (as Terraform requires, but in moved, import and removed blocks, which name
// instances of the past). It returns how many it checked.
func (c *checker) checkRefs(body *hclsyntax.Body) int {
	n := 0
	for _, b := range body.Blocks {
		past := b.Type == "moved" || b.Type == "import" || b.Type == "removed"
		n += c.checkRefsIn(b, !past)
	}
	return n
}

func (c *checker) checkRefsIn(b *hclsyntax.Block, instances bool) int {
	n := 0
	done := map[hclsyntax.Expression]bool{}
	_ = hclsyntax.VisitAll(b, func(node hclsyntax.Node) hcl.Diagnostics {
		e, ok := node.(hclsyntax.Expression)
		if !ok || done[e] {
			return nil
		}
		steps, parts, ok := chain(e)
		if !ok {
			return nil
		}
		// The outermost expression of a chain is visited first: its parts are not checked again.
		for _, p := range parts {
			done[p] = true
		}
		if c.checkRef(steps, instances) {
			n++
		}
		return nil
	})
	return n
}

// checkRef checks one reference (and its instance key, with instances); it reports whether it
// was one to an AWS resource or data source.
func (c *checker) checkRef(steps []step, instances bool) bool {
	prefix := "resource"
	if len(steps) > 0 && steps[0].name == "data" {
		prefix, steps = "data", steps[1:]
	}
	if len(steps) < 2 || !isAWS(steps[0].name) || steps[1].name == "" {
		return false
	}
	a := addr(prefix, steps[0].name, steps[1].name)
	d, isDeclared := c.declared[a]
	typ := d.typ
	if !isDeclared {
		c.add(steps[0].r, "%s is not declared in this module", a)
		return true
	}
	types := c.s.Resources
	if prefix == "data" {
		types = c.s.DataSources
	}
	sch, ok := types[typ]
	if !ok {
		return true // the type itself is reported where it is declared
	}
	rest := steps[2:]
	switch {
	case instances && d.repeat == "" && len(rest) > 0 && rest[0].name == "" && !rest[0].splat:
		c.add(rest[0].r, "%s has neither count nor for_each: it is one instance, a reference to it takes no index", a)
		return true
	case instances && d.repeat != "" && len(rest) > 0 && rest[0].name != "":
		c.add(rest[0].r, "%s.%s: %s has %s: read the attribute of one instance (%s[…].%s) or of all (%s[*].%s)", a, rest[0].name, a, d.repeat, a, rest[0].name, a, rest[0].name)
		return true
	}
	if len(rest) > 0 && rest[0].name == "" {
		rest = rest[1:] // the instance: [0], ["key"], [*]
	}
	ref := a   // the reference as far as it is read, for findings
	of := typ  // what the block is: aws_lb, aws_lb's subnet_mapping block
	path := "" // the nested block's path
	for len(rest) > 0 {
		s := rest[0]
		if s.name == "" {
			return true // an index into a list, map or set attribute: not decided here
		}
		ref += "." + s.name
		path = strings.TrimPrefix(path+"."+s.name, ".")
		if nb := sch.Blocks[s.name]; nb != nil {
			if nb.Opaque {
				return true
			}
			sch, of = &nb.Block, typ+"'s "+path+" block"
			if !nb.MaxOne && (len(rest) < 2 || rest[1].name != "") {
				if len(rest) >= 2 {
					c.add(rest[1].r, "%s.%s: %s is a list of %s blocks: read one's attribute (%s[0].%s) or all of theirs (%s[*].%s)", ref, rest[1].name, ref, s.name, s.name, rest[1].name, s.name, rest[1].name)
				}
				return true
			}
		} else if at := sch.Attr(s.name); at != nil {
			if at.Object == nil {
				return true // a map's keys, a list's elements: not decided here
			}
			sch, of = at.Object, typ+"'s "+path
		} else {
			c.add(s.r, "%s: %s has no attribute %s in %s%s", ref, of, s.name, c.provider(), suggest(s.name, append(keys(sch.Attrs), keys(sch.Blocks)...)))
			return true
		}
		rest = rest[1:]
		if len(rest) > 0 && rest[0].name == "" {
			ref += "[…]"
			rest = rest[1:] // the block's element: [0], [*]
		}
	}
	return true
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

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string { return keys(m) }
